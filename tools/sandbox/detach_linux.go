//go:build linux

package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A mount is attached to a dentry, and when something outside the sandbox removes that entry
// or renames another one over it, the kernel detaches the mount in every other mount namespace
// (Linux ≥ 3.18). The running command then sees the new entry without the sandbox's
// protection: git's `config.lock` renamed over .git/config makes .git/config writable inside, an
// editor that saves .env through a rename makes the new secrets readable. Nothing inside the
// sandbox can prevent it, so the daemon watches every mounted path of a running command (the
// names in their parent directories) and stops the command at the first such change.
//
// What stays: the command runs until agentd reads the event (tens of microseconds to a
// millisecond), and a command that polls in a tight loop can act in that window; the git guard
// then restores .git/config and the hooks. Paths that Landlock also denies reading (agentd's
// state, $HOME secrets, shell histories) are not watched: Landlock's rules hold on inodes, so a
// replaced file stays unreadable, and a shell saving its history would otherwise stop commands.

// mountWatch is the inotify watch on the mounted paths of one command.
type mountWatch struct {
	f     *os.File
	names map[int32]map[string]string // watch descriptor → entry name → mounted path
	ids   map[string][2]uint64        // mounted path → device and inode when the watch began

	once sync.Once

	mu      sync.Mutex
	stopped bool
	hit     []string
}

const mountWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// watchMounts watches the parent directories of targets (absolute, canonical). nil when there is
// nothing to watch.
func watchMounts(targets []string) (*mountWatch, error) {
	if len(targets) == 0 {
		return nil, nil
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("sandbox: watching the mounted paths: %w", err)
	}
	w := &mountWatch{f: os.NewFile(uintptr(fd), "inotify"), names: map[int32]map[string]string{},
		ids: map[string][2]uint64{}}
	wds := map[string]int32{}
	for _, t := range targets {
		dir := filepath.Dir(t)
		wd, ok := wds[dir]
		if !ok {
			n, err := unix.InotifyAddWatch(fd, dir, mountWatchMask)
			if err != nil {
				w.f.Close()
				return nil, fmt.Errorf("sandbox: watching %s (it holds %s, mounted in the sandbox): %w", dir, t, err)
			}
			wd = int32(n)
			wds[dir] = wd
			w.names[wd] = map[string]string{}
		}
		w.names[wd][filepath.Base(t)] = t
		w.ids[t] = identity(t)
	}
	return w, nil
}

// identity is p's device and inode ({0, 0} when p is missing).
func identity(p string) [2]uint64 {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return [2]uint64{}
	}
	return [2]uint64{st.Dev, st.Ino}
}

// start reads events until stop is called, and calls kill at each change to a mounted path.
func (w *mountWatch) start(kill func()) {
	if w == nil {
		return
	}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := w.f.Read(buf)
			if err != nil {
				return // closed by stop
			}
			if hit := w.changes(buf[:n]); len(hit) > 0 {
				// Under the lock: once stop has returned, nothing is killed (the command's
				// process group id may be anyone's after Wait).
				w.mu.Lock()
				if !w.stopped {
					w.hit = append(w.hit, hit...)
					kill()
				}
				w.mu.Unlock()
			}
		}
	}()
}

// changes returns the mounted paths that the inotify events in buf say changed.
func (w *mountWatch) changes(buf []byte) (hit []string) {
	const head = unix.SizeofInotifyEvent
	for off := 0; off+head <= len(buf); {
		wd := int32(binary.NativeEndian.Uint32(buf[off:]))
		mask := binary.NativeEndian.Uint32(buf[off+4:])
		l := int(binary.NativeEndian.Uint32(buf[off+12:]))
		name := string(buf[off+head : off+head+l])
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		off += head + l
		switch {
		case mask&unix.IN_Q_OVERFLOW != 0:
			// Events were lost (a command creating entries faster than they are read): a
			// mounted path that is gone or another file now counts as changed.
			for t, id := range w.ids {
				if identity(t) != id {
					hit = append(hit, t)
				}
			}
		case w.names[wd][name] != "":
			hit = append(hit, w.names[wd][name])
		}
	}
	return hit
}

// stop ends the watch (idempotent): no change is recorded and nothing is killed after it returns.
// The inotify instance is closed in the background: closing one waits for an SRCU grace period
// in the kernel (10–13 ms a command here).
func (w *mountWatch) stop() {
	if w == nil {
		return
	}
	w.once.Do(func() {
		w.mu.Lock()
		w.stopped = true
		w.mu.Unlock()
		go w.f.Close()
	})
}

// changed lists the mounted paths changed outside the sandbox while the watch ran, sorted.
func (w *mountWatch) changed() []string {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Clone(w.hit)
	slices.Sort(out)
	return slices.Compact(out)
}
