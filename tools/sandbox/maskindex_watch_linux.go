//go:build linux

package sandbox

// The mask index's inotify watches: what vouches for an unchanged directory.

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchMask: a change of the directory's entries (created, deleted, moved in or out), of an
// entry's metadata (mode, owner, link count), or of the directory itself (deleted, moved).
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

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

// unindex removes n from the directories of watch wd (idx.wmu held).
func (idx *maskIndex) unindex(wd int32, n *node) {
	ns := slices.DeleteFunc(idx.byWD[wd], func(m *node) bool { return m == n })
	if len(ns) == 0 {
		delete(idx.byWD, wd)
	} else {
		idx.byWD[wd] = ns
	}
}
