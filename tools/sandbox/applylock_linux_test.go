//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// applyLockHolderArg makes the test binary another agentd process that holds the apply lock of
// one root (holdApplyLock).
const applyLockHolderArg = "__sandbox-apply-lock-holder"

// holdApplyLock takes the apply lock of root under dir, says "held" on stdout and keeps it
// until its stdin ends.
func holdApplyLock(dir, root string) int {
	unlock, err := LockApplyRoots(context.Background(), dir, []string{root})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("held")
	_, _ = io.Copy(io.Discard, os.Stdin)
	unlock()
	return 0
}

// otherProcess starts another process holding the apply lock of root under dir, and returns
// once it holds it; closing the returned writer makes it release the lock and exit.
func otherProcess(t *testing.T, dir, root string) (release func()) {
	t.Helper()
	cmd := exec.Command(testBinary(t), applyLockHolderArg, dir, root)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			stdin.Close()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(release)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "held\n" {
		t.Fatalf("the other process did not take the lock: %q %v", line, err)
	}
	return release
}

// waitHook makes LockApplyRoots report, on the returned channel, each lock under dir it finds
// held and is about to wait for.
func waitHook(t *testing.T, dir string) <-chan string {
	waits := make(chan string, 8)
	testHookApplyLockWait = func(p string) {
		if strings.HasPrefix(p, dir+string(filepath.Separator)) {
			waits <- p
		}
	}
	t.Cleanup(func() { testHookApplyLockWait = nil })
	return waits
}

// TestApplyLockWaitsForAnotherProcess: the apply lock of a workspace root held by another agentd
// process (another open file description, in another process) is waited for and taken only
// once that process released it; a lock of another root is not; a wait given up (the turn
// cancelled) fails with ErrApplyLock and leaves the lock free once the other process is done.
func TestApplyLockWaitsForAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	waits := waitHook(t, dir)
	const root, other = "/home/u/project", "/home/u/other"

	// Another root's lock does not wait.
	release := otherProcess(t, dir, other)
	unlock, err := LockApplyRoots(context.Background(), dir, []string{root})
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	select {
	case p := <-waits:
		t.Errorf("waited for %s, which another root's holder does not hold", p)
	default:
	}
	release()

	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	release = otherProcess(t, dir, root)
	done := make(chan error, 1)
	go func() {
		// The roots in another order, and twice: one lock, taken once.
		unlock, err := LockApplyRoots(context.Background(), dir, []string{other, root, root})
		if err == nil {
			note("locked")
			unlock()
		}
		done <- err
	}()
	select {
	case p := <-waits:
		if filepath.Base(p) != filepath.Base(applyLockPath(dir, root)) {
			t.Errorf("waited for %s, want the lock of %s", p, root)
		}
	case err := <-done:
		t.Fatalf("the lock was taken while another process held it (err %v)", err)
	}
	note("released")
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "released,locked" {
		t.Errorf("order %q, want the other process's release before our lock", order)
	}

	// Cancelled while waiting: a typed error, and the lock is free again once the other
	// process is done.
	release = otherProcess(t, dir, root)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := LockApplyRoots(ctx, dir, []string{root})
		done <- err
	}()
	<-waits
	cancel()
	err = <-done
	if !errors.Is(err, ErrApplyLock) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a wait given up: %v, want ErrApplyLock and context.Canceled", err)
	}
	release()
	unlock, err = LockApplyRoots(context.Background(), dir, []string{root})
	if err != nil {
		t.Fatal(err)
	}
	unlock()

	if _, err := LockApplyRoots(context.Background(), "", []string{root}); !errors.Is(err, ErrApplyLock) {
		t.Errorf("no layer directory: %v, want ErrApplyLock", err)
	}
}

// BenchmarkLockApplyRoots is the cost an accepted follow-up pays for the lock when no one else
// holds it: open, flock, close.
func BenchmarkLockApplyRoots(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		unlock, err := LockApplyRoots(context.Background(), dir, []string{"/home/u/project"})
		if err != nil {
			b.Fatal(err)
		}
		unlock()
	}
}
