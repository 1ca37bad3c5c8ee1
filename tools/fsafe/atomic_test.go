package fsafe

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// bigContents are the two contents the child alternates: different sizes and patterns, so a
// torn file (a prefix, a mix, a truncation) matches neither.
func bigContents() (a, b []byte) {
	a = bytes.Repeat([]byte("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"), 8<<20/32)
	b = bytes.Repeat([]byte("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n"), 6<<20/32)
	return a, b
}

// atomicWriterChild writes big.bin through WriteFile in a loop until it is killed.
func atomicWriterChild(dir string) {
	w, err := NewWorkspace(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	p, err := w.Resolve("big.bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
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
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=atomic-writer", dirEnv+"="+dir)
		switch kind {
		case 1:
			cmd.Env = append(cmd.Env, blockEnv+"=2") // after the first write (b), before the second's rename
		case 2:
			cmd.Env = append(cmd.Env, blockEnv+"=1")
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewReader(out)
		if line, _ := lines.ReadString('\n'); line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child did not start: %q %s", line, stderr.String())
		}
		switch kind {
		case 0:
			time.Sleep(time.Duration(rand.IntN(80)) * time.Millisecond) // a random moment, not a sync
		case 1:
			if line, _ := lines.ReadString('\n'); line != "wrote\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("kill %d: waiting for the child's first complete write, got %q %s", i, line, stderr.String())
			}
			fallthrough
		case 2:
			if line, _ := lines.ReadString('\n'); line != "renaming\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("kill %d: waiting for the child to stop before its rename, got %q %s", i, line, stderr.String())
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("child ended on its own: %v %s", err, stderr.String())
		}

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
	before := snapshot(t, e.outside)

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
	if _, same := sameSnapshot(before, snapshot(t, e.outside)); !same {
		t.Errorf("outside changed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SweepTemps(ctx, e.w, 0); err == nil {
		t.Errorf("a cancelled sweep reported success")
	}
}
