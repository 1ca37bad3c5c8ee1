package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/tools/fsafe"
)

// Git configuration files that hold a credential (a token in a remote URL or an insteadOf key,
// an http.extraHeader: fsafe.RedactGitCredentials) are shown to commands with the credentials
// redacted: bubblewrap binds a redacted copy, read-only, over each (git works as before, without
// the token); Landlock cannot change what a file reads, so there such a file is one of the
// sensitive files not masked, and commands ask. Looked at, at each command start: the workspace
// roots' git directories (a .git directory, or the one a .git file names, and its common
// directory) — config, config.worktree, modules/**/config, worktrees/*/config.worktree — and the
// user's global configuration (~/.gitconfig, $XDG_CONFIG_HOME/git/config).

// credFile is a git configuration file holding a credential.
type credFile struct {
	path     string // canonical
	rel      string // for messages: relative to its root, or ~/…
	redacted []byte
}

// maxCredFile is how much of a git configuration is read; a larger file is taken whole as it is
// (git configurations are small).
const maxCredFile = 1 << 20

// gitCredentialFiles returns the git configuration files of roots and of the user that hold a
// credential, each with its redacted content.
func (p Policy) gitCredentialFiles(roots []string) []credFile {
	var out []credFile
	seen := map[string]bool{}
	add := func(path, rel string) {
		real, err := filepath.EvalSymlinks(path)
		if err != nil || seen[real] {
			return
		}
		seen[real] = true
		fi, err := os.Stat(real)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxCredFile {
			return
		}
		f, err := os.Open(real)
		if err != nil {
			return
		}
		b, err := io.ReadAll(io.LimitReader(f, maxCredFile))
		f.Close()
		if err != nil {
			return
		}
		if red, found := fsafe.RedactGitCredentials(b); found {
			out = append(out, credFile{path: real, rel: rel, redacted: red})
		}
	}
	for _, root := range roots {
		for _, gd := range gitDirs(root) {
			for _, f := range gitConfigFiles(gd) {
				rel := f
				if r, err := filepath.Rel(root, f); err == nil && !strings.HasPrefix(r, "..") {
					rel = r
				}
				add(f, rel)
			}
		}
	}
	if home := p.home(); filepath.IsAbs(home) {
		add(filepath.Join(home, ".gitconfig"), "~/.gitconfig")
		base := p.Env
		if base == nil {
			base = os.Environ()
		}
		xdg := lookupEnv(base, "XDG_CONFIG_HOME")
		if !filepath.IsAbs(xdg) {
			xdg = filepath.Join(home, ".config")
		}
		add(filepath.Join(xdg, "git", "config"), "~/.config/git/config")
	}
	return out
}

// credentialEntries are the git configurations holding a credential, as sensitive files that
// ModeLandlock cannot mask (the command then asks).
func (p Policy) credentialEntries(roots []string) []sensitiveEntry {
	var out []sensitiveEntry
	for _, c := range p.gitCredentialFiles(roots) {
		out = append(out, sensitiveEntry{path: c.path, rel: c.rel})
	}
	return out
}

// gitDirs returns root's git directory: root/.git, or the directory a .git file names (gitdir:
// …), with its common directory (a worktree's main repository).
func gitDirs(root string) []string {
	dot := filepath.Join(root, ".git")
	fi, err := os.Lstat(dot)
	if err != nil {
		return nil
	}
	if fi.IsDir() {
		return []string{dot}
	}
	b, err := os.ReadFile(dot)
	if err != nil {
		return nil
	}
	gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return nil
	}
	gd = strings.TrimSpace(gd)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(root, gd)
	}
	dirs := []string{gd}
	if c, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
		cd := strings.TrimSpace(string(c))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(gd, cd)
		}
		dirs = append(dirs, filepath.Clean(cd))
	}
	return dirs
}

// gitConfigFiles lists the configuration files of git directory gd: config, config.worktree,
// those of worktrees/*, and of modules/** (submodules' git directories), a few levels deep.
func gitConfigFiles(gd string) []string {
	out := []string{filepath.Join(gd, "config"), filepath.Join(gd, "config.worktree")}
	if ents, err := os.ReadDir(filepath.Join(gd, "worktrees")); err == nil {
		for _, e := range ents {
			out = append(out, filepath.Join(gd, "worktrees", e.Name(), "config.worktree"))
		}
	}
	var modules func(dir string, depth int)
	modules = func(dir string, depth int) {
		ents, err := os.ReadDir(dir)
		if err != nil || depth > 4 {
			return
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			sub := filepath.Join(dir, e.Name())
			out = append(out, filepath.Join(sub, "config"))
			modules(filepath.Join(sub, "modules"), depth+1)
			modules(sub, depth+1) // a submodule named a/b lives in modules/a/b
		}
	}
	modules(filepath.Join(gd, "modules"), 0)
	return out
}

// redactedCopies writes each file's redacted content to a new private directory, for bubblewrap
// to bind over the original (read-only); release removes it. The directory is outside every
// directory commands may write (the host's temporary directory, which a sandbox does not see).
func redactedCopies(files []credFile) (srcs []string, release func(), err error) {
	if len(files) == 0 {
		return nil, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "agentd-redacted-")
	if err != nil {
		return nil, nil, err
	}
	release = func() { os.RemoveAll(dir) }
	for i, f := range files {
		src := filepath.Join(dir, fmt.Sprintf("%d-%s", i, filepath.Base(f.path)))
		if err := os.WriteFile(src, f.redacted, 0o444); err != nil {
			release()
			return nil, nil, err
		}
		srcs = append(srcs, src)
	}
	return srcs, release, nil
}
