package fsafe

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// A tool's write (FS.Commit) makes the new content durable before the rename (the temporary
// file's fsync) and leaves the rename itself — the directory entry — to be made durable at the
// next sync point: SyncDirs, which the session journal calls at every batch boundary, in
// parallel with its own fsync, before the model sees the results; a timer does it after
// dirSyncBackstop if nothing else did. Several writes in one directory in that time share one
// fsync.
//
// What this changes, and only across a power loss or a kernel crash (a killed agentd loses
// nothing: the rename is in the kernel): a write reported done less than a batch ago may be
// found not to have happened, the file holding its previous content, which is complete (the
// rename never exposes a partial file) and which a revert recognizes — the pre-image, or an
// earlier content of the turn, each durable in the checkpoint (pre-image object, intent log)
// before the rename that replaced it. The journal's Sync returns once both its records and the
// renames are durable; in the instant between the two fsyncs the journal may record a result
// whose rename a power loss would undo — the model then meets the older content as a stale or
// read_first refusal, never as a wrong write (every write re-checks the file's content).
// In exchange an edit waits for one fsync instead of two, and a batch's end for the journal's
// and the directories' fsyncs together instead of one after the other.

// dirSyncBackstop bounds how long a rename waits for its directory's fsync when no sync point
// comes (no journal).
var dirSyncBackstop = time.Second

// maxPendingDirs bounds the directory descriptors kept open for SyncDirs; past it, a directory
// is fsynced at once.
const maxPendingDirs = 64

type dirKey struct{ dev, ino uint64 }

var pendingDirs struct {
	mu    sync.Mutex
	dirs  map[dirKey]*os.File
	timer *time.Timer
}

// flushMu serializes SyncDirs, so that when one returns, every directory that was pending when
// it was called has been fsynced (possibly by a concurrent call that took it first).
var flushMu sync.Mutex

// testHookDirSync, when set (tests only), is called before each directory fsync, with whether
// it is a deferred one (SyncDirs) or an immediate one.
var testHookDirSync func(deferred bool)

// syncDirNow fsyncs the directory df and closes it. A failure only weakens durability across a
// power loss (some file systems refuse to fsync directories), so it is not reported.
func syncDirNow(df *os.File, deferred bool) {
	if testHookDirSync != nil {
		testHookDirSync(deferred)
	}
	_ = df.Sync()
	df.Close()
}

// deferDirSync takes df, a directory in which a rename just happened, and leaves its fsync to
// SyncDirs.
func deferDirSync(df *os.File) {
	fi, err := df.Stat()
	if err != nil {
		syncDirNow(df, false)
		return
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		syncDirNow(df, false)
		return
	}
	key := dirKey{uint64(st.Dev), uint64(st.Ino)}
	pendingDirs.mu.Lock()
	if _, dup := pendingDirs.dirs[key]; dup {
		pendingDirs.mu.Unlock()
		df.Close() // already pending: one fsync covers both renames
		return
	}
	if len(pendingDirs.dirs) >= maxPendingDirs {
		pendingDirs.mu.Unlock()
		syncDirNow(df, false)
		return
	}
	if pendingDirs.dirs == nil {
		pendingDirs.dirs = map[dirKey]*os.File{}
	}
	pendingDirs.dirs[key] = df
	if pendingDirs.timer == nil {
		pendingDirs.timer = time.AfterFunc(dirSyncBackstop, SyncDirs)
	}
	pendingDirs.mu.Unlock()
}

// PendingDirs is how many directories wait for SyncDirs.
func PendingDirs() int {
	pendingDirs.mu.Lock()
	defer pendingDirs.mu.Unlock()
	return len(pendingDirs.dirs)
}

// SyncDirs makes the renames of every write that FS.Commit reported done so far durable: it
// fsyncs the directories they happened in (in this process, whichever session wrote them). Call
// it before anything that records those writes as done is made durable (the session journal
// does, at each batch boundary). It returns once every directory pending at its call is synced.
func SyncDirs() {
	flushMu.Lock()
	defer flushMu.Unlock()
	pendingDirs.mu.Lock()
	dirs := pendingDirs.dirs
	pendingDirs.dirs = nil
	if pendingDirs.timer != nil {
		pendingDirs.timer.Stop()
		pendingDirs.timer = nil
	}
	pendingDirs.mu.Unlock()
	for _, df := range dirs {
		syncDirNow(df, true)
	}
}
