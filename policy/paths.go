package policy

import (
	"path"
	"path/filepath"
	"strings"
)

// Built-in protected names (write-protected; case-folded). See notes/security.md: these are the
// files through which a workspace configures tools that run code (git hooks and config, editor
// settings, shell rc files, direnv, MCP servers) and agentd itself.
var (
	protectedDirs  = set(".git", ".agentd", ".vscode", ".idea")
	protectedFiles = set(".nvim.lua", ".nvimrc", ".exrc", ".envrc", ".gitmodules", ".mcp.json",
		".gitconfig", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
		".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc",
		".inputrc")
)

// Built-in sensitive names (reading them asks; case-folded).
var (
	sensitiveDirs  = set(".ssh", ".gnupg", ".aws")
	sensitiveFiles = set(".netrc", "_netrc", ".npmrc", ".pypirc", ".git-credentials", ".pgpass",
		"credentials", ".htpasswd", "environ")
	sensitivePrefixes = []string{".env", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"}
	sensitiveExts     = []string{".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx"}
)

func components(p string) []string {
	p = filepath.ToSlash(p)
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, strings.ToLower(c))
		}
	}
	return out
}

// isProtectedPath reports whether a path (absolute or relative) names or lies inside a
// write-protected location.
func isProtectedPath(p string) bool {
	cs := components(p)
	for _, c := range cs {
		if protectedDirs[c] {
			return true
		}
	}
	return len(cs) > 0 && protectedFiles[cs[len(cs)-1]]
}

// isSensitivePath reports whether a path looks like a secret.
func isSensitivePath(p string) bool {
	cs := components(p)
	if len(cs) == 0 {
		return false
	}
	for _, c := range cs[:len(cs)-1] {
		if sensitiveDirs[c] {
			return true
		}
	}
	base := cs[len(cs)-1]
	if sensitiveFiles[base] || sensitiveDirs[base] {
		return true
	}
	for _, pre := range sensitivePrefixes {
		if base == pre || strings.HasPrefix(base, pre+".") || (pre != ".env" && strings.HasPrefix(base, pre)) {
			return true
		}
	}
	for _, ext := range sensitiveExts {
		if strings.HasSuffix(base, ext) {
			return true
		}
	}
	return false
}

// pathPattern is a user pattern from a protect or sensitive line: path components matched with
// path.Match, case-folded. A relative pattern matches anywhere in a path (".secrets" matches
// /ws/a/.secrets/x); a pattern starting with "/" matches from the root.
type pathPattern struct {
	raw      string
	anchored bool
	parts    []string
}

func newPathPattern(s string) (pathPattern, error) {
	p := pathPattern{raw: s, anchored: strings.HasPrefix(s, "/"), parts: components(s)}
	for _, part := range p.parts {
		if _, err := path.Match(part, ""); err != nil {
			return p, err
		}
	}
	if len(p.parts) == 0 {
		return p, errEmptyPattern
	}
	return p, nil
}

// matches reports whether the pattern matches the path or one of its parents.
func (p pathPattern) matches(target string) bool {
	cs := components(target)
	last := len(cs) - len(p.parts)
	if p.anchored && last > 0 {
		last = 0
	}
	for start := 0; start <= last; start++ {
		ok := true
		for i, part := range p.parts {
			if m, _ := path.Match(part, cs[start+i]); !m {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// within reports whether p is dir or lies inside it, by whole path components: /ws/src covers
// /ws/src/a but not /ws/src2. Both must be clean absolute paths.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}
