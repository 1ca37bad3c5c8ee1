package fsafe

import (
	"io"
	"path"
	"regexp"
	"strings"
)

// Git configuration can hold credentials: a token or password in a remote URL
// (`url = https://user:token@host/…`, also as the key of `[url "https://token@host/"]` for
// insteadOf), or an `http.extraHeader = Authorization: …` (what CI checkouts write). Such a file is
// as sensitive as .netrc while it holds one, and only then: reading a remote's name or a branch's
// upstream needs no approval. (The credential helpers' own stores — ~/.git-credentials,
// ~/.config/git/credentials — are sensitive by name.)

// GitConfigName reports whether the canonical relative path rel names a git configuration file:
// config or config.worktree inside a .git directory (at any depth: worktrees, submodules'
// modules/…), .gitmodules, .gitconfig, or .config/git/config. A bare repository's config is found
// by its shape, not its name (Path.Permission looks for the HEAD beside it).
func GitConfigName(rel string) bool {
	lower := strings.ToLower(strings.Trim(path.Clean("/"+rel), "/"))
	comps := strings.Split(lower, "/")
	base := comps[len(comps)-1]
	switch base {
	case ".gitmodules", ".gitconfig":
		return true
	case "config", "config.worktree":
		for _, c := range comps[:len(comps)-1] {
			if c == ".git" {
				return true
			}
		}
		return base == "config" && len(comps) >= 3 && comps[len(comps)-3] == ".config" && comps[len(comps)-2] == "git"
	}
	return false
}

// credentialURL matches a URL's scheme and user information: group 1 the scheme and "//",
// group 2 the user information (without the "@").
var credentialURL = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)([^/\s@"'<>\[\]]+)@`)

// extraHeader matches an http.extraHeader (or http.<url>.extraHeader) line's value.
var extraHeader = regexp.MustCompile(`(?im)^(\s*extraheader\s*=\s*)(\S.*)$`)

// Redacted replaces a credential in git configuration text.
const Redacted = "REDACTED"

// RedactGitCredentials returns b with every credential replaced by Redacted: the user
// information of http, https and ftp URLs (a token alone is often the user name), and of any
// URL when it holds a password (ssh://git@host keeps its "git"); the values of extraHeader
// lines. found says whether anything was replaced.
func RedactGitCredentials(b []byte) (out []byte, found bool) {
	out = credentialURL.ReplaceAllFunc(b, func(m []byte) []byte {
		sub := credentialURL.FindSubmatch(m)
		scheme := strings.ToLower(strings.TrimSuffix(string(sub[1]), "://"))
		switch {
		case scheme == "http" || scheme == "https" || scheme == "ftp" || scheme == "ftps",
			strings.Contains(string(sub[2]), ":"):
			found = true
			return []byte(string(sub[1]) + Redacted + "@")
		}
		return m
	})
	out = extraHeader.ReplaceAllFunc(out, func(m []byte) []byte {
		sub := extraHeader.FindSubmatch(m)
		if string(sub[2]) == Redacted {
			return m
		}
		found = true
		return []byte(string(sub[1]) + Redacted)
	})
	return out, found
}

// maxGitConfig is how much of a git configuration file is looked at for credentials.
const maxGitConfig = 1 << 20

// gitConfig reports whether p is a git configuration file: by its name (GitConfigName), or a
// bare repository's config (a HEAD beside it). It looks through the root.
func (p Path) gitConfig() bool {
	if p.root == nil {
		return false
	}
	if GitConfigName(p.rel) {
		return true
	}
	if path.Base(p.rel) != "config" {
		return false
	}
	st, err := p.root.r.Lstat(path.Join(path.Dir(p.rel), "HEAD"))
	return err == nil && st.Mode().IsRegular()
}

// gitCredentials reports whether p is a git configuration file that holds a credential. It reads
// through the root.
func (p Path) gitCredentials() bool {
	if !p.info.Mode.IsRegular() || !p.gitConfig() {
		return false
	}
	f, err := p.root.r.Open(p.rel)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxGitConfig))
	if err != nil {
		return false
	}
	_, found := RedactGitCredentials(b)
	return found
}
