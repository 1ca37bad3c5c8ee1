package tools

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

type regTool struct{ name string }

func (t regTool) Name() string        { return t.name }
func (t regTool) Description() string { return "does " + t.name }
func (t regTool) Spec() *Spec         { return coerceSpec }
func (t regTool) Execute(ctx context.Context, c *Call) (Output, error) {
	return Output{}, nil
}

// appendLine does a read-modify-write with a wide window between the read and the write, so
// unserialized writers lose updates.
func appendLine(path, line string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	time.Sleep(time.Millisecond)
	return os.WriteFile(path, append(b, line+"\n"...), 0o644)
}

func concurrentAppends(t *testing.T, q *MutationQueue, paths []string, n int) string {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := paths[i%len(paths)]
			unlock := q.Lock(p)
			defer unlock()
			if err := appendLine(p, strconv.Itoa(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkAllLines(t *testing.T, content string, n int) {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(content), "\n") {
		seen[l] = true
	}
	for i := range n {
		if !seen[strconv.Itoa(i)] {
			t.Errorf("edit %d was lost", i)
		}
	}
}

func TestMutationQueueFiftyEditsOneFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var q MutationQueue
	checkAllLines(t, concurrentAppends(t, &q, []string{p}, 50), 50)
	if len(q.files) != 0 {
		t.Errorf("queue keeps %d entries after all unlocks", len(q.files))
	}
}

func TestMutationQueueThroughSymlinkedPaths(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(real, "f.txt")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(p, filepath.Join(dir, "direct")); err != nil {
		t.Fatal(err)
	}
	paths := []string{p, filepath.Join(dir, "link", "f.txt"), filepath.Join(dir, "direct"),
		filepath.Join(dir, "link", "..", "real", "f.txt")}
	var q MutationQueue
	checkAllLines(t, concurrentAppends(t, &q, paths, 50), 50)
}

func TestMutationQueueDifferentFilesRunInParallel(t *testing.T) {
	dir := t.TempDir()
	var q MutationQueue
	unlockA := q.Lock(filepath.Join(dir, "a"))
	defer unlockA()
	got := make(chan struct{})
	go func() {
		unlock := q.Lock(filepath.Join(dir, "b"))
		unlock()
		close(got)
	}()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("a lock on b waited for the lock on a")
	}
}

func TestCanonicalOfMissingFileUsesResolvedParent(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(Canonical(real), "new", "file.go")
	if got := Canonical(filepath.Join(dir, "link", "new", "file.go")); got != want {
		t.Errorf("Canonical = %q, want %q", got, want)
	}
}
