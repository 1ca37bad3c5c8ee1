//go:build linux

package sandbox

// The mask index's walk: listing directories (in parallel) into the index's tree.

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/tools/fsafe"
)

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
