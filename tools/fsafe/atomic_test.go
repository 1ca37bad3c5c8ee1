package fsafe

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// The kill-mid-write test re-executes the test binary as a writer child.
const (
	childEnv = "FSAFE_TEST_CHILD"
	dirEnv   = "FSAFE_TEST_DIR"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "atomic-writer":
		atomicWriterChild(os.Getenv(dirEnv))
		return
	case "stuck-writer":
		stuckWriterChild(os.Getenv(dirEnv))
		return
	}
	os.Exit(m.Run())
}

// childResolve resolves rel in a workspace at dir for a child process, which exits 2 if it
// cannot.
func childResolve(dir, rel string) Path {
	exit := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w, err := NewWorkspace(dir)
	if err != nil {
		exit(err)
	}
	p, err := w.Resolve(rel)
	if err != nil {
		exit(err)
	}
	return p
}

// bigContents are the two contents the child alternates: different sizes and patterns, so a
// torn file (a prefix, a mix, a truncation) matches neither.
func bigContents() (a, b []byte) {
	a = bytes.Repeat([]byte("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"), 8<<20/32)
	b = bytes.Repeat([]byte("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n"), 6<<20/32)
	return a, b
}

// atomicWriterChild writes big.bin through WriteFile in a loop until it is killed.
func atomicWriterChild(dir string) {
	p := childResolve(dir, "big.bin")
	a, b := bigContents()
	if n, _ := strconv.Atoi(os.Getenv(blockEnv)); n > 0 {
		// Stop before rename number n, with that temp file written whole: the parent kills here.
		renames := 0
		testHookBeforeRename = func(string) {
			if renames++; renames == n {
				fmt.Println("renaming")
				select {}
			}
		}
	}
	fmt.Println("ready")
	for i := 0; ; i++ {
		data := b
		if i%2 == 1 {
			data = a
		}
		if _, err := WriteFile(p, data, WriteOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Println("wrote")
	}
}

// blockEnv makes the atomic writer child stop right before its n-th rename.
const blockEnv = "AGENTD_FSAFE_TEST_BLOCK_BEFORE_RENAME"

func TestKillMidWriteNeverTearsTheFile(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "big.bin")
	a, b := bigContents()
	if err := os.WriteFile(target, a, 0o640); err != nil {
		t.Fatal(err)
	}
	// Three kinds of kill, in turn: at a random moment (anywhere in a write, or between writes);
	// after the child's first write completed and with its second stopped before the rename (the
	// new content must be there whole, and a temp left); and with the child stopped before its
	// first rename (the old content, and a temp left). The last two synchronise on the child's
	// own report, so they land where they should whatever the machine's load.
	midWrite, sawB := 0, false
	for i := 0; i < 12; i++ {
		kind := i % 3
		env := []string{childEnv + "=atomic-writer", dirEnv + "=" + dir}
		switch kind {
		case 1:
			env = append(env, blockEnv+"=2") // after the first write (b), before the second's rename
		case 2:
			env = append(env, blockEnv+"=1")
		}
		child := testutil.StartChild(t, env...)
		if line := child.ReadLine(); line != "ready" {
			child.Fatalf(t, "child did not start: %q", line)
		}
		switch kind {
		case 0:
			time.Sleep(time.Duration(rand.IntN(80)) * time.Millisecond) // a random moment, not a sync
		case 1:
			if line := child.ReadLine(); line != "wrote" {
				child.Fatalf(t, "kill %d: waiting for the child's first complete write, got %q", i, line)
			}
			fallthrough
		case 2:
			if line := child.ReadLine(); line != "renaming" {
				child.Fatalf(t, "kill %d: waiting for the child to stop before its rename, got %q", i, line)
			}
		}
		child.Kill(t)

		got, err := os.ReadFile(target)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case bytes.Equal(got, a):
		case bytes.Equal(got, b):
			sawB = true
		default:
			t.Fatalf("kill %d: torn file: %d bytes, neither the old (%d) nor the new (%d) content", i, len(got), len(a), len(b))
		}
		if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o640 {
			t.Fatalf("mode after kill %d: %v %v", i, fi.Mode(), err)
		}
		switch n := temps(t, dir); {
		case n > 0:
			midWrite++
		case kind == 2:
			t.Fatalf("kill %d: the child was stopped before its rename, but no temp file is left", i)
		}
		if kind == 1 && !bytes.Equal(got, b) {
			t.Fatalf("kill %d: the child's first write completed, but the file does not hold its content", i)
		}
	}
	t.Logf("%d kills left a temp file behind (killed mid-write); new content seen: %v", midWrite, sawB)
	if midWrite == 0 || !sawB {
		t.Fatalf("no kill landed mid-write (%d) or no write completed (%v): the test did not exercise the writer", midWrite, sawB)
	}

	w, err := NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	removed, err := SweepTemps(context.Background(), w, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) == 0 || temps(t, dir) != 0 {
		t.Fatalf("sweep removed %v, %d temps remain", removed, temps(t, dir))
	}
}

func temps(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			n++
		}
	}
	return n
}

func TestSweepTempsRemovesOnlyOldTempsOfOurs(t *testing.T) {
	e := newEnv(t, Options{})
	old := time.Now().Add(-time.Hour)
	mk := func(rel string, age time.Time) string {
		p := filepath.Join(e.ws, rel)
		mustWrite(t, p, "x")
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldTemp := mk("sub/"+TempPrefix+"0123456789abcdef", old)
	freshTemp := mk(TempPrefix+"fedcba9876543210", time.Now())
	notOurs := mk(TempPrefix+"notours", old)
	upper := mk(TempPrefix+"0123456789ABCDEF", old)
	// A symlink named like a temp, pointing outside: never followed, never removed.
	link := filepath.Join(e.ws, TempPrefix+"aaaaaaaaaaaaaaaa")
	mustSymlink(t, filepath.Join(e.outside, "secret.txt"), link)
	before := testutil.Snapshot(t, e.outside)

	removed, err := SweepTemps(context.Background(), e.w, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != oldTemp {
		t.Fatalf("removed %v, want only %s", removed, oldTemp)
	}
	for _, p := range []string{freshTemp, notOurs, upper, link} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed", p)
		}
	}
	if c := testutil.SnapshotChanges(before, testutil.Snapshot(t, e.outside)); len(c) > 0 {
		t.Errorf("outside changed: %s", strings.Join(c, "; "))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SweepTemps(ctx, e.w, 0); err == nil {
		t.Errorf("a cancelled sweep reported success")
	}
}
