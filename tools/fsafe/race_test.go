package fsafe

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/testutil"
)

// Quotas of the concurrent part of TestSwapRaceNeverLeavesTheWorkspace: it runs until each is met,
// however slow the machine, so the check always gets the same number of attempts.
const (
	raceSwaps      = 2000 // exchanges of d and dlink
	raceReads      = 300  // whole reads that returned content
	racePagedReads = 300  // paged reads and held resolves attempted
	raceWrites     = 10   // commits that succeeded
	raceDeadline   = 3 * time.Minute
)

// TestSwapRaceNeverLeavesTheWorkspace exchanges a directory inside the workspace with a symlink to
// an outside directory holding a secret (renameat2 RENAME_EXCHANGE: there is never a moment
// without one or the other) while reads and writes run through the FS. Nothing outside may ever
// be read or written.
//
// First, in lockstep, the swap is shown to be a real hazard: a naive check-then-open reader whose
// check passes reads the secret once the swap lands between its check and its open, while fsafe,
// given the same interleaving (resolve or prepare, swap, then read or commit), stays inside. Then
// the swap runs concurrently with every kind of operation until each has run its quota.
func TestSwapRaceNeverLeavesTheWorkspace(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	d, dlink := filepath.Join(e.ws, "d"), filepath.Join(e.ws, "dlink")
	mustWrite(t, filepath.Join(d, "f"), "inside\n")
	mustWrite(t, filepath.Join(e.outside, "d", "f"), secret)
	mustSymlink(t, filepath.Join(e.outside, "d"), dlink)
	before := testutil.Snapshot(t, e.outside, e.evil)
	swap := func() error {
		return unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, dlink, unix.RENAME_EXCHANGE)
	}
	mustSwap := func() {
		t.Helper()
		if err := swap(); err != nil {
			t.Fatalf("renameat2: %v", err)
		}
	}

	// The control, in lockstep: check, swap, open.
	canon, err := filepath.EvalSymlinks(filepath.Join(e.ws, "d", "f"))
	if err != nil || filepath.Dir(filepath.Dir(canon)) != e.ws {
		t.Fatalf("the naive check failed before any swap: %q, %v", canon, err)
	}
	mustSwap()
	data, err := os.ReadFile(filepath.Join(e.ws, "d", "f"))
	if err != nil || !containsSecret(data) {
		t.Fatalf("the naive check-then-open did not read the outside file after the swap (%q, %v): the swap does not redirect d", data, err)
	}
	mustSwap()

	// fsafe in the same interleaving: a path resolved before the swap, read after it.
	p, err := e.w.Resolve("d/f")
	if err != nil {
		t.Fatal(err)
	}
	mustSwap()
	if data, _, err := ReadFile(p, 1<<20); err == nil && containsSecret(data) {
		t.Error("a path resolved before the swap read the outside secret after it")
	}
	mustSwap()
	// A write prepared before the swap, committed after it.
	if _, err := e.fs.Read(ctx, "d/f"); err != nil {
		t.Fatal(err)
	}
	tg, err := e.fs.PrepareWrite(ctx, "d/f")
	if err != nil {
		t.Fatal(err)
	}
	if containsSecret(tg.Content) {
		t.Fatal("PrepareWrite read the outside secret before any swap")
	}
	mustSwap()
	e.fs.Commit(ctx, tg, []byte("changed\n")) // may fail; it must not write outside
	mustSwap()
	if c := testutil.SnapshotChanges(before, testutil.Snapshot(t, e.outside, e.evil)); len(c) > 0 {
		t.Fatalf("a write prepared before the swap and committed after it changed the outside: %s", strings.Join(c, "; "))
	}
	mustWrite(t, filepath.Join(d, "f"), "inside\n")

	// Concurrently, until every quota is met.
	var stop atomic.Bool
	var swaps, leaks, reads, paged, writes atomic.Int64
	var wg, quotas sync.WaitGroup
	// until runs fn until stop, and marks its quota met (once) when met() first holds.
	until := func(met func() bool, fn func()) {
		wg.Add(1)
		quotas.Add(1)
		go func() {
			defer wg.Done()
			done := false
			defer func() {
				if !done {
					quotas.Done()
				}
			}()
			for !stop.Load() {
				fn()
				if !done && met() {
					done = true
					quotas.Done()
				}
			}
		}()
	}
	until(func() bool { return swaps.Load() >= raceSwaps }, func() {
		if err := swap(); err != nil {
			t.Errorf("renameat2: %v", err)
			stop.Store(true)
			return
		}
		swaps.Add(1)
	})
	until(func() bool { return reads.Load() >= raceReads }, func() { // whole reads
		if c, err := e.fs.Read(ctx, "d/f"); err == nil {
			reads.Add(1)
			if containsSecret(c.Data) {
				leaks.Add(1)
			}
		}
	})
	until(func() bool { return paged.Load() >= racePagedReads }, func() { // paged reads, and a resolve held across the swap
		paged.Add(1)
		if pg, err := e.fs.ReadLines(ctx, "d/f", 0, 10); err == nil {
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
	until(func() bool { return writes.Load() >= raceWrites }, func() { // edits of an existing file and creation of new ones
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
	met := make(chan struct{})
	go func() {
		quotas.Wait()
		close(met)
	}()
	counts := func() string {
		return fmt.Sprintf("swaps %d/%d, reads %d/%d, paged reads %d/%d, writes %d/%d, leaks %d",
			swaps.Load(), raceSwaps, reads.Load(), raceReads, paged.Load(), racePagedReads, writes.Load(), raceWrites, leaks.Load())
	}
	select {
	case <-met:
	case <-time.After(raceDeadline):
		t.Errorf("timed out after %v waiting for every operation to meet its quota while d was swapped: %s", raceDeadline, counts())
	}
	stop.Store(true)
	wg.Wait()
	if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		mustSwap()
	}

	t.Log(counts())
	if leaks.Load() != 0 {
		t.Errorf("the outside secret was read %d times through fsafe", leaks.Load())
	}
	if c := testutil.SnapshotChanges(before, testutil.Snapshot(t, e.outside, e.evil)); len(c) > 0 {
		t.Errorf("outside changed: %s", strings.Join(c, "; "))
	}
	if got := readString(t, filepath.Join(d, "f")); got != "inside\n" {
		t.Errorf("d/f = %q", got)
	}
}
