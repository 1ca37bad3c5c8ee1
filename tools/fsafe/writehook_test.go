package fsafe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tempFileIn reports whether dir holds one of WriteFile's temporary files.
func tempFileIn(t *testing.T, dir string) bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			return true
		}
	}
	return false
}

// The write hook (a checkpoint's durable intent record) runs while the temporary file is being
// written, so the two fsyncs overlap, and the file is replaced only once the hook returned.
func TestWriteHookOverlapsTheTempFileAndPrecedesTheRename(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	if _, err := e.fs.Read(ctx, "a.txt"); err != nil {
		t.Fatal(err)
	}
	tg, err := e.fs.PrepareWrite(ctx, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	hctx := WithWriteHook(ctx, func(p Path, data []byte) error {
		close(entered)
		<-release
		return nil
	})
	done := make(chan error, 1)
	go func() { _, err := e.fs.Commit(hctx, tg, []byte("new\n")); done <- err }()
	<-entered
	deadline := time.Now().Add(10 * time.Second)
	for !tempFileIn(t, e.ws) {
		if time.Now().After(deadline) {
			close(release)
			t.Fatal("no temporary file appeared while the write hook was running: the hook does not overlap the write")
		}
		time.Sleep(time.Millisecond)
	}
	if got := readString(t, filepath.Join(e.ws, "a.txt")); got != "inside a\n" {
		t.Errorf("a.txt = %q before the hook returned, want the old content", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(e.ws, "a.txt")); got != "new\n" {
		t.Errorf("a.txt = %q, want the new content", got)
	}
	if tempFileIn(t, e.ws) {
		t.Error("a temporary file was left behind")
	}
}

func TestWriteHookErrorLeavesTheFile(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	if _, err := e.fs.Read(ctx, "a.txt"); err != nil {
		t.Fatal(err)
	}
	tg, err := e.fs.PrepareWrite(ctx, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	hctx := WithWriteHook(ctx, func(Path, []byte) error { return errors.New("disk full") })
	if _, err := e.fs.Commit(hctx, tg, []byte("new\n")); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Commit = %v, want the hook's error", err)
	}
	if got := readString(t, filepath.Join(e.ws, "a.txt")); got != "inside a\n" {
		t.Errorf("a.txt = %q, want it untouched", got)
	}
	if tempFileIn(t, e.ws) {
		t.Error("a temporary file was left behind")
	}
}
