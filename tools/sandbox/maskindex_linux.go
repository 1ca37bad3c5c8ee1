//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/tools/fsafe"
)

// The sensitive files of a workspace (the ones a bubblewrap command gets masked) are found by a
// walk of the workspace, which costs a directory opened and statted per directory: seconds in a
// workspace of 100,000 directories, at every command. The mask index keeps, for the life of the
// process (the daemon: every session on a workspace), a tree of the directories the first walk
// listed and an inotify watch on each: the next walk visits only the directories that had an
// event (and the ones above them), so a directory that did not change costs no system call.
// Hard links to sensitive files are found from the same listings (see find).
//
// It fails closed. A listing is reused without a look only while inotify vouches for it: its
// watch was placed before the directory was read, the watch is still there, no event arrived for
// it, the event queue never overflowed since, and the process's mount table did not change
// (poll on /proc/self/mountinfo: a mount over a workspace directory changes what its path shows
// without an inotify event). Anything else — no inotify, the watch budget spent, a file system
// whose changes inotify does not see (network and FUSE file systems: only local ones are
// watched), an overflow, a mount change — falls back to revalidating that directory by its
// inode, mtime and ctime (which any change to its entries updates and no system call can set
// back), and to listing it again if they differ or if the directory changed too recently for its
// timestamps to tell (racyWindow). A directory that had an event is always listed again.

// sensitiveEntry is a sensitive path found below a workspace root.
type sensitiveEntry struct {
	path string // absolute: the name found (a symlink is resolved to its target)
	rel  string // relative to its root, for messages
	dir  bool
}

// rawSensitive is a sensitive name the walk found, before approvals and symlinks are applied.
type rawSensitive struct {
	abs, rel     string
	dir, symlink bool
}

// listedDir is a directory the walk listed: its entries and what identified its state.
type listedDir struct {
	ino, dev     uint64
	mtime, ctime unix.Timespec
	trusted      bool   // listed long enough after its last change (see racyWindow)
	wd           int32  // its inotify watch, placed before it was read; -1: none
	seq          uint64 // the index's walk this listing was made (or last confirmed) in
	// The entries that matter (sensitive, or a directory to walk into), sorted by name, and
	// per entry: fsafe.Classify calls it sensitive; a directory; a symlink.
	names                []string
	sens, isDir, symlink []bool
	links                []linkEnt
}

// linkEnt is a regular file of a listing whose inode matters for hard links: a sensitive one
// (whatever its link count: a name made for it later changes only its count), or an ordinary
// one with other names (fsafe.HardLinked), which is masked when it is a sensitive file's.
type linkEnt struct {
	name     string
	dev, ino uint64
	sens     bool
}

// rawLink is a linkEnt found by the walk.
type rawLink struct {
	abs, rel string
	dev, ino uint64
	sens     bool
}

type devIno struct{ dev, ino uint64 }

// racyWindow: a directory whose ctime was less than this before it was listed may change
// again within the same timestamp tick (coarse kernel clock, file systems with one- or
// two-second timestamps), so that listing is never reused on its timestamps alone.
const racyWindow = 2 * time.Second

// masks is the process's mask index; sensClock, sensDirsRead and sensDirsOpened are for tests.
var (
	masks          = newMaskIndex(true)
	sensClock      = time.Now
	sensDirsRead   atomic.Int64
	sensDirsOpened atomic.Int64
)

// maskIndex is the listings and watches of every workspace root walked in this process.
type maskIndex struct {
	mu sync.Mutex // held for a whole find
	// wmu guards the watch state below during a walk (its goroutines place watches).
	wmu     sync.Mutex
	ifd     int // inotify descriptor (non-blocking); -1: none
	mounts  *os.File
	seq     uint64           // walks so far
	changed map[int32]uint64 // per watch, the walk before which its last event was read
	gone    map[int32]bool   // watches the kernel removed (directory deleted, unmounted)
	// invalid: listings made before this walk are not vouched for (queue overflow, mounts
	// changed).
	invalid         uint64
	watches, budget int
	fsOK            map[uint64]bool   // per device: a local file system inotify sees fully
	byWD            map[int32][]*node // the directories each watch is on (one inode, maybe several paths)
	linksSeen       map[devIno]uint64 // sensitive files' link counts last found partly outside the roots
	roots           map[string]*rootIndex
}

// rootIndex is one workspace root's index: a tree of the directories walked into.
type rootIndex struct {
	top       *node
	seq       uint64         // the index's walk that last brought it up to date
	unwatched map[*node]bool // directories without a watch: looked at by their timestamps at each walk
	found     map[*node]bool // directories holding sensitive entries
	linked    map[*node]bool // directories holding links
}

// node is a directory of a root's index.
type node struct {
	parent *node
	name   string
	l      *listedDir       // nil: not listed yet, or unreadable
	subs   map[string]*node // the subdirectories walked into
	found  []rawSensitive   // the sensitive entries directly in it
	links  []rawLink        // its regular files that matter for hard links
	// dirty: it must be looked at (an event for its watch, or its timestamps changed while
	// unwatched); below: a directory under it is dirty. Set before a walk, cleared by it.
	dirty, below bool
}

func (n *node) rel() string {
	if n.parent == nil {
		return ""
	}
	if p := n.parent.rel(); p != "" {
		return p + "/" + n.name
	}
	return n.name
}

// mark makes the walk look at n (and so visit every directory above it).
func (n *node) mark() {
	n.dirty = true
	for p := n.parent; p != nil && !p.below; p = p.parent {
		p.below = true
	}
}

func newMaskIndex(useInotify bool) *maskIndex {
	idx := &maskIndex{ifd: -1, changed: map[int32]uint64{}, gone: map[int32]bool{},
		fsOK: map[uint64]bool{}, byWD: map[int32][]*node{}, linksSeen: map[devIno]uint64{}, roots: map[string]*rootIndex{}}
	if !useInotify {
		return idx
	}
	// The kernel's watches are shared by every process of the user (editors watch the same
	// workspace): take at most half.
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			idx.budget = n / 2
		}
	}
	return idx
}

// findSensitive walks the workspace roots and returns every path that fsafe.Classify calls
// sensitive to read (.env*, private keys, .netrc, *.pem, .ssh/, …), except the approved ones,
// through the process's mask index (see above).
func findSensitive(roots, approved, secrets []string) ([]sensitiveEntry, error) {
	return masks.find(roots, approved, secrets)
}

// find returns the sensitive entries of roots. A sensitive directory is one entry (unless an
// approved path lies below it: then its entries are listed one by one); symlinks are not
// followed while walking, and a sensitive-named symlink is resolved to what it points at (a
// dangling one is skipped: nothing to read).
//
// A regular file with other names (fsafe.HardLinked, the file tools' rule) is an entry too
// when it is one of the sensitive files': a sensitive regular file in a root, a file in a
// sensitive directory of a root, or a file under secrets (the $HOME secrets, masked apart). An
// approval never unmasks such a link. Other hard-linked files stay readable: build tools make
// them (cargo links each binary it builds, pnpm links node_modules from its store), and masking
// them would break those builds (see docs/security.md).
//
// The walk goes by directory handles (openat from the parent's descriptor, never by absolute
// path), so depth and path length do not stop it; and it fails closed: an error other than a
// directory the user may not read (the command, running as the same user, cannot list it
// either) is returned, and the command does not run. A sensitive file whose path a mount cannot
// name (longer than PATH_MAX) is an error too.
func (idx *maskIndex) find(roots, approved, secrets []string) ([]sensitiveEntry, error) {
	ok := map[string]bool{}
	for _, a := range approved {
		if filepath.IsAbs(a) {
			ok[filepath.Clean(a)] = true
		}
	}
	approvedBelow := func(dir string) bool {
		for a := range ok {
			if strings.HasPrefix(a, dir+"/") {
				return true
			}
		}
		return false
	}
	idx.mu.Lock()
	defer idx.mu.Unlock()
	idx.start()
	idx.drain()
	var out []sensitiveEntry
	secretInodes := map[devIno]bool{}
	scan := &inodeScan{into: secretInodes, left: maxSecretScan}
	var candidates []rawLink
	tooLong := func(abs string) error {
		return fmt.Errorf("sandbox: finding the sensitive files to mask: %s… is sensitive (%s) and its path is longer than the %d bytes a mount can name, so it cannot be masked",
			abs[:80], filepath.Base(abs), unix.PathMax)
	}
	// add records a sensitive name (a symlink is resolved: at every command, since what it points
	// at may change outside the workspace, where nothing watches); a sensitive directory with an
	// approved path below is listed one entry at a time instead, afresh at each command.
	var add func(abs, rel string, dir, symlink bool) error
	add = func(abs, rel string, dir, symlink bool) error {
		if dir && !symlink {
			scan.path(abs)
			if approvedBelow(abs) {
				ents, err := os.ReadDir(abs)
				if err != nil {
					if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
						return nil // unreadable for the command too, or gone
					}
					return err
				}
				for _, e := range ents {
					if err := add(abs+"/"+e.Name(), rel+"/"+e.Name(), e.IsDir(), e.Type()&fs.ModeSymlink != 0); err != nil {
						return err
					}
				}
				return nil
			}
		}
		if ok[abs] {
			return nil
		}
		if len(abs) >= unix.PathMax {
			return tooLong(abs)
		}
		if !symlink {
			out = append(out, sensitiveEntry{path: abs, rel: rel, dir: dir})
			return nil
		}
		t, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil
		}
		scan.path(t)
		if ok[t] {
			return nil
		}
		fi, err := os.Stat(t)
		if err != nil {
			return nil
		}
		out = append(out, sensitiveEntry{path: t, rel: rel, dir: fi.IsDir()})
		return nil
	}
	raws, links, err := idx.walkRoots(roots)
	if err != nil {
		return nil, fmt.Errorf("sandbox: finding the sensitive files to mask: %w", err)
	}
	for _, raw := range raws {
		for _, r := range raw {
			if err := add(r.abs, r.rel, r.dir, r.symlink); err != nil {
				return nil, fmt.Errorf("sandbox: finding the sensitive files to mask: %w", err)
			}
		}
	}
	{
		for _, l := range links {
			if l.sens {
				secretInodes[devIno{l.dev, l.ino}] = true
			} else {
				candidates = append(candidates, l)
			}
		}
	}
	if len(candidates) > 0 {
		for _, sp := range secrets {
			scan.path(sp)
		}
		for _, c := range candidates {
			if !secretInodes[devIno{c.dev, c.ino}] {
				continue
			}
			if len(c.abs) >= unix.PathMax {
				return nil, tooLong(c.abs)
			}
			out = append(out, sensitiveEntry{path: c.abs, rel: c.rel})
		}
	}
	return out, nil
}

// walkRoots brings the roots' trees up to date and returns their sensitive names and links. A
// new name made for an existing file changes only that file's link count, which neither its
// directory's timestamps nor its directory's watch report (the kernel tells a file's own watch,
// and agentd watches directories): so when a sensitive file of a root has more links than the
// names the trees know for it, and more than when this was last looked into, every directory is
// listed again (a stat per file) — the other names may be ordinary files whose listing is older
// than the link. Links still unaccounted for after that are outside the roots.
func (idx *maskIndex) walkRoots(roots []string) ([][]rawSensitive, []rawLink, error) {
	walk := func(relist bool) ([][]rawSensitive, []rawLink, bool, error) {
		var raws [][]rawSensitive
		var links []rawLink
		fresh := true
		for _, root := range roots {
			raw, l, built, err := idx.root(root, relist)
			if err != nil {
				return nil, nil, false, err
			}
			raws, links, fresh = append(raws, raw), append(links, l...), fresh && built
		}
		return raws, links, fresh, nil
	}
	raws, links, fresh, err := walk(false)
	if err != nil {
		return nil, nil, err
	}
	for pass := 0; ; pass++ {
		known := map[devIno]uint64{}
		for _, l := range links {
			known[devIno{l.dev, l.ino}]++
		}
		unknown := map[devIno]uint64{}
		for _, l := range links {
			k := devIno{l.dev, l.ino}
			var st unix.Stat_t
			if l.sens && unix.Lstat(l.abs, &st) == nil && st.Dev == l.dev && st.Ino == l.ino &&
				uint64(st.Nlink) > known[k] && idx.linksSeen[k] != uint64(st.Nlink) {
				unknown[k] = uint64(st.Nlink)
			}
		}
		if len(unknown) == 0 {
			return raws, links, nil
		}
		if fresh || pass > 0 {
			// Every listing is fresh: the other names are outside the roots. Not looked
			// into again until the link count changes.
			maps.Copy(idx.linksSeen, unknown)
			return raws, links, nil
		}
		if raws, links, _, err = walk(true); err != nil {
			return nil, nil, err
		}
	}
}

// maxSecretScan bounds how many entries of sensitive directories (and $HOME secrets) one
// command's start looks through for files with other names.
const maxSecretScan = 10000

// inodeScan collects the inodes of the regular files with other names below given paths.
type inodeScan struct {
	into map[devIno]bool
	left int
}

func (s *inodeScan) path(p string) {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		s.left--
		if fsafe.HardLinked(true, uint64(st.Nlink)) {
			s.into[devIno{st.Dev, st.Ino}] = true
		}
	case unix.S_IFDIR:
		s.left--
		ents, err := os.ReadDir(p)
		if err != nil {
			return
		}
		for _, e := range ents {
			if s.left <= 0 {
				return
			}
			s.path(p + "/" + e.Name())
		}
	}
}

// root returns the sensitive names below root, bringing its index up to date: it looks only
// at the directories marked (an event, changed timestamps of an unwatched one, new), and the
// ones on the way to them; after a lost event or a mount change, at every directory.
func (idx *maskIndex) root(root string, relist bool) (raw []rawSensitive, links []rawLink, built bool, err error) {
	rfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, false, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	top := &dirRef{abs: root, fd: rfd}
	defer top.close()
	// The root itself is looked at every time: its path is resolved anew by each command,
	// and may now name another directory.
	var st unix.Stat_t
	if err := unix.Fstat(rfd, &st); err != nil {
		return nil, nil, false, err
	}
	ri := idx.roots[root]
	if ri == nil || ri.top.l == nil || ri.top.l.ino != st.Ino || ri.top.l.dev != st.Dev {
		if ri != nil {
			idx.drop(ri)
		}
		built = true
		ri = &rootIndex{top: &node{dirty: true}, unwatched: map[*node]bool{}, found: map[*node]bool{}, linked: map[*node]bool{}}
		idx.roots[root] = ri
	}
	w := &walker{idx: idx, ri: ri, now: sensClock(), all: relist || idx.invalid > ri.seq, relist: relist,
		slots: make(chan struct{}, walkers()-1)}
	if !w.all {
		idx.checkUnwatched(rfd, ri)
	}
	w.visit(ri.top, top, "", false)
	if w.err != nil {
		// Marks may be half cleared: the next walk starts afresh.
		idx.drop(ri)
		delete(idx.roots, root)
		return nil, nil, false, w.err
	}
	ri.seq = idx.seq
	idx.evict()
	for n := range ri.found {
		raw = append(raw, n.found...)
	}
	slices.SortFunc(raw, func(a, b rawSensitive) int { return strings.Compare(a.rel, b.rel) })
	for n := range ri.linked {
		links = append(links, n.links...)
	}
	slices.SortFunc(links, func(a, b rawLink) int { return strings.Compare(a.rel, b.rel) })
	return raw, links, built, nil
}

// checkUnwatched marks the directories without a watch whose timestamps changed (or cannot
// tell), in parallel goroutines: each is a few system calls.
func (idx *maskIndex) checkUnwatched(rfd int, ri *rootIndex) {
	type check struct {
		n   *node
		rel string
	}
	var todo []check
	for n := range ri.unwatched {
		todo = append(todo, check{n, n.rel()})
	}
	changed := make([]bool, len(todo))
	k := min(walkers(), len(todo)/64+1)
	var wg sync.WaitGroup
	for g := range k {
		wg.Go(func() {
			for i := g; i < len(todo); i += k {
				changed[i] = !unchanged(rfd, todo[i].rel, todo[i].n.l)
			}
		})
	}
	wg.Wait()
	for i, c := range todo {
		if changed[i] {
			c.n.mark()
		}
	}
}

// maxRoots is how many workspace roots' trees a process keeps (the daemon serves workspaces one
// after another): the least recently walked beyond it are forgotten, and walked anew if used.
const maxRoots = 8

func (idx *maskIndex) evict() {
	for len(idx.roots) > maxRoots {
		var oldest string
		for r, ri := range idx.roots {
			if oldest == "" || ri.seq < idx.roots[oldest].seq {
				oldest = r
			}
		}
		idx.drop(idx.roots[oldest])
		delete(idx.roots, oldest)
	}
}

// drop forgets a root's tree, and removes the watches no other tree uses (their IN_IGNORED
// gives their budget back).
func (idx *maskIndex) drop(ri *rootIndex) {
	idx.wmu.Lock()
	defer idx.wmu.Unlock()
	var rm func(n *node)
	rm = func(n *node) {
		if n.l != nil && n.l.wd >= 0 {
			idx.unindex(n.l.wd, n)
			if _, used := idx.byWD[n.l.wd]; !used && idx.ifd >= 0 && !idx.gone[n.l.wd] {
				_, _ = unix.InotifyRmWatch(idx.ifd, uint32(n.l.wd))
			}
		}
		for _, c := range n.subs {
			rm(c)
		}
	}
	rm(ri.top)
}
