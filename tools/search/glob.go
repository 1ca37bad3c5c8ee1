package search

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// GlobOptions describes a file-name search.
type GlobOptions struct {
	// Root is the absolute workspace root (ignore files are read from it downwards).
	Root string
	// Path is the directory the pattern is relative to (relative to Root, or absolute inside
	// it). Empty means Root.
	Path string
	// Pattern is a glob in the dialect of Grep's Include/Exclude (ripgrep's): `*`, `?`,
	// `[...]` (`[!x]` or `[^x]` negated), `{a,b}` (not nested), `\` escapes, and `**` as a
	// whole component for any number of directories, e.g. "**/*.go" or "cmd/*/main.go". It is
	// matched against whole paths relative to Path (no implicit "**/", unlike an ignore line).
	Pattern string
	// Hidden includes hidden files and directories. They are also included when the pattern
	// names a dot path itself (a component starting with ".", such as ".github/**" or
	// "**/.env*").
	Hidden bool
	// NoIgnore disregards .gitignore, .ignore, .rgignore and .git/info/exclude.
	NoIgnore bool
	// MaxResults caps the listed files: 0 means DefaultMaxResults, negative no cap.
	MaxResults int
}

// GlobFile is one matching file.
type GlobFile struct {
	// Path is slash-separated and relative to Root.
	Path    string    `json:"path"`
	ModTime time.Time `json:"modTime"`
}

// GlobResult lists matching files, newest first (ties by path).
type GlobResult struct {
	Pattern string     `json:"pattern"`
	Files   []GlobFile `json:"files"`
	// Total is the number of matching files; Omitted how many the cap left out.
	Total   int      `json:"total"`
	Omitted int      `json:"omitted,omitzero"`
	Notes   []string `json:"notes,omitzero"`
}

// Glob lists the regular files matching a pattern (symbolic links are neither followed nor
// listed), honouring ignore files and the hidden rule like Grep.
func Glob(ctx context.Context, opts GlobOptions) (*GlobResult, error) {
	root, err := resolveRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	pat := strings.TrimPrefix(strings.TrimSpace(opts.Pattern), "./")
	pat = strings.TrimSuffix(pat, "/")
	switch {
	case pat == "":
		return nil, invalidArgs("pattern is empty")
	case strings.HasPrefix(pat, "/"):
		return nil, invalidArgs("pattern %q must be relative (it is matched against paths relative to the search path)", opts.Pattern)
	}
	if _, err := compilePattern(pat); err != nil {
		return nil, invalidArgs("invalid glob pattern %q: %v", opts.Pattern, err)
	}
	segs := strings.Split(pat, "/")
	for _, s := range segs {
		if s == ".." || s == "." {
			return nil, invalidArgs("pattern %q must not contain '.' or '..' components", opts.Pattern)
		}
	}
	if opts.MaxResults == 0 {
		opts.MaxResults = DefaultMaxResults
	}
	targets, err := resolveTargets(root, []string{opts.Path}, true, nil) // "" is the root
	if err != nil {
		return nil, err
	}
	base := targets[0]
	// Start the walk at the literal directory prefix of the pattern.
	start := base
	lit := 0
	for lit < len(segs)-1 && !hasGlobMeta(segs[lit]) {
		lit++
	}
	rest := strings.Join(segs[lit:], "/")
	matcher, err := compilePattern(rest)
	if err != nil {
		return nil, invalidArgs("invalid glob pattern %q: %v", opts.Pattern, err)
	}
	if lit > 0 {
		startRel := path.Join(base.rel, strings.Join(segs[:lit], "/"))
		ts, err := resolveTargets(root, []string{filepath.FromSlash(startRel)}, true, nil)
		if err != nil {
			// a missing directory simply has no matches
			return &GlobResult{Pattern: opts.Pattern, Files: []GlobFile{}}, nil
		}
		start = ts[0]
	}
	hidden := opts.Hidden || namesDotPath(pat)
	s := &scope{root: root, targets: []target{start}, filter: filter{noIgnore: opts.NoIgnore, hidden: hidden}}
	s.adjustForTargets()
	w := &walker{root: root, filter: &s.filter}
	if !strings.Contains(rest, "**") {
		if n := maxSegments(rest); n > 0 {
			w.maxDepth = len(start.comps) + n
		}
	}
	var mu sync.Mutex
	var files []GlobFile
	prefix := ""
	if start.rel != "" {
		prefix = start.rel + "/"
	}
	w.visit = func(_ int, abs, rel string) {
		if !matcher.match(splitRel(strings.TrimPrefix(rel, prefix))) {
			return
		}
		fi, err := os.Lstat(abs)
		if err != nil {
			return
		}
		mu.Lock()
		files = append(files, GlobFile{Path: rel, ModTime: fi.ModTime()})
		mu.Unlock()
	}
	if err := w.run(ctx, s, []target{start}); err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b GlobFile) int {
		if c := b.ModTime.Compare(a.ModTime); c != 0 {
			return c
		}
		return cmp.Compare(a.Path, b.Path)
	})
	res := &GlobResult{Pattern: opts.Pattern, Total: len(files), Notes: s.notes}
	if opts.MaxResults >= 0 && len(files) > opts.MaxResults {
		res.Omitted = len(files) - opts.MaxResults
		files = files[:opts.MaxResults]
	}
	if files == nil {
		files = []GlobFile{}
	}
	res.Files = files
	return res, nil
}

// compilePattern compiles a Glob pattern: its brace alternatives, each split into components
// (the machinery of ignore.go, without the ignore-file line syntax).
func compilePattern(pat string) (*rule, error) {
	alts, err := expandBraces(pat)
	if err != nil {
		return nil, err
	}
	r := &rule{line: pat}
	for _, a := range alts {
		g, err := compileGlob(a)
		if err != nil {
			return nil, err
		}
		r.alts = append(r.alts, g)
	}
	return r, nil
}

// splitRel splits a slash path into a relPath.
func splitRel(p string) relPath {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return relPath{last: p}
	}
	return relPath{pre: strings.Split(p[:i], "/"), last: p[i+1:]}
}

func hasGlobMeta(s string) bool { return strings.ContainsAny(s, `*?[]{}\`) }

// namesDotPath reports whether a pattern component (or a brace alternative) starts with ".".
func namesDotPath(pat string) bool {
	for _, seg := range strings.Split(pat, "/") {
		if strings.HasPrefix(seg, ".") || strings.Contains(seg, "{.") || strings.Contains(seg, ",.") {
			return true
		}
	}
	return false
}

// maxSegments is the largest number of components a path matching pat (without **) can have.
func maxSegments(pat string) int {
	alts, err := expandBraces(pat)
	if err != nil {
		return 0
	}
	n := 0
	for _, a := range alts {
		n = max(n, strings.Count(a, "/")+1)
	}
	return n
}

// Render returns the model-facing list: one Root-relative path per line, newest first.
func (r *GlobResult) Render() string {
	var b strings.Builder
	for _, f := range r.Files {
		b.WriteString(f.Path)
		b.WriteByte('\n')
	}
	if r.Total == 0 {
		fmt.Fprintf(&b, "No files match %q.\n", r.Pattern)
	}
	if r.Omitted > 0 {
		fmt.Fprintf(&b, "(%s not shown; %s in total. Use a more specific pattern or path.)\n", plural(r.Omitted, "more file"), plural(r.Total, "matching file"))
	}
	for _, n := range r.Notes {
		b.WriteString("Note: " + n + ".\n")
	}
	return b.String()
}

// Text is Render.
func (r *GlobResult) Text() string { return r.Render() }
