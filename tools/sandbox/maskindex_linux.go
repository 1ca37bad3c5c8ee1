//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

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

// unchanged reports whether the directory rel (below the root open as rfd) still has the inode
// and timestamps of its listing l, and was listed long enough after its last change for those
// to tell. It is opened by its relative path, refusing symlinks and anything outside the root
// (openat2); the directories above it had no event, so the path leads where it led.
func unchanged(rfd int, rel string, l *listedDir) bool {
	if l == nil || !l.trusted || len(rel) >= unix.PathMax {
		return false
	}
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	if rel == "" {
		rel = "."
	}
	fd, err := unix.Openat2(rfd, rel, &how)
	if err != nil {
		return false
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	unix.Close(fd)
	return err == nil && st.Ino == l.ino && st.Dev == l.dev && st.Mtim == l.mtime && st.Ctim == l.ctime
}

// watchMask: a change of the directory's entries (created, deleted, moved in or out), of an
// entry's metadata (mode, owner, link count), or of the directory itself (deleted, moved).
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

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

// start opens the inotify instance and the mount table on first use.
func (idx *maskIndex) start() {
	if idx.budget == 0 || idx.ifd >= 0 || idx.mounts != nil {
		return
	}
	m, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		idx.budget = 0
		return
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		m.Close()
		idx.budget = 0
		return
	}
	idx.ifd, idx.mounts = fd, m
}

// drain starts a walk: it reads every queued event (a change that completed before this call
// has its event queued: inotify queues it within the system call that made it) and the mount
// table's change flag.
func (idx *maskIndex) drain() {
	idx.seq++
	if idx.ifd < 0 {
		return
	}
	pfd := []unix.PollFd{{Fd: int32(idx.mounts.Fd()), Events: unix.POLLPRI}}
	if n, err := unix.Poll(pfd, 0); err != nil || (n > 0 && pfd[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0) {
		idx.invalidate()
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(idx.ifd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			if !errors.Is(err, unix.EAGAIN) {
				idx.invalidate() // cannot tell what happened
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				idx.invalidate()
				idx.recount()
				continue
			}
			idx.changed[ev.Wd] = idx.seq
			for _, n := range idx.byWD[ev.Wd] {
				n.mark()
			}
			if ev.Mask&unix.IN_IGNORED != 0 && !idx.gone[ev.Wd] {
				idx.gone[ev.Wd] = true
				idx.watches--
			}
		}
	}
}

// recount takes the number of watches held from the kernel (/proc/self/fdinfo), after lost
// events may have hidden some removals. The watches whose removal was lost stay in gone's
// complement, harmlessly: a walk after lost events places every watch again.
func (idx *maskIndex) recount() {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(idx.ifd))
	if err != nil {
		return
	}
	idx.wmu.Lock()
	idx.watches = strings.Count(string(b), "inotify wd:")
	idx.wmu.Unlock()
}

func (idx *maskIndex) invalidate() {
	idx.invalid = idx.seq
}

// vouched reports whether l is known unchanged since it was listed, without looking.
func (idx *maskIndex) vouched(l *listedDir) bool {
	idx.wmu.Lock()
	defer idx.wmu.Unlock()
	return l.wd >= 0 && l.seq >= idx.invalid && !idx.gone[l.wd] && idx.changed[l.wd] <= l.seq
}

// hadEvent reports whether l's watch reported a change after l was listed: a change its
// timestamps may not show (an entry's link count or mode), so it is listed again.
// live reports whether wd is a watch the kernel still holds.
func (idx *maskIndex) live(wd int32) bool {
	idx.wmu.Lock()
	defer idx.wmu.Unlock()
	return wd >= 0 && !idx.gone[wd]
}

func (idx *maskIndex) hadEvent(l *listedDir) bool {
	idx.wmu.Lock()
	defer idx.wmu.Unlock()
	return l.wd >= 0 && (idx.gone[l.wd] || idx.changed[l.wd] > l.seq)
}

// watch places a watch on the open directory fd (device dev), if the budget and its file
// system allow; -1 if not.
func (idx *maskIndex) watch(fd int, dev uint64) int32 {
	idx.wmu.Lock()
	defer idx.wmu.Unlock()
	if idx.ifd < 0 || idx.watches >= idx.budget {
		return -1
	}
	ok, known := idx.fsOK[dev]
	if !known {
		var sf unix.Statfs_t
		ok = unix.Fstatfs(fd, &sf) == nil && localFS[int64(sf.Type)]
		idx.fsOK[dev] = ok
	}
	if !ok {
		return -1
	}
	wd, err := unix.InotifyAddWatch(idx.ifd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			idx.budget = idx.watches // the user's limit is reached: stop trying
		}
		return -1
	}
	w := int32(wd)
	if _, seen := idx.changed[w]; !seen {
		idx.watches++
		idx.changed[w] = 0
	} else if idx.gone[w] {
		// A number the kernel gave out again (they wrap around): a new watch. Listings of the
		// old one still see its last event.
		delete(idx.gone, w)
		idx.watches++
	}
	// A directory watched already (the same inode under another path, or moved) keeps its
	// watch and its events.
	return w
}

// localFS are the file systems whose every change inotify reports (changes made through
// another host, as on NFS, SMB or FUSE file systems, are not).
var localFS = map[int64]bool{
	unix.EXT4_SUPER_MAGIC: true, unix.XFS_SUPER_MAGIC: true, unix.BTRFS_SUPER_MAGIC: true,
	unix.TMPFS_MAGIC: true, unix.F2FS_SUPER_MAGIC: true,
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

// unindex removes n from the directories of watch wd (idx.wmu held).
func (idx *maskIndex) unindex(wd int32, n *node) {
	ns := slices.DeleteFunc(idx.byWD[wd], func(m *node) bool { return m == n })
	if len(ns) == 0 {
		delete(idx.byWD, wd)
	} else {
		idx.byWD[wd] = ns
	}
}

// dirRef is a directory of the walk, opened (from its parent's descriptor) only when needed.
type dirRef struct {
	parent    *dirRef
	name, abs string
	mu        sync.Mutex // subdirectories walked in parallel may open it at once
	fd        int        // -1: not open
}

func (d *dirRef) open() (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd >= 0 {
		return d.fd, nil
	}
	pfd, err := d.parent.open()
	if err != nil {
		return -1, err
	}
	for {
		fd, err := unix.Openat(pfd, d.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return -1, err
		}
		sensDirsOpened.Add(1)
		d.fd = fd
		return fd, nil
	}
}

func (d *dirRef) close() {
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}

type walker struct {
	idx    *maskIndex
	ri     *rootIndex
	now    time.Time
	all    bool          // look at every directory (events were lost, or mounts changed)
	relist bool          // and list every one again (link counts unaccounted for)
	slots  chan struct{} // goroutines walking besides the first

	mu     sync.Mutex // guards ri.unwatched, ri.found and err
	err    error
	failed atomic.Bool
}

// walkers is how many goroutines walk at once: the first walk of a workspace is system calls
// (open, stat, getdents, a watch per directory), which the kernel runs in parallel.
func walkers() int {
	return min(16, 2*runtime.GOMAXPROCS(0))
}

// visit brings n (the directory d, rel below the root) up to date: it looks at n when told to
// or when nothing vouches for its listing, and goes on into the subdirectories that are marked,
// new, or whose parent was just listed anew.
func (w *walker) visit(n *node, d *dirRef, rel string, look bool) {
	if w.failed.Load() {
		return
	}
	look = look || w.all || n.dirty || n.l == nil || !w.idx.vouched(n.l)
	n.dirty, n.below = false, false
	fresh := false
	if look {
		fd, err := d.open()
		if err != nil {
			if n.parent != nil && (errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOENT) ||
				errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)) {
				// Unreadable for the command too, or no longer a directory (gone, or
				// replaced by a file or a symlink since its parent was listed: the parent
				// has an event, and is listed again): nothing in it to mask. Tried again
				// at each walk (it has no watch).
				w.forget(n)
				return
			}
			w.fail(fmt.Errorf("opening %s: %w", d.abs, err))
			return
		}
		l, isNew, err := w.list(fd, d.abs, rel, n.l)
		if err != nil {
			w.fail(fmt.Errorf("listing %s: %w", d.abs, err))
			return
		}
		w.setListing(n, l)
		if isNew {
			fresh = true
			w.reconcile(n, d.abs, rel)
		}
	}
	var wg sync.WaitGroup
	for name, sub := range n.subs {
		if !fresh && !w.all && !sub.dirty && !sub.below && sub.l != nil {
			continue
		}
		r := name
		if rel != "" {
			r = rel + "/" + name
		}
		ref := &dirRef{parent: d, name: name, abs: d.abs + "/" + name, fd: -1}
		run := func() {
			// A directory listed anew has its subdirectories looked at too (their
			// inodes may not be the ones listed before under those names).
			w.visit(sub, ref, r, fresh)
			ref.close()
		}
		// A subdirectory goes to another goroutine while one is free (the first walk of a
		// large workspace is system calls, which run in parallel), else it is walked here.
		// The parent's descriptor stays open until its subdirectories are done.
		select {
		case w.slots <- struct{}{}:
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-w.slots }()
				run()
			}()
		default:
			run()
		}
	}
	wg.Wait()
}

// reconcile sets n's sensitive entries and subdirectories from its new listing (of abs, rel).
func (w *walker) reconcile(n *node, abs, rel string) {
	l := n.l
	subs := map[string]*node{}
	var found []rawSensitive
	for i, name := range l.names {
		eabs := abs + "/" + name
		r := name
		if rel != "" {
			r = rel + "/" + name
		}
		if !l.sens[i] {
			if !l.isDir[i] {
				continue // neither sensitive nor walked into
			}
			sub := n.subs[name]
			if sub == nil {
				sub = &node{parent: n, name: name, dirty: true}
			}
			subs[name] = sub
			continue
		}
		found = append(found, rawSensitive{abs: eabs, rel: r, dir: l.isDir[i], symlink: l.symlink[i]})
	}
	var links []rawLink
	for _, le := range l.links {
		r := le.name
		if rel != "" {
			r = rel + "/" + le.name
		}
		links = append(links, rawLink{abs: abs + "/" + le.name, rel: r, dev: le.dev, ino: le.ino, sens: le.sens})
	}
	for name, old := range n.subs {
		if subs[name] != old {
			w.removeTree(old)
		}
	}
	n.subs, n.found, n.links = subs, found, links
	w.mu.Lock()
	if len(found) > 0 {
		w.ri.found[n] = true
	} else {
		delete(w.ri.found, n)
	}
	if len(links) > 0 {
		w.ri.linked[n] = true
	} else {
		delete(w.ri.linked, n)
	}
	w.mu.Unlock()
}

// setListing records n's listing l, and which watch (if any) vouches for it.
func (w *walker) setListing(n *node, l *listedDir) {
	old := n.l
	n.l = l
	w.idx.wmu.Lock()
	if old != nil && old.wd >= 0 && old.wd != l.wd {
		w.idx.unindex(old.wd, n)
	}
	if l.wd >= 0 && (old == nil || old.wd != l.wd) {
		w.idx.byWD[l.wd] = append(w.idx.byWD[l.wd], n)
	}
	w.idx.wmu.Unlock()
	w.mu.Lock()
	if l.wd < 0 {
		w.ri.unwatched[n] = true
	} else {
		delete(w.ri.unwatched, n)
	}
	w.mu.Unlock()
}

// forget empties n (unreadable or gone): no entries, no listing; it stays among the unwatched,
// looked at again by the next walk.
func (w *walker) forget(n *node) {
	w.removeTree(n)
	n.l, n.subs, n.found, n.links = nil, nil, nil, nil
	w.mu.Lock()
	w.ri.unwatched[n] = true
	w.mu.Unlock()
}

// removeTree forgets n and everything below it (no longer there, or no longer walked into).
func (w *walker) removeTree(n *node) {
	for _, c := range n.subs {
		w.removeTree(c)
	}
	w.idx.wmu.Lock()
	if n.l != nil && n.l.wd >= 0 {
		w.idx.unindex(n.l.wd, n)
	}
	w.idx.wmu.Unlock()
	w.mu.Lock()
	delete(w.ri.found, n)
	delete(w.ri.linked, n)
	delete(w.ri.unwatched, n)
	w.mu.Unlock()
}

func (w *walker) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
	w.failed.Store(true)
}

// list returns the open directory fd's listing: prev when its watch vouches for it, a copy of
// prev when its inode and timestamps show it unchanged (and no event said otherwise), else one
// read anew (isNew). A watch is placed first, so that a
// change made while it is read has an event.
func (w *walker) list(fd int, dir, rel string, prev *listedDir) (l *listedDir, isNew bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, false, fmt.Errorf("%s is not a directory", dir)
	}
	same := prev != nil && prev.ino == st.Ino && prev.dev == st.Dev && !w.relist
	if same && w.idx.vouched(prev) {
		return prev, false, nil
	}
	wd := int32(-1)
	if same && !w.all && w.idx.live(prev.wd) {
		// Its watch is still on this directory (a watch counts against the budget once).
		// After lost events a watch is placed again: its removal may have been among them
		// (the directory deleted, and its inode number given to a new one).
		wd = prev.wd
	} else if wd = w.idx.watch(fd, st.Dev); wd >= 0 && prev != nil {
		// Taken again after the watch is in place, to compare with prev: a change in between
		// shows in either. (A new listing keeps the first: a change in between is in the
		// listing, and the older timestamps only make the next look list it again.)
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, false, err
		}
	}
	if same && prev.trusted && !w.idx.hadEvent(prev) && prev.ino == st.Ino && prev.dev == st.Dev &&
		prev.mtime == st.Mtim && prev.ctime == st.Ctim {
		c := *prev
		c.wd, c.seq = wd, w.idx.seq
		return &c, false, nil
	}
	sensDirsRead.Add(1)
	names, types, err := readNames(fd)
	if err != nil {
		return nil, false, err
	}
	l = &listedDir{ino: st.Ino, dev: st.Dev, mtime: st.Mtim, ctime: st.Ctim, wd: wd, seq: w.idx.seq,
		trusted: w.now.Sub(time.Unix(st.Ctim.Unix())) > racyWindow}
	for i, name := range names {
		typ := types[i]
		var est unix.Stat_t
		statted := false
		if typ == unix.DT_UNKNOWN || typ == unix.DT_REG {
			// A regular file's link count (and, for DT_UNKNOWN, its type).
			if err := unix.Fstatat(fd, name, &est, unix.AT_SYMLINK_NOFOLLOW); err == nil {
				statted = true
				switch est.Mode & unix.S_IFMT {
				case unix.S_IFDIR:
					typ = unix.DT_DIR
				case unix.S_IFLNK:
					typ = unix.DT_LNK
				case unix.S_IFREG:
					typ = unix.DT_REG
				}
			}
		}
		r := name
		if rel != "" {
			r = rel + "/" + name
		}
		_, sens, _ := fsafe.Classify(r)
		if statted && typ == unix.DT_REG && (sens || fsafe.HardLinked(true, uint64(est.Nlink))) {
			l.links = append(l.links, linkEnt{name: name, dev: est.Dev, ino: est.Ino, sens: sens})
		}
		if !sens && typ != unix.DT_DIR {
			continue // neither sensitive nor walked into: not kept
		}
		l.names = append(l.names, name)
		l.sens = append(l.sens, sens)
		l.isDir = append(l.isDir, typ == unix.DT_DIR)
		l.symlink = append(l.symlink, typ == unix.DT_LNK)
	}
	return l, true, nil
}

// readNames reads the entries of the open directory fd (from its start), sorted by name, with
// their types (DT_*).
func readNames(fd int) ([]string, []uint8, error) {
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return nil, nil, err
	}
	type ent struct {
		name string
		typ  uint8
	}
	var ents []ent
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.ReadDirent(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if n <= 0 {
			break
		}
		for off := 0; off < n; {
			de := (*unix.Dirent)(unsafe.Pointer(&buf[off]))
			if de.Reclen == 0 {
				return nil, nil, errors.New("bad directory entry")
			}
			off += int(de.Reclen)
			nb := (*[256]byte)(unsafe.Pointer(&de.Name[0]))
			nl := 0
			for nl < len(nb) && nb[nl] != 0 {
				nl++
			}
			name := string(nb[:nl])
			if name == "." || name == ".." {
				continue
			}
			ents = append(ents, ent{name, de.Type})
		}
	}
	slices.SortFunc(ents, func(a, b ent) int { return strings.Compare(a.name, b.name) })
	names, types := make([]string, len(ents)), make([]uint8, len(ents))
	for i, e := range ents {
		names[i], types[i] = e.name, e.typ
	}
	return names, types, nil
}
