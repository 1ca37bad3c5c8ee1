package fsafe

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A tool's write (Commit) leaves its directory's fsync to SyncDirs, which syncs each directory
// once however many writes it saw; WriteFile (reverts, restores) still syncs at once.
func TestCommitLeavesTheDirectorySyncToSyncDirs(t *testing.T) {
	SyncDirs() // nothing pending from earlier tests
	oldBackstop := dirSyncBackstop
	dirSyncBackstop = time.Hour // only this test's SyncDirs may sync
	var mu sync.Mutex
	immediate, deferred := 0, 0
	testHookDirSync = func(d bool) {
		mu.Lock()
		defer mu.Unlock()
		if d {
			deferred++
		} else {
			immediate++
		}
	}
	t.Cleanup(func() { testHookDirSync, dirSyncBackstop = nil, oldBackstop; SyncDirs() })
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return immediate, deferred
	}

	e := newEnv(t, Options{})
	for _, name := range []string{"a.txt", "sub/b.txt"} {
		if _, err := e.fs.Read(bg, name); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"a.txt", "a.txt", "sub/b.txt"} {
		tg, err := e.fs.PrepareWrite(bg, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.fs.Commit(bg, tg, []byte{'v', byte('0' + i), '\n'}); err != nil {
			t.Fatal(err)
		}
	}
	if i, d := counts(); i != 0 || d != 0 {
		t.Fatalf("after three commits: %d immediate and %d deferred directory fsyncs, want none yet", i, d)
	}
	if n := PendingDirs(); n != 2 {
		t.Fatalf("%d directories pending, want 2 (the workspace and sub)", n)
	}
	SyncDirs()
	if i, d := counts(); i != 0 || d != 2 || PendingDirs() != 0 {
		t.Fatalf("after SyncDirs: %d immediate and %d deferred fsyncs, %d pending; want 0, 2, 0", i, d, PendingDirs())
	}
	if got := readString(t, filepath.Join(e.ws, "a.txt")); got != "v1\n" {
		t.Fatalf("a.txt = %q", got)
	}

	if _, err := WriteFile(mustResolve(t, e, "c.txt"), []byte("c\n"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if i, _ := counts(); i != 1 || PendingDirs() != 0 {
		t.Fatalf("WriteFile: %d immediate directory fsyncs and %d pending, want 1 and 0", i, PendingDirs())
	}
}

// With no sync point (no journal), the backstop syncs the directory on its own.
func TestDeferredDirectorySyncHasABackstop(t *testing.T) {
	SyncDirs()
	oldBackstop := dirSyncBackstop
	dirSyncBackstop = time.Millisecond
	synced := make(chan struct{}, 1)
	testHookDirSync = func(d bool) {
		if d {
			select {
			case synced <- struct{}{}:
			default:
			}
		}
	}
	t.Cleanup(func() { testHookDirSync, dirSyncBackstop = nil, oldBackstop; SyncDirs() })
	e := newEnv(t, Options{})
	if _, err := e.fs.Read(bg, "a.txt"); err != nil {
		t.Fatal(err)
	}
	tg, err := e.fs.PrepareWrite(bg, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.Commit(bg, tg, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-synced:
	case <-time.After(10 * time.Second):
		t.Fatal("the backstop never synced the workspace directory (waited 10 s)")
	}
}
