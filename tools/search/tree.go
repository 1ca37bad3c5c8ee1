package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Defaults for Tree.
const (
	DefaultTreeDepth      = 2
	DefaultTreeMaxEntries = 400
	DefaultTreeMaxPerDir  = 50
)

// TreeOptions describes a directory listing.
type TreeOptions struct {
	// Root is the absolute workspace root (ignore files are read from it downwards).
	Root string
	// Path is the directory to list (relative to Root, or absolute inside it). Empty is Root.
	Path string
	// Depth is how many levels below Path are listed (1: its entries only). 0 means
	// DefaultTreeDepth.
	Depth int
	// MaxEntries caps the entries listed in total (breadth first: shallow entries win);
	// MaxPerDir caps the entries listed per directory. 0 means the defaults, negative no cap.
	MaxEntries int
	MaxPerDir  int
	// NoIgnore lists what ignore files exclude too (.git is never listed).
	NoIgnore bool
	// SkipHidden leaves out hidden entries (names starting with "."), which are listed by
	// default.
	SkipHidden bool
}

// TreeEntry is one listed file or directory.
type TreeEntry struct {
	Name string `json:"name"`
	Dir  bool   `json:"dir,omitzero"`
	// Link is the target of a symbolic link (links are listed, never followed).
	Link string `json:"link,omitzero"`
	// Expanded is set for directories whose entries are listed in Children.
	Expanded bool         `json:"expanded,omitzero"`
	Children []*TreeEntry `json:"children,omitzero"`
	// Entries is the number of (visible) entries of a directory, listed or not; -1 when
	// unknown (unreadable).
	Entries int `json:"entries,omitzero"`
	// OmittedDirs and OmittedFiles count the entries of an expanded directory not listed
	// because of the caps.
	OmittedDirs  int `json:"omittedDirs,omitzero"`
	OmittedFiles int `json:"omittedFiles,omitzero"`
}

// TreeResult is a directory tree.
type TreeResult struct {
	// Path is the listed directory, Root-relative ("" for Root).
	Path string     `json:"path"`
	Top  *TreeEntry `json:"top"`
	// Shown and Omitted count listed entries and entries left out by the caps.
	Shown      int      `json:"shown"`
	Omitted    int      `json:"omitted,omitzero"`
	Depth      int      `json:"depth"`
	MaxEntries int      `json:"maxEntries"`
	MaxPerDir  int      `json:"maxPerDir"`
	Notes      []string `json:"notes,omitzero"`
}

type treeItem struct {
	e     *TreeEntry
	abs   string
	comps []string
	lv    *level // ignore state of the parent directory
	depth int
}

// Tree lists a directory breadth first to opts.Depth levels: directories first, then files,
// each sorted by name; entries excluded by ignore files and .git are left out.
func Tree(ctx context.Context, opts TreeOptions) (*TreeResult, error) {
	root, err := resolveRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	if opts.Depth < 0 {
		return nil, invalidArgs("depth must not be negative")
	}
	if opts.Depth == 0 {
		opts.Depth = DefaultTreeDepth
	}
	if opts.MaxEntries == 0 {
		opts.MaxEntries = DefaultTreeMaxEntries
	}
	if opts.MaxPerDir == 0 {
		opts.MaxPerDir = DefaultTreeMaxPerDir
	}
	targets, err := resolveTargets(root, []string{opts.Path}, true, nil) // "" is the root
	if err != nil {
		return nil, err
	}
	t := targets[0]
	s := &scope{root: root, targets: targets, filter: filter{noIgnore: opts.NoIgnore, hidden: !opts.SkipHidden}}
	s.adjustForTargets()
	name := filepath.Base(root)
	if t.rel != "" {
		name = t.rel
	}
	top := &TreeEntry{Name: name, Dir: true}
	res := &TreeResult{Path: t.rel, Top: top, Depth: opts.Depth, MaxEntries: opts.MaxEntries, MaxPerDir: opts.MaxPerDir, Notes: s.notes}
	var parentLv *level
	if len(t.comps) > 0 {
		parentLv = s.dirLevel(t.comps[:len(t.comps)-1])
	}
	budget := opts.MaxEntries
	queue := []treeItem{{e: top, abs: t.abs, comps: t.comps, lv: parentLv, depth: 0}}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		it := queue[0]
		queue = queue[1:]
		kids, lv := s.readTreeDir(it)
		it.e.Entries = len(kids)
		if kids == nil {
			it.e.Entries = -1
			kids = []*TreeEntry{}
		}
		if it.depth >= opts.Depth {
			continue
		}
		it.e.Expanded = true
		n := len(kids)
		if opts.MaxPerDir >= 0 {
			n = min(n, opts.MaxPerDir)
		}
		if opts.MaxEntries >= 0 {
			n = min(n, budget)
		}
		for _, k := range kids[n:] {
			if k.Dir {
				it.e.OmittedDirs++
			} else {
				it.e.OmittedFiles++
			}
		}
		res.Omitted += len(kids) - n
		kids = kids[:n]
		budget -= n
		res.Shown += n
		it.e.Children = kids
		for _, k := range kids {
			if k.Dir {
				comps := append(append([]string(nil), it.comps...), k.Name)
				queue = append(queue, treeItem{e: k, abs: filepath.Join(it.abs, k.Name), comps: comps, lv: lv, depth: it.depth + 1})
			}
		}
	}
	return res, nil
}

// readTreeDir returns the visible entries of a directory, sorted (directories first), and the
// directory's ignore state. nil means unreadable.
func (s *scope) readTreeDir(it treeItem) ([]*TreeEntry, *level) {
	f, err := os.Open(it.abs)
	if err != nil {
		return nil, it.lv
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil && len(ents) == 0 {
		return nil, it.lv
	}
	lv := it.lv
	if !s.filter.noIgnore {
		lv = levelFor(it.lv, s.root, it.abs, len(it.comps), ents)
	}
	kids := []*TreeEntry{}
	for _, e := range ents {
		isDir := e.Type().IsDir()
		if !s.filter.accept(lv, relPath{pre: it.comps, last: e.Name()}, isDir) {
			continue
		}
		k := &TreeEntry{Name: e.Name(), Dir: isDir}
		if e.Type()&os.ModeSymlink != 0 {
			k.Link, _ = os.Readlink(filepath.Join(it.abs, e.Name()))
			if k.Link == "" {
				k.Link = "?"
			}
		}
		kids = append(kids, k)
	}
	slices.SortFunc(kids, func(a, b *TreeEntry) int {
		if a.Dir != b.Dir {
			if a.Dir {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return kids, lv
}

// Render returns an indented tree (two spaces per level, directories end with "/", symbolic
// links show "-> target"); unexpanded directories show their entry count.
func (r *TreeResult) Render() string {
	var b strings.Builder
	b.WriteString(r.Top.Name)
	b.WriteString("/\n")
	var walk func(e *TreeEntry, indent string)
	walk = func(e *TreeEntry, indent string) {
		for _, k := range e.Children {
			b.WriteString(indent)
			b.WriteString(k.Name)
			switch {
			case k.Link != "":
				b.WriteString(" -> " + k.Link)
			case k.Dir:
				b.WriteByte('/')
				if !k.Expanded {
					switch k.Entries {
					case 0:
						b.WriteString(" (empty)")
					case -1:
						b.WriteString(" (unreadable)")
					case 1:
						b.WriteString(" (1 entry)")
					default:
						fmt.Fprintf(&b, " (%d entries)", k.Entries)
					}
				}
			}
			b.WriteByte('\n')
			if k.Expanded {
				walk(k, indent+"  ")
			}
		}
		if n := e.OmittedDirs + e.OmittedFiles; n > 0 {
			fmt.Fprintf(&b, "%s… %d more (%s)\n", indent, n, dirsFiles(e.OmittedDirs, e.OmittedFiles))
		}
	}
	walk(r.Top, "  ")
	if r.Top.Entries == 0 {
		b.WriteString("  (empty)\n")
	}
	if r.Omitted > 0 {
		entries := fmt.Sprintf("%d entries", r.Omitted)
		if r.Omitted == 1 {
			entries = "1 entry"
		}
		fmt.Fprintf(&b, "(%s not shown: at most %d per directory and %d in total. List a subdirectory to see more.)\n",
			entries, r.MaxPerDir, r.MaxEntries)
	}
	for _, n := range r.Notes {
		b.WriteString("Note: " + n + ".\n")
	}
	return b.String()
}

// Text is Render.
func (r *TreeResult) Text() string { return r.Render() }

func dirsFiles(d, f int) string {
	switch {
	case d == 0:
		return plural(f, "file")
	case f == 0:
		return plural(d, "dir")
	}
	return plural(d, "dir") + ", " + plural(f, "file")
}
