package fsafe

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// stuckWriterChild writes a large file through WriteFile and stops right before the rename,
// printing the temp file's name, until it is killed.
func stuckWriterChild(dir string) {
	p := childResolve(dir, "sub/big.bin")
	testHookBeforeRename = func(rel string) {
		fmt.Println("temp " + rel)
		select {} // killed here
	}
	_, err := WriteFile(p, bytes.Repeat([]byte("new content\n"), 4<<20/12), WriteOptions{MkdirAll: true})
	fmt.Fprintln(os.Stderr, "the hook did not stop the write:", err)
	os.Exit(3)
}

// A writer killed with SIGKILL in the middle of a large write leaves its temp file; the next
// sweep removes it at once (not after ten minutes), while the writer is alive it does not.
func TestSweepRemovesTheTempOfAKilledWriterAtOnce(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "sub", "big.bin"), "old content\n")
	child := testutil.StartChild(t, childEnv+"=stuck-writer", dirEnv+"="+dir)
	line := child.ReadLine()
	rel, ok := strings.CutPrefix(strings.TrimSpace(line), "temp ")
	if !ok {
		child.Fatalf(t, "waiting for the child to stop mid-write: got %q", line)
	}
	temp := filepath.Join(dir, filepath.FromSlash(rel))
	if fi, err := os.Stat(temp); err != nil || fi.Size() != 4<<20/12*12 {
		t.Fatalf("the child's temp file %s: %v %v", temp, fi, err)
	}

	w, err := NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Another agentd is still writing: its temp stays.
	if removed, err := SweepTemps(context.Background(), w, 10*time.Minute); err != nil || len(removed) != 0 {
		t.Fatalf("sweep while the writer lives removed %v (%v)", removed, err)
	}

	child.Kill(t)
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("the killed writer left no temp file: %v", err)
	}
	removed, err := SweepTemps(context.Background(), w, 10*time.Minute)
	if err != nil || !slices.Equal(removed, []string{temp}) {
		t.Fatalf("sweep after the kill removed %v (%v), want %s", removed, err, temp)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "big.bin")); err != nil || string(b) != "old content\n" {
		t.Errorf("the target after the kill: %q %v", b, err)
	}
}

func TestSweepKeepsTempsOfLiveOrLockingWriters(t *testing.T) {
	e := newEnv(t, Options{})
	// An exited process: its PID is free (reuse within the test is next to impossible, and a
	// reused PID has another start time).
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := dead.ProcessState.Pid()
	mine := filepath.Join(e.ws, tempName())
	deadTemp := filepath.Join(e.ws, "sub", fmt.Sprintf("%s%d-1-0123456789abcdef", TempPrefix, deadPID))
	locked := filepath.Join(e.ws, fmt.Sprintf("%s%d-1-fedcba9876543210", TempPrefix, deadPID))
	reused := filepath.Join(e.ws, fmt.Sprintf("%s%d-1-aaaaaaaaaaaaaaaa", TempPrefix, os.Getpid())) // our PID, another start time
	notOurs := filepath.Join(e.ws, TempPrefix+"x-1-0123456789abcdef")
	for _, p := range []string{mine, deadTemp, locked, reused, notOurs} {
		mustWrite(t, p, "partial")
	}
	// A writer in another PID namespace: its PID means nothing here, but it holds the lock.
	lf, err := os.Open(locked)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	removed, err := SweepTemps(context.Background(), e.w, time.Hour)
	slices.Sort(removed)
	if want := []string{reused, deadTemp}; err != nil || !slices.Equal(removed, want) {
		t.Fatalf("removed %v (%v), want %v", removed, err, want)
	}
	for _, p := range []string{mine, locked, notOurs} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed", p)
		}
	}
	syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	if removed, err := SweepTemps(context.Background(), e.w, time.Hour); err != nil || !slices.Equal(removed, []string{locked}) {
		t.Errorf("after the lock was released: removed %v (%v), want %s", removed, err, locked)
	}
}
