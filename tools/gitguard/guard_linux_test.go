//go:build linux

package gitguard

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repo makes a workspace holding a git repository with one commit and a nested repository
// nested/ (an existing one, the user's).
func repo(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q")
	write(t, dir, "a.txt", "a\n")
	git(t, dir, "add", "a.txt")
	git(t, dir, "commit", "-qm", "one")
	git(t, dir, "init", "-q", "nested")
	return dir
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func write(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(dir, rel string) bool {
	_, err := os.Lstat(filepath.Join(dir, rel))
	return err == nil
}

// guarded runs change between Begin and End and returns the report.
func guarded(t *testing.T, ws, quarantine string, writable []string, change func()) *Report {
	t.Helper()
	w, err := New(Options{Roots: []string{ws}, Writable: writable, QuarantineDir: quarantine}).Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	change()
	return w.End()
}

func wantActions(t *testing.T, r *Report, want ...string) {
	t.Helper()
	var got []string
	for _, a := range r.Actions {
		got = append(got, a.Change+" "+a.Path)
		if a.Err != "" {
			t.Errorf("undo of %s failed: %s", a.Path, a.Err)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("actions:\n%s\nwant:\n%s\nreport:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), r.Text())
	}
}

const fsmonitor = "[core]\n\tfsmonitor = /bin/evil\n"

func TestGuardUndoesEveryKindOfPlant(t *testing.T) {
	ws := repo(t)
	q := t.TempDir()
	outside := t.TempDir()
	config := read(t, ws, ".git/config")
	nestedConfig := read(t, ws, "nested/.git/config")
	hook := read(t, ws, ".git/hooks/pre-commit.sample")
	r := guarded(t, ws, q, []string{outside}, func() {
		write(t, ws, ".git/commondir", "../planted\n")
		write(t, ws, ".git/config.worktree", fsmonitor)
		write(t, ws, "sub/.git/config", fsmonitor)
		write(t, ws, "sub/.git/HEAD", "ref: refs/heads/main\n")
		write(t, ws, "made/config", fsmonitor)
		write(t, ws, "deep/er/.git", "gitdir: ../../made\n")
		write(t, ws, "nested/.git/config", nestedConfig+"[core]\n\thooksPath = ../../hooks\n")
		write(t, ws, ".git/config", config+"[core]\n\tpager = /bin/evil\n")
		write(t, ws, ".git/hooks/post-checkout", "#!/bin/sh\n")
		if err := os.Chmod(filepath.Join(ws, ".git/hooks/pre-commit.sample"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(ws, ".git/hooks/pre-push.sample")); err != nil {
			t.Fatal(err)
		}
		write(t, ws, "bare/HEAD", "ref: refs/heads/main\n")
		write(t, ws, "bare/config", fsmonitor)
		write(t, ws, "bare/objects/.keep", "")
		write(t, ws, "bare/refs/.keep", "")
		write(t, ws, ".git/modules/m/config", fsmonitor)
		write(t, outside, "plant/.git/config", fsmonitor)
		if err := os.Symlink(filepath.Join(outside, "plant"), filepath.Join(ws, "link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("elsewhere", filepath.Join(ws, "harmless")); err != nil {
			t.Fatal(err)
		}
		write(t, ws, ".GIT", "gitdir: made\n")
	})
	wantActions(t, r,
		"created .GIT",
		"created deep/er/.git",
		"created sub/.git",
		"created link",
		"created .git/commondir",
		"changed .git/config",
		"created .git/config.worktree",
		"created .git/hooks/post-checkout",
		"changed .git/hooks/pre-commit.sample",
		"removed .git/hooks/pre-push.sample",
		"created .git/modules",
		"created bare/config",
		"created made/config", // made/ is a git directory through the planted .git files
		"changed nested/.git/config",
	)
	for _, rel := range []string{".GIT", ".git/commondir", ".git/config.worktree", "sub/.git", "deep/er/.git", ".git/modules",
		"bare/config", "link", ".git/hooks/post-checkout"} {
		if exists(ws, rel) {
			t.Errorf("%s still exists", rel)
		}
	}
	if !exists(ws, "harmless") || !exists(ws, "made") || !exists(ws, "bare/HEAD") {
		t.Error("entries that git does not act on were removed")
	}
	if read(t, ws, ".git/config") != config || read(t, ws, "nested/.git/config") != nestedConfig ||
		read(t, ws, ".git/hooks/pre-commit.sample") != hook || !exists(ws, ".git/hooks/pre-push.sample") {
		t.Error("control files not restored")
	}
	if st, err := os.Stat(filepath.Join(ws, ".git/hooks/pre-commit.sample")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("hook mode not restored: %v %v", st.Mode(), err)
	}
	// Nothing is lost: the planted entries are in the quarantine.
	if b, err := os.ReadFile(filepath.Join(q, strings.TrimPrefix(strings.SplitN(r.Actions[2].Undo, q, 2)[1], "/"), "config")); err != nil || string(b) != fsmonitor {
		t.Errorf("sub/.git not kept in the quarantine (%s): %v", r.Actions[2].Undo, err)
	}
	if !strings.Contains(r.Text(), "created sub/.git (a nested git repository): moved to "+q) {
		t.Errorf("report:\n%s", r.Text())
	}
	// git itself is back to normal and runs nothing planted.
	git(t, ws, "status")
	git(t, filepath.Join(ws, "sub"), "status")
}

func TestGuardLeavesOrdinaryGitAlone(t *testing.T) {
	ws := repo(t)
	r := guarded(t, ws, t.TempDir(), nil, func() {
		write(t, ws, "a.txt", "b\n")
		git(t, ws, "add", "a.txt")
		git(t, ws, "commit", "-qm", "two")
		git(t, ws, "branch", "feature")
		git(t, ws, "switch", "-q", "feature")
		write(t, ws, "a.txt", "c\n")
		git(t, ws, "stash", "-q")
		git(t, ws, "gc", "-q")
		git(t, ws, "tag", "v1")
		git(t, filepath.Join(ws, "nested"), "commit", "-q", "--allow-empty", "-m", "x")
		write(t, ws, "new/dir/file.go", "package x\n")
		if err := os.RemoveAll(filepath.Join(ws, "nested")); err != nil { // removing is not planting
			t.Fatal(err)
		}
	})
	wantActions(t, r)
	if r.Text() != "" {
		t.Errorf("report for ordinary git: %q", r.Text())
	}
}

func TestGuardReplacedGitDirectoryIsQuarantined(t *testing.T) {
	ws := repo(t)
	r := guarded(t, ws, "", nil, func() {
		if err := os.Rename(filepath.Join(ws, "nested/.git"), filepath.Join(ws, "nested/old")); err != nil {
			t.Fatal(err)
		}
		write(t, ws, "nested/.git/config", fsmonitor)
	})
	wantActions(t, r, "replaced nested/.git", "created nested/old/config", "created nested/old/hooks")
	if exists(ws, "nested/.git") || r.Actions[0].Undo != "deleted" {
		t.Errorf("the new nested/.git remains: %+v", r.Actions)
	}
}

func TestGuardDoesNotFollowLinks(t *testing.T) {
	ws := repo(t)
	outside := t.TempDir()
	write(t, outside, "victim/keep", "x")
	r := guarded(t, ws, "", nil, func() {
		// .git/hooks replaced by a link to a directory outside: the link goes, the outside stays.
		if err := os.RemoveAll(filepath.Join(ws, ".git/hooks")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "victim"), filepath.Join(ws, ".git/hooks")); err != nil {
			t.Fatal(err)
		}
	})
	if read(t, outside, "victim/keep") != "x" {
		t.Error("the guard wrote through a link")
	}
	if st, err := os.Lstat(filepath.Join(ws, ".git/hooks")); err != nil || !st.IsDir() {
		t.Errorf(".git/hooks not restored as a directory: %v", err)
	}
	if len(r.Actions) == 0 || r.Actions[0].Path != ".git/hooks" {
		t.Errorf("actions %+v", r.Actions)
	}
}

// BenchmarkGuardGoroot measures Begin+End on a copy of $GOROOT/src (about 13k entries).
func BenchmarkGuardGoroot(b *testing.B) {
	dst := filepath.Join(b.TempDir(), "src")
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Fatalf("go env GOROOT: %v", err)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(strings.TrimSpace(string(goroot)), "src"), dst).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, out)
	}
	git(b, dst, "init", "-q")
	g := New(Options{Roots: []string{dst}})
	b.ResetTimer()
	var dirs int
	for b.Loop() {
		w, err := g.Begin(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		r := w.End()
		if r.Undone() {
			b.Fatal(r.Text())
		}
		dirs = r.Dirs
	}
	b.ReportMetric(float64(dirs), "dirs")
}

// TestGuardSerializesCommandsOnOneRoot: a second Begin on the same root waits for the first
// command's End (or gives up with its context).
func TestGuardSerializesCommandsOnOneRoot(t *testing.T) {
	ws := repo(t)
	g := New(Options{Roots: []string{ws}})
	w1, err := g.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Begin(ctx); err == nil || !strings.Contains(err.Error(), "waiting for another command") {
		t.Fatalf("a second Begin during a guarded command: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		w2, err := New(Options{Roots: []string{ws}}).Begin(context.Background())
		if err == nil {
			w2.End()
		}
		got <- err
	}()
	w1.End()
	if err := <-got; err != nil {
		t.Fatalf("Begin after End: %v", err)
	}
}

// TestGuardKeepsListingsBetweenCommands: Begin does not read again the directories that did
// not change since the previous command's End, yet sees what the user changed in between (a
// repository the user created is not taken for a plant), and End still reads everything.
func TestGuardKeepsListingsBetweenCommands(t *testing.T) {
	ws := repo(t)
	for _, d := range []string{"a/b/c", "a/d", "e/f/g/h"} {
		write(t, ws, d+"/file", "x\n")
	}
	// As if every listing were taken three seconds from now: the directories just made
	// count as old enough to be reused.
	clock = func() time.Time { return time.Now().Add(3 * time.Second) }
	t.Cleanup(func() { clock = time.Now })
	g := New(Options{Roots: []string{ws}, QuarantineDir: t.TempDir()})
	command := func(change func()) (*Report, int64) {
		t.Helper()
		n := dirsRead.Load()
		w, err := g.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		begin := dirsRead.Load() - n
		if change != nil {
			change()
		}
		return w.End(), begin
	}
	r, first := command(nil)
	wantActions(t, r)
	if r.Dirs < 10 || first < int64(r.Dirs) {
		t.Fatalf("the first Begin read %d directories of %d", first, r.Dirs)
	}
	_, second := command(nil)
	if second != 0 {
		t.Errorf("Begin read %d unchanged directories again, want 0", second)
	}

	// The user makes a repository and changes a directory between two commands: the next
	// Begin must see both, so that End leaves them alone.
	waitTick(t, ws)
	git(t, ws, "init", "-q", "a/b/c/mine")
	write(t, ws, "e/f/new", "x\n")
	r, third := command(nil)
	wantActions(t, r)
	if third == 0 || third >= int64(r.Dirs) {
		t.Errorf("Begin after the user's changes read %d of %d directories, want the changed ones only", third, r.Dirs)
	}
	if !exists(ws, "a/b/c/mine/.git/config") {
		t.Fatal("the user's repository was undone")
	}

	// A plant in a directory Begin did not read again is still undone: End reads everything.
	waitTick(t, ws)
	r, _ = command(func() { write(t, ws, "e/f/g/h/.git/config", fsmonitor) })
	wantActions(t, r, "created e/f/g/h/.git")
}

// waitTick waits until the file system's clock has moved past the last change of dir's
// directories (a change in the same timestamp tick would keep a directory's ctime: that is
// what racyWindow guards against, and what the moved clock of the test turns off).
func waitTick(t *testing.T, dir string) {
	t.Helper()
	var newest time.Time
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			var st syscall.Stat_t
			if syscall.Lstat(p, &st) == nil {
				if c := time.Unix(st.Ctim.Unix()); c.After(newest) {
					newest = c
				}
			}
		}
		return nil
	})
	probe := filepath.Join(t.TempDir(), "tick")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := os.WriteFile(probe, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(probe, &st); err != nil {
			t.Fatal(err)
		}
		if time.Unix(st.Ctim.Unix()).After(newest) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the file system clock did not move past %v", newest)
		}
	}
}
