package fsafe

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSwapRaceNeverLeavesTheWorkspace keeps exchanging a directory inside the workspace with a
// symlink to an outside directory holding a secret (renameat2 RENAME_EXCHANGE: there is never a
// moment without one or the other) while reads and writes run through the FS. Nothing outside may
// ever be read or written. A naive check-then-open reader runs alongside as a control: it must
// leak, or the race was not exercised.
func TestSwapRaceNeverLeavesTheWorkspace(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	d, dlink := filepath.Join(e.ws, "d"), filepath.Join(e.ws, "dlink")
	mustWrite(t, filepath.Join(d, "f"), "inside\n")
	mustWrite(t, filepath.Join(e.outside, "d", "f"), secret)
	mustSymlink(t, filepath.Join(e.outside, "d"), dlink)
	before := snapshot(t, e.outside, e.evil)

	var stop atomic.Bool
	var swaps, leaks, controlLeaks, reads, writes atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, dlink, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("renameat2: %v", err)
				return
			}
			swaps.Add(1)
		}
	}()
	worker := func(fn func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				fn()
			}
		}()
	}
	worker(func() { // whole reads
		if c, err := e.fs.Read(ctx, "d/f"); err == nil {
			reads.Add(1)
			if containsSecret(c.Data) {
				leaks.Add(1)
			}
		}
	})
	worker(func() { // paged reads, and a resolve held across the swap
		if pg, err := e.fs.ReadLines(ctx, "d/f", 0, 10); err == nil {
			reads.Add(1)
			for _, l := range pg.Lines {
				if containsSecret([]byte(l.Text)) {
					leaks.Add(1)
				}
			}
		}
		if p, err := e.w.Resolve("d/f"); err == nil {
			if data, _, err := ReadFile(p, 1<<20); err == nil && containsSecret(data) {
				leaks.Add(1)
			}
		}
	})
	worker(func() { // edits of an existing file and creation of new ones
		if tg, err := e.fs.PrepareWrite(ctx, "d/f"); err == nil {
			if containsSecret(tg.Content) {
				leaks.Add(1)
			}
			if _, err := e.fs.Commit(ctx, tg, []byte("inside\n")); err == nil {
				writes.Add(1)
			}
		} else if c, err := e.fs.Read(ctx, "d/f"); err == nil && containsSecret(c.Data) {
			leaks.Add(1)
		}
		if tg, err := e.fs.PrepareWrite(ctx, "d/new.txt"); err == nil {
			if _, err := e.fs.Commit(ctx, tg, []byte("new\n")); err == nil {
				writes.Add(1)
			}
		}
	})
	worker(func() { // the control: resolve, check the prefix, then open by name
		canon, err := filepath.EvalSymlinks(filepath.Join(e.ws, "d", "f"))
		if err != nil || filepath.Dir(filepath.Dir(canon)) != e.ws {
			return
		}
		if data, err := os.ReadFile(filepath.Join(e.ws, "d", "f")); err == nil && containsSecret(data) {
			controlLeaks.Add(1)
		}
	})

	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, dlink, unix.RENAME_EXCHANGE); err != nil {
			t.Fatal(err)
		}
	}

	t.Logf("swaps %d, reads %d, writes %d, leaks %d, control leaks %d", swaps.Load(), reads.Load(), writes.Load(), leaks.Load(), controlLeaks.Load())
	if leaks.Load() != 0 {
		t.Errorf("the outside secret was read %d times through fsafe", leaks.Load())
	}
	if path, same := sameSnapshot(before, snapshot(t, e.outside, e.evil)); !same {
		t.Errorf("outside changed at %s", path)
	}
	if swaps.Load() < 100 || reads.Load() == 0 || writes.Load() == 0 {
		t.Errorf("the race was not exercised: %d swaps, %d reads, %d writes", swaps.Load(), reads.Load(), writes.Load())
	}
	if controlLeaks.Load() == 0 {
		t.Errorf("the naive control never leaked: the swap did not race")
	}
	if got := readString(t, filepath.Join(d, "f")); got != "inside\n" {
		t.Errorf("d/f = %q", got)
	}
}
