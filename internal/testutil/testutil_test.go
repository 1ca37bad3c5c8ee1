package testutil

import (
	"fmt"
	"go/build"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotSeesEveryKindOfChange: each change a test relies on Snapshot to notice is named by
// SnapshotChanges, and an untouched tree gives none.
func TestSnapshotSeesEveryKindOfChange(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a"), "one\n")
	write(t, filepath.Join(dir, "gone"), "x\n")
	if err := os.Symlink("a", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	before := Snapshot(t, dir)
	if c := SnapshotChanges(before, Snapshot(t, dir)); len(c) != 0 {
		t.Fatalf("an untouched tree changed: %q", c)
	}
	changes := map[string]func(){
		"content": func() { write(t, filepath.Join(dir, "a"), "two\n") },
		"mode":    func() { os.Chmod(filepath.Join(dir, "a"), 0o600) },
		"target": func() {
			os.Remove(filepath.Join(dir, "link"))
			os.Symlink("gone", filepath.Join(dir, "link"))
		},
		"added":   func() { write(t, filepath.Join(dir, "new"), "") },
		"removed": func() { os.Remove(filepath.Join(dir, "gone")) },
	}
	for what, change := range changes {
		change()
		after := Snapshot(t, dir)
		if c := SnapshotChanges(before, after); len(c) != 1 {
			t.Errorf("%s: want one change, got %q", what, c)
		}
		before = after
	}
	// A touch shows only with times.
	withTimes := SnapshotTimes(t, dir)
	old := time.Unix(1e9, 0)
	if err := os.Chtimes(filepath.Join(dir, "a"), old, old); err != nil {
		t.Fatal(err)
	}
	if c := SnapshotChanges(before, Snapshot(t, dir)); len(c) != 0 {
		t.Errorf("Snapshot saw a touch: %q", c)
	}
	if c := SnapshotChanges(withTimes, SnapshotTimes(t, dir)); len(c) != 1 || !strings.Contains(c[0], "a changed") {
		t.Errorf("SnapshotTimes: want a's change, got %q", c)
	}
}

// TestUnixGreeterGreetsAndCounts: a connection reads the greeting and is counted.
func TestUnixGreeterGreetsAndCounts(t *testing.T) {
	path, n := UnixGreeter(t)
	for i := 1; i <= 2; i++ {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(c) // the greeter closes the connection after greeting
		c.Close()
		if err != nil || string(b) != Greeting {
			t.Fatalf("connection %d read %q, %v", i, b, err)
		}
		// The count is incremented before the greeting is written, so it is visible now.
		if got := n.Load(); got != int32(i) {
			t.Fatalf("after %d connections the count is %d", i, got)
		}
	}
}

// recorder is a testing.TB that records a skip or a failure and, like testing.T, does not return
// from either: call it through record.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                          {}
func (r *recorder) Skipf(format string, args ...any) { r.skipped = format; runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// record runs fn on a recorder in a goroutine of its own (Goexit ends only that goroutine).
func record(t *testing.T, fn func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r
}

// TestNeedTool: a missing tool skips, except under CI=true where it fails; a present one does
// neither.
func TestNeedTool(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		r := record(t, func(tb testing.TB) { NeedTool(tb, "agentd-no-such-tool-here", "nothing") })
		if ci == "true" && (r.failed == "" || r.skipped != "") || ci == "" && (r.skipped == "" || r.failed != "") {
			t.Errorf("CI=%q, missing tool: skipped %q, failed %q", ci, r.skipped, r.failed)
		}
		r = record(t, func(tb testing.TB) { NeedTool(tb, "sh", "dash") })
		if r.skipped != "" || r.failed != "" {
			t.Errorf("CI=%q, sh present: skipped %q, failed %q", ci, r.skipped, r.failed)
		}
	}
}

// TestImportedOnlyByTests keeps the import direction whole: this package imports nothing of the
// module, and no non-test file of the module imports it.
func TestImportedOnlyByTests(t *testing.T) {
	const module = "github.com/agentd/agentd"
	const self = module + "/internal/testutil"
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found two levels above internal/testutil: %v", err)
	}
	pkgs := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" ||
			name == "node_modules" || name == "editors") {
			return filepath.SkipDir
		}
		if filepath.Dir(path) == root && (name == "out" || name == "bin") {
			return filepath.SkipDir // build and test output (.gitignore), not the module's packages
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		pkgs++
		rel, _ := filepath.Rel(root, path)
		for _, imp := range pkg.Imports {
			if imp == self {
				t.Errorf("%s imports %s outside its tests", rel, self)
			}
			if filepath.ToSlash(rel) == "internal/testutil" && strings.HasPrefix(imp, module+"/") {
				t.Errorf("testutil imports %s: it must stay a leaf", imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pkgs < 10 {
		t.Fatalf("only %d packages found under %s: the walk is broken", pkgs, root)
	}
}

const childRole = "AGENTD_TESTUTIL_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childRole) {
	case "block":
		fmt.Println("ready")
		select {}
	case "exit":
		fmt.Println("bye")
		fmt.Fprintln(os.Stderr, "leaving on my own")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestChild: a child's lines are read in order; Kill passes when SIGKILL ends the child and fails,
// with the child's stderr, when the child ended on its own.
func TestChild(t *testing.T) {
	c := StartChild(t, childRole+"=block")
	if line := c.ReadLine(); line != "ready" {
		c.Fatalf(t, "first line %q, want ready", line)
	}
	if r := record(t, c.Kill); r.failed != "" {
		t.Errorf("killing a blocked child failed: %s", r.failed)
	}

	c = StartChild(t, childRole+"=exit")
	if line := c.ReadLine(); line != "bye" {
		c.Fatalf(t, "first line %q, want bye", line)
	}
	if line := c.ReadLine(); line != "" {
		t.Errorf("after the child exited, read %q", line)
	}
	r := record(t, c.Kill)
	if !strings.Contains(r.failed, "ended on its own") || !strings.Contains(r.failed, "leaving on my own") {
		t.Fatalf("Kill on a child that had ended on its own: want a failure quoting its stderr, got %q", r.failed)
	}
}
