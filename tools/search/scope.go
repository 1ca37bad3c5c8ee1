package search

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentd/agentd/tools"
)

func invalidArgs(format string, args ...any) error {
	return tools.Errorf(tools.InvalidArgs, format, args...)
}

// target is one path to search, below Root.
type target struct {
	rel   string   // slash-separated, relative to Root; "" is Root itself
	comps []string // rel split into components
	isDir bool
	abs   string
}

// scope is a resolved search request: Root, the targets and the effective filter.
type scope struct {
	root    string
	targets []target
	filter  filter
	notes   []string
	levels  map[string]*level // ignore state per directory (Root-relative), built lazily
}

// resolveRoot checks that root is an absolute directory.
func resolveRoot(root string) (string, error) {
	if root == "" {
		return "", invalidArgs("root is required")
	}
	if !filepath.IsAbs(root) {
		return "", invalidArgs("root %q is not an absolute path", root)
	}
	root = filepath.Clean(root)
	fi, err := os.Stat(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", tools.Errorf(tools.NotFound, "root %s does not exist", root)
		}
		return "", tools.Errorf(tools.IOError, "root %s: %v", root, err)
	}
	if !fi.IsDir() {
		return "", invalidArgs("root %s is not a directory", root)
	}
	return root, nil
}

// resolveTargets turns the requested paths (relative to root, or absolute inside it) into
// targets. Symbolic links are never followed below Root, not even when named, so that both
// engines see the same tree.
//
// virtual, when not nil, reports paths that exist only as unsaved editor documents: such a
// path is accepted as a file target even though it is not on disk.
func resolveTargets(root string, paths []string, wantDirs bool, virtual func(abs string) bool) ([]target, error) {
	if len(paths) == 0 {
		paths = []string{""}
	}
	var ts []target
	for _, p := range paths {
		abs := p
		if !filepath.IsAbs(p) {
			abs = filepath.Join(root, p)
		}
		abs = filepath.Clean(abs)
		rel, err := filepath.Rel(root, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, invalidArgs("path %q is outside the root %s", p, root)
		}
		t := target{abs: abs, isDir: true}
		if rel != "." {
			t.rel = filepath.ToSlash(rel)
			t.comps = strings.Split(t.rel, "/")
			for _, c := range t.comps {
				if c == ".git" {
					return nil, invalidArgs("path %q: .git directories are never searched", p)
				}
			}
			// Walk the components with Lstat: a symlink anywhere below Root is not followed.
			cur := root
			for i, c := range t.comps {
				cur = filepath.Join(cur, c)
				fi, err := os.Lstat(cur)
				if err != nil {
					if errors.Is(err, fs.ErrNotExist) && virtual != nil && virtual(abs) {
						t.isDir = false
						break
					}
					if errors.Is(err, fs.ErrNotExist) {
						return nil, tools.Errorf(tools.NotFound, "path %q does not exist", p)
					}
					return nil, tools.Errorf(tools.IOError, "path %q: %v", p, err)
				}
				if fi.Mode()&fs.ModeSymlink != 0 {
					msg := "path %q is (or is inside) a symbolic link, and symbolic links are not followed"
					if dst, err := filepath.EvalSymlinks(cur); err == nil {
						if r, err := filepath.Rel(root, dst); err == nil && !strings.HasPrefix(r, "..") {
							return nil, invalidArgs(msg+"; search its target %q instead", p, filepath.ToSlash(filepath.Join(r, filepath.Join(t.comps[i+1:]...))))
						}
					}
					return nil, invalidArgs(msg, p)
				}
				if i == len(t.comps)-1 {
					switch {
					case fi.IsDir():
					case fi.Mode().IsRegular():
						if wantDirs {
							return nil, invalidArgs("path %q is a file, not a directory", p)
						}
						t.isDir = false
					default:
						return nil, invalidArgs("path %q is not a regular file or directory", p)
					}
				} else if !fi.IsDir() {
					return nil, tools.Errorf(tools.NotFound, "path %q does not exist", p)
				}
			}
		}
		ts = append(ts, t)
	}
	// Drop duplicates and targets inside another target.
	sort.Slice(ts, func(i, j int) bool { return ts[i].rel < ts[j].rel })
	var out []target
	for _, t := range ts {
		covered := false
		for _, o := range out {
			if o.isDir && (o.rel == "" || t.rel == o.rel || strings.HasPrefix(t.rel, o.rel+"/")) {
				covered = true
				break
			}
			if t.rel == o.rel {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, t)
		}
	}
	return out, nil
}

// dirLevel returns the ignore state of the Root-relative directory rel (its own ignore files
// included), reading ignore files from disk along the way and caching the result.
func (s *scope) dirLevel(comps []string) *level {
	if s.filter.noIgnore {
		return nil
	}
	if s.levels == nil {
		s.levels = map[string]*level{}
	}
	key := strings.Join(comps, "/")
	if lv, ok := s.levels[key]; ok {
		return lv
	}
	var parent *level
	if len(comps) > 0 {
		parent = s.dirLevel(comps[:len(comps)-1])
	}
	abs := filepath.Join(s.root, filepath.FromSlash(key))
	var has [numKinds]bool
	for kind := kindRgignore; kind <= kindGitignore; kind++ {
		_, err := os.Lstat(filepath.Join(abs, ignoreFileNames[kind]))
		has[kind] = err == nil
	}
	_, err := os.Lstat(filepath.Join(abs, ".git"))
	lv := newLevel(parent, s.root, abs, len(comps), has, err == nil)
	s.levels[key] = lv
	return lv
}

// pathAccepted reports whether every component of comps (the last one a file unless isDir) is
// visited by a walk from Root with filter f.
func (s *scope) pathAccepted(f *filter, comps []string, isDir bool) bool {
	saved := s.filter
	s.filter = *f
	defer func() { s.filter = saved }()
	for i, c := range comps {
		dir := i < len(comps)-1 || isDir
		lv := s.dirLevel(comps[:i])
		if !f.accept(lv, relPath{pre: comps[:i], last: c}, dir) {
			return false
		}
	}
	return true
}

// adjustForTargets makes a named path searchable when it is itself hidden or ignored: the
// search then includes hidden files and/or disregards ignore files (noted in the result).
func (s *scope) adjustForTargets() {
	for _, t := range s.targets {
		if len(t.comps) == 0 || s.pathAccepted(&s.filter, t.comps, t.isDir) {
			continue
		}
		f := s.filter
		f.hidden = true
		if !s.filter.hidden && s.pathAccepted(&f, t.comps, t.isDir) {
			s.filter.hidden = true
			s.notes = append(s.notes, "path "+t.rel+" is hidden: hidden files were included")
			continue
		}
		f = s.filter
		f.noIgnore = true
		if !s.filter.noIgnore && s.pathAccepted(&f, t.comps, t.isDir) {
			s.filter.noIgnore = true
			s.notes = append(s.notes, "path "+t.rel+" is ignored (.gitignore or similar): ignore files were disregarded")
			continue
		}
		f.hidden = true
		if s.pathAccepted(&f, t.comps, t.isDir) {
			s.filter.noIgnore, s.filter.hidden = true, true
			s.notes = append(s.notes, "path "+t.rel+" is hidden and ignored: hidden and ignored files were included")
			continue
		}
		s.notes = append(s.notes, "path "+t.rel+" is excluded by the include/exclude globs")
	}
}

// inScope reports whether the Root-relative path rel lies in one of the targets.
func (s *scope) inScope(rel string) bool {
	for _, t := range s.targets {
		if t.rel == "" || rel == t.rel || (t.isDir && strings.HasPrefix(rel, t.rel+"/")) {
			return true
		}
	}
	return false
}

// siblingExcludes returns the -g exclusions that restrict a ripgrep walk from Root to the
// targets: at every directory on the way to a target, each entry that leads to no target.
func (s *scope) siblingExcludes() []string {
	if len(s.targets) == 1 && s.targets[0].rel == "" {
		return nil
	}
	type node struct {
		children map[string]*node
		terminal bool
	}
	rootNode := &node{children: map[string]*node{}}
	for _, t := range s.targets {
		n := rootNode
		for _, c := range t.comps {
			if n.terminal {
				break
			}
			next := n.children[c]
			if next == nil {
				next = &node{children: map[string]*node{}}
				n.children[c] = next
			}
			n = next
		}
		n.terminal = true
		n.children = map[string]*node{}
	}
	var out []string
	var visit func(n *node, comps []string)
	visit = func(n *node, comps []string) {
		if n.terminal {
			return
		}
		dir := filepath.Join(s.root, filepath.Join(comps...))
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			rel := strings.Join(append(append([]string(nil), comps...), e.Name()), "/")
			if child, ok := n.children[e.Name()]; ok {
				visit(child, append(append([]string(nil), comps...), e.Name()))
				continue
			}
			out = append(out, "!"+escapeGlobLiteral(rel))
		}
	}
	visit(rootNode, nil)
	return out
}
