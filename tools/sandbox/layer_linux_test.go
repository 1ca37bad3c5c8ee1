//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// changeLines renders a change set as "kind type path[ from]" lines, sorted.
func changeLines(chs []Change) []string {
	var out []string
	for _, c := range chs {
		s := fmt.Sprintf("%s %s %s", c.Kind, c.Type, c.Path)
		if c.From != "" {
			s += " from " + c.From
		}
		if c.Conflict {
			s += " conflict"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestCommandsWriteToTheirLayer: in bubblewrap mode a command writes to a copy-on-write layer,
// never to the workspace, whatever it writes (git hooks, nested editor configs, a new
// repository shape, deletions, renames, modes), and Changes lists exactly what it did.
func TestCommandsWriteToTheirLayer(t *testing.T) {
	sb := requireMode(t, ModeBwrap)
	e := newEnv(t)
	mustWrite(t, e.ws+"/src/main.go", "package main\n")
	mustWrite(t, e.ws+"/src/old.txt", "old name\n")
	mustWrite(t, e.ws+"/gone.txt", "bye\n")
	if err := os.MkdirAll(e.ws+"/build/out", 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, e.ws+"/build/out/a.o", "obj\n")
	r := runBash(t, sb, e.policy(), `set -e
		echo '#!/bin/sh' > .git/hooks/pre-commit
		mkdir -p sub/.vscode && echo '{}' > sub/.vscode/tasks.json
		mkdir -p plant && echo 'ref: refs/heads/x' > plant/HEAD && ln -s /tmp plant/objects
		echo 'package main // changed' > src/main.go
		mv src/old.txt src/new.txt
		chmod +x src/main.go
		rm gone.txt
		rm -r build
		cat src/new.txt`)
	if r.code != 0 || !strings.Contains(r.stdout, "old name") {
		t.Fatalf("command failed (a build must see its own outputs):\n%s", r)
	}
	want := []string{
		"created dir plant", "created dir sub", "created dir sub/.vscode",
		"created file .git/hooks/pre-commit", "created file plant/HEAD", "created file sub/.vscode/tasks.json",
		"created symlink plant/objects",
		"deleted dir build", "deleted dir build/out", "deleted file build/out/a.o", "deleted file gone.txt",
		"modified file src/main.go", "renamed file src/new.txt from src/old.txt",
	}
	if got := changeLines(r.changes); !slices.Equal(got, want) {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, p := range []string{".git/hooks/pre-commit", "sub", "plant", "src/new.txt"} {
		if hostHas(filepath.Join(e.ws, p)) {
			t.Errorf("%s reached the workspace", p)
		}
	}
	if b, _ := os.ReadFile(e.ws + "/src/main.go"); string(b) != "package main\n" {
		t.Errorf("src/main.go changed in the workspace: %q", b)
	}
	if !hostHas(e.ws+"/gone.txt") || !hostHas(e.ws+"/build/out/a.o") {
		t.Error("a deletion reached the workspace")
	}
	if ents, _ := os.ReadDir(e.layers); len(ents) != 0 {
		t.Errorf("layers left after Release: %v", ents)
	}
}

// TestLayerConflicts: a file the user changed while the command ran is a conflict.
func TestLayerConflicts(t *testing.T) {
	sb := requireMode(t, ModeBwrap)
	e := newEnv(t)
	mustWrite(t, e.ws+"/a.txt", "one\n")
	mustWrite(t, e.ws+"/b.txt", "one\n")
	fifo := filepath.Join(t.TempDir(), "go")
	ready := filepath.Join(e.tmp, "ready")
	p := e.policy()
	p.WritableDirs = []string{filepath.Dir(fifo)}
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() {
		done <- runBash(t, sb, p, fmt.Sprintf(`echo two > a.txt; echo two > b.txt; touch %s; read x < %s`, ready, fifo))
	}()
	waitFile(t, ready)
	mustWrite(t, e.ws+"/a.txt", "user\n")
	if err := os.WriteFile(fifo, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	r := <-done
	want := []string{"modified file a.txt conflict", "modified file b.txt"}
	if got := changeLines(r.changes); !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q\n%s", got, want, r)
	}
}

// TestSweepLayers: the layer of a command whose daemon is gone is discarded, never applied; a
// running command's is left alone.
func TestSweepLayers(t *testing.T) {
	sb := requireMode(t, ModeBwrap)
	e := newEnv(t)
	c, err := sb.Command(context.Background(), e.policy(), []string{"true"}, e.ws)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	dead := filepath.Join(e.layers, "123-dead")
	if err := os.MkdirAll(dead+"/0/upper", 0o700); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, dead+"/0/upper/planted", "x")
	mustWrite(t, dead+"/owner", "123\n")
	// An apply lock beside the layers is not a layer: removing it while another process holds it
	// would let a third one take a new lock file at the same name.
	lock := filepath.Join(e.layers, "apply-0123456789abcdef.lock")
	mustWrite(t, lock, "")
	if got := SweepLayers(e.layers); !slices.Equal(got, []string{dead}) {
		t.Errorf("swept %q, want the dead layer only", got)
	}
	if !hostHas(c.layers.dir) || hostHas(dead) || !hostHas(lock) {
		t.Error("sweep removed the running command's layer or an apply lock, or kept the dead one")
	}
}

// TestConcurrentLayers: commands started together in one workspace each get a layer of their own.
func TestConcurrentLayers(t *testing.T) {
	sb := requireMode(t, ModeBwrap)
	e := newEnv(t)
	p := e.policy()
	const workers = 6
	var wg sync.WaitGroup
	got := make([][]string, workers)
	for i := range workers {
		wg.Go(func() {
			got[i] = changeLines(runBash(t, sb, p, fmt.Sprintf("echo %d > f%d", i, i)).changes)
		})
	}
	wg.Wait()
	for i, g := range got {
		if want := []string{fmt.Sprintf("created file f%d", i)}; !slices.Equal(g, want) {
			t.Errorf("command %d: %q, want %q", i, g, want)
		}
	}
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o600) }

// waitFile waits until p exists: the command signals through it (inotify on its directory).
func waitFile(t *testing.T, p string) {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if _, err := syscall.InotifyAddWatch(fd, filepath.Dir(p), syscall.IN_CREATE|syscall.IN_MOVED_TO|syscall.IN_ATTRIB); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for !hostHas(p) {
		if _, err := syscall.Read(fd, buf); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMaskRefusesTooManyKeys: with 40,000 files named like keys every command failed with
// "argument list too long" (one bubblewrap mount per masked file, on the command line). The
// options now go through --args, and beyond what one sandbox can mount the command is refused
// with a clear error rather than failing obscurely (or running unmasked).
func TestMaskRefusesTooManyKeys(t *testing.T) {
	sb := requireMode(t, ModeBwrap)
	e := newEnv(t)
	keys := filepath.Join(e.ws, "keys")
	if err := os.MkdirAll(keys, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 40000 {
		mustWrite(t, filepath.Join(keys, fmt.Sprintf("k%05d.pem", i)), "PRIVATE\n")
	}
	_, err := sb.Command(context.Background(), e.policy(), []string{"true"}, e.ws)
	if err == nil || !strings.Contains(err.Error(), "40000 sensitive files") || !strings.Contains(err.Error(), "was not run") {
		t.Fatalf("Command: %v; want a clear refusal", err)
	}
	// Within the limit, every key is masked.
	for i := MaxMasked - 100; i < 40000; i++ {
		os.Remove(filepath.Join(keys, fmt.Sprintf("k%05d.pem", i)))
	}
	r := runBash(t, sb, e.policy(), "cat keys/k00000.pem keys/k02399.pem; echo done")
	if r.code != 0 || strings.Contains(r.stdout, "PRIVATE") || !strings.Contains(r.stdout, "done") {
		t.Errorf("%d keys: %s", MaxMasked-100, r)
	}
}

// TestMaskFailsClosed: a sensitive file below a path longer than PATH_MAX cannot be named by a
// mount; the walk (by directory handles) finds it, and the command does not run, saying why.
// Before, the walk opened directories by absolute path, skipped the error, and ran the command
// with the file unmasked.
func TestMaskFailsClosed(t *testing.T) {
	sb := requireMode(t, ModeBwrap)
	e := newEnv(t)
	fd, err := syscall.Open(e.ws, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("d", 250)
	for range 20 { // 20 × 251 bytes: beyond PATH_MAX (4096)
		if err := syscall.Mkdirat(fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := syscall.Openat(fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(fd)
		fd = next
	}
	env, err := syscall.Openat(fd, ".env", syscall.O_CREAT|syscall.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Write(env, []byte("TOKEN=secret\n"))
	syscall.Close(env)
	syscall.Close(fd)
	t.Cleanup(func() { exec.Command("rm", "-rf", e.ws).Run() })
	_, err = sb.Command(context.Background(), e.policy(), []string{"true"}, e.ws)
	if err == nil || !strings.Contains(err.Error(), "cannot be masked") || !strings.Contains(err.Error(), "was not run") {
		t.Fatalf("Command: %v; want a refusal naming the unmaskable file", err)
	}
}

// TestMaskSurvivesHostReplacement: the mount watch that stopped a command when the host replaced
// a masked file is gone; the masks now sit on the layer's merged view, which a rename on the host
// (an editor saving .env) does not detach: the command still reads the mask.
func TestMaskSurvivesHostReplacement(t *testing.T) {
	sb := requireMode(t, ModeBwrap)
	e := newEnv(t)
	mustWrite(t, e.ws+"/.env", "OLD=1\n")
	ready, gate := filepath.Join(e.tmp, "ready"), filepath.Join(e.tmp, "gate")
	for _, p := range []string{ready, gate} {
		if err := mkfifo(p); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan result, 1)
	go func() {
		done <- runBash(t, sb, e.policy(), fmt.Sprintf(`cat .env; echo ready > %s; read x < %s; cat .env; echo end`, ready, gate))
	}()
	if b, err := os.ReadFile(ready); err != nil || string(b) != "ready\n" {
		t.Fatalf("the command did not start: %q %v", b, err)
	}
	mustWrite(t, e.ws+"/.env.tmp", "NEW=secret\n")
	if err := os.Rename(e.ws+"/.env.tmp", e.ws+"/.env"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if strings.Contains(r.stdout, "OLD") || strings.Contains(r.stdout, "secret") || !strings.Contains(r.stdout, "end") {
		t.Errorf("a masked file was readable:\n%s", r)
	}
}
