package policy

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/tools/fsafe"
)

// isProtectedPath reports whether a path (absolute or relative) names or lies inside a
// write-protected location. The list is the file-safety layer's (fsafe.Classify): one list for the
// file tools, the sandbox and the policy.
func isProtectedPath(p string) bool {
	protected, _, _ := fsafe.Classify(filepath.ToSlash(p))
	return protected
}

// components splits a path into lower-cased components, without empty and "." ones.
func components(p string) []string {
	var out []string
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if c != "" && c != "." {
			out = append(out, strings.ToLower(c))
		}
	}
	return out
}

// isSensitivePath reports whether a path looks like a secret (fsafe.Classify).
func isSensitivePath(p string) bool {
	_, sensitive, _ := fsafe.Classify(filepath.ToSlash(p))
	return sensitive
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
