package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
)

// cpEnv is a workspace with checkpoints for session "s-cp".
type cpEnv struct {
	t    *testing.T
	st   *Store
	ws   *fsafe.Workspace
	root string
	cp   *Checkpoints
}

func newCPEnv(t *testing.T) *cpEnv {
	t.Helper()
	st, _ := newTestStore(t)
	root := t.TempDir()
	ws, err := fsafe.NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	cp, err := st.Checkpoints(ws, "s-cp", CheckpointOptions{Queue: &tools.MutationQueue{}})
	if err != nil {
		t.Fatal(err)
	}
	return &cpEnv{t: t, st: st, ws: ws, root: ws.Roots()[0], cp: cp}
}

func (e *cpEnv) abs(rel string) string { return filepath.Join(e.root, rel) }

func (e *cpEnv) put(rel, content string) {
	e.t.Helper()
	p := e.abs(rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *cpEnv) read(rel string) (string, bool) {
	b, err := os.ReadFile(e.abs(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b), true
}

func (e *cpEnv) want(rel, content string) {
	e.t.Helper()
	got, ok := e.read(rel)
	if !ok || got != content {
		e.t.Errorf("%s = %q (exists %v), want %q", rel, got, ok, content)
	}
}

func (e *cpEnv) wantAbsent(rel string) {
	e.t.Helper()
	if got, ok := e.read(rel); ok {
		e.t.Errorf("%s exists with %q, want it gone", rel, got)
	}
}

// write is what a write tool does in a turn: BeforeWrite, the atomic write, AfterWrite.
func (e *cpEnv) write(rel, content string) {
	e.t.Helper()
	if err := e.cp.BeforeWrite(e.abs(rel)); err != nil {
		e.t.Fatal(err)
	}
	p, err := e.ws.Resolve(rel)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := fsafe.WriteFile(p, []byte(content), fsafe.WriteOptions{MkdirAll: true}); err != nil {
		e.t.Fatal(err)
	}
	if err := e.cp.AfterWrite(e.abs(rel)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *cpEnv) begin(turn string) {
	e.t.Helper()
	if err := e.cp.Begin(turn); err != nil {
		e.t.Fatal(err)
	}
}

func (e *cpEnv) revert(turn string) RevertResult {
	e.t.Helper()
	res, err := e.cp.Revert(turn)
	if err != nil {
		e.t.Fatalf("revert %s: %v", turn, err)
	}
	return res
}

func TestRevertRestoresAnEdit(t *testing.T) {
	e := newCPEnv(t)
	e.put("src/a.go", "package a\n")
	os.Chmod(e.abs("src/a.go"), 0o640)
	e.begin("t1")
	e.write("src/a.go", "package a // edited\n")
	e.want("src/a.go", "package a // edited\n")
	res := e.revert("t1")
	e.want("src/a.go", "package a\n")
	if !slices.Equal(res.Restored, []string{"src/a.go"}) || len(res.Skipped) != 0 {
		t.Errorf("result %+v", res)
	}
	if fi, _ := os.Stat(e.abs("src/a.go")); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}
}

func TestRevertDeletesACreatedFile(t *testing.T) {
	e := newCPEnv(t)
	e.begin("t1")
	e.write("new/file.txt", "hello")
	res := e.revert("t1")
	e.wantAbsent("new/file.txt")
	if !slices.Equal(res.Restored, []string{"new/file.txt"}) {
		t.Errorf("result %+v", res)
	}
}

func TestRevertRecreatesADeletedFile(t *testing.T) {
	e := newCPEnv(t)
	e.put("gone.txt", "keep me")
	os.Chmod(e.abs("gone.txt"), 0o600)
	e.begin("t1")
	if err := e.cp.BeforeWrite(e.abs("gone.txt")); err != nil {
		t.Fatal(err)
	}
	os.Remove(e.abs("gone.txt")) // a delete tool
	if err := e.cp.AfterWrite(e.abs("gone.txt")); err != nil {
		t.Fatal(err)
	}
	e.revert("t1")
	e.want("gone.txt", "keep me")
	if fi, _ := os.Stat(e.abs("gone.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
}

func TestRevertSkipsFilesChangedSince(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.txt", "original")
	e.begin("t1")
	e.write("a.txt", "by the agent")
	e.write("b.txt", "created by the agent")
	e.put("a.txt", "by the user afterwards") // the user edits after the turn
	e.put("b.txt", "user kept working here")
	res := e.revert("t1")
	e.want("a.txt", "by the user afterwards")
	e.want("b.txt", "user kept working here")
	if len(res.Restored) != 0 || len(res.Skipped) != 2 {
		t.Fatalf("result %+v", res)
	}
	for _, s := range res.Skipped {
		if s.Reason != ReasonChanged || !strings.Contains(s.Reason, "by you or another program") {
			t.Errorf("skip %+v", s)
		}
	}
}

func TestTwoWritesInATurnRevertToTheFirstPreImage(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.txt", "v0")
	e.begin("t1")
	e.write("a.txt", "v1")
	e.write("a.txt", "v2") // the latest post-image wins
	res := e.revert("t1")
	e.want("a.txt", "v0")
	if !slices.Equal(res.Restored, []string{"a.txt"}) || len(res.Skipped)+len(res.Unchanged) != 0 {
		t.Errorf("result %+v", res)
	}
}

func TestRevertTwiceSaysAlreadyReverted(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.txt", "v0")
	e.begin("t1")
	e.write("a.txt", "v1")
	first := e.revert("t1")
	e.put("a.txt", "v1") // even if the file looks like the turn's result again
	again, err := e.cp.Revert("t1")
	if !errors.Is(err, ErrAlreadyReverted) || !strings.Contains(err.Error(), "already reverted") {
		t.Fatalf("second revert: %v", err)
	}
	e.want("a.txt", "v1")
	if jsonOf(t, again) != jsonOf(t, first) {
		t.Errorf("second revert should return the first result: %+v vs %+v", again, first)
	}
	// Also after a restart: the revert is recorded on disk.
	cp2, _ := e.st.Checkpoints(e.ws, "s-cp", CheckpointOptions{})
	if _, err := cp2.Revert("t1"); !errors.Is(err, ErrAlreadyReverted) {
		t.Errorf("after restart: %v", err)
	}
	turns, _ := cp2.Turns()
	if len(turns) != 1 || turns[0].Reverted == nil {
		t.Errorf("turns %+v", turns)
	}
}

func TestRevertOlderTurnSkipsFilesALaterTurnChanged(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.txt", "v0")
	e.put("b.txt", "b0")
	e.begin("t1")
	e.write("a.txt", "v1")
	e.write("b.txt", "b1")
	e.begin("t2")
	e.write("a.txt", "v2")
	res := e.revert("t1")
	e.want("a.txt", "v2") // t2 changed it since: skipped
	e.want("b.txt", "b0")
	if !slices.Equal(res.Restored, []string{"b.txt"}) || len(res.Skipped) != 1 || res.Skipped[0].Path != "a.txt" {
		t.Errorf("result %+v", res)
	}
	// Reverting newest first works all the way back.
	e2 := newCPEnv(t)
	e2.put("a.txt", "v0")
	e2.begin("t1")
	e2.write("a.txt", "v1")
	e2.begin("t2")
	e2.write("a.txt", "v2")
	e2.revert("t2")
	e2.want("a.txt", "v1")
	e2.revert("t1")
	e2.want("a.txt", "v0")
}

func TestRevertUnchangedAndUnrecorded(t *testing.T) {
	e := newCPEnv(t)
	e.put("same.txt", "s")
	e.put("crash.txt", "before")
	e.begin("t1")
	e.write("same.txt", "s") // a write that changed nothing (or went to an editor buffer)
	// A crash between the write and AfterWrite: no post-image.
	if err := e.cp.BeforeWrite(e.abs("crash.txt")); err != nil {
		t.Fatal(err)
	}
	e.put("crash.txt", "after")
	cp2, _ := e.st.Checkpoints(e.ws, "s-cp", CheckpointOptions{}) // agentd restarted
	res, err := cp2.Revert("t1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Unchanged, []string{"same.txt"}) || len(res.Skipped) != 1 || res.Skipped[0].Reason != ReasonUnrecorded {
		t.Errorf("result %+v", res)
	}
	e.want("crash.txt", "after")
}

func TestObjectsDeduplicated(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.txt", "same content")
	e.put("b.txt", "same content")
	e.begin("t1")
	e.write("a.txt", "x")
	e.write("b.txt", "y")
	e.begin("t2")
	e.write("a.txt", "same content")
	objs, _ := os.ReadDir(e.st.objectsPath())
	var names []string
	for _, o := range objs {
		names = append(names, o.Name())
	}
	sum := sha256.Sum256([]byte("same content"))
	x := sha256.Sum256([]byte("x"))
	want := []string{hex.EncodeToString(sum[:]), hex.EncodeToString(x[:])}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("objects %v, want %v", names, want)
	}
}

func TestTurnsLatestFirst(t *testing.T) {
	e := newCPEnv(t)
	e.begin("t1")
	e.write("a.txt", "1")
	e.begin("t2") // changes nothing: no checkpoint
	e.begin("t2b")
	e.write("a.txt", "1") // a write that leaves the file as it was
	e.begin("t3")
	e.write("b.txt", "3")
	e.write("a.txt", "3")
	turns, err := e.cp.Turns()
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || turns[0].ID != "t3" || turns[1].ID != "t1" || !slices.Equal(turns[0].Files, []string{"b.txt", "a.txt"}) {
		t.Errorf("turns %+v", turns)
	}
	if _, err := e.cp.Revert("t2"); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("revert of a turn without changes: %v", err)
	}
}

func TestBeforeWriteNeedsATurn(t *testing.T) {
	e := newCPEnv(t)
	if err := e.cp.BeforeWrite(e.abs("a.txt")); !errors.Is(err, ErrNoTurn) {
		t.Errorf("got %v", err)
	}
	e.begin("t1")
	if err := e.cp.BeforeWrite("/etc/passwd"); tools.TypeOf(err, "") != tools.PermissionDenied {
		t.Errorf("outside the workspace: %v", err)
	}
}

func TestGCRemovesUnreferencedObjects(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.txt", "kept")
	e.begin("t1")
	e.write("a.txt", "x")
	other, _ := e.st.Checkpoints(e.ws, "s-other", CheckpointOptions{})
	other.Begin("t1")
	e.put("b.txt", "dropped")
	if err := other.BeforeWrite(e.abs("b.txt")); err != nil {
		t.Fatal(err)
	}
	// A damaged manifest still protects what it names.
	e.put("c.txt", "named by a damaged manifest")
	dmg, _ := e.st.Checkpoints(e.ws, "s-damaged", CheckpointOptions{})
	dmg.Begin("t1")
	dmg.BeforeWrite(e.abs("c.txt"))
	mp := dmg.manifestPath("t1")
	b, _ := os.ReadFile(mp)
	os.WriteFile(mp, b[:len(b)-20], 0o600)

	os.RemoveAll(e.st.manifestDir("s-other")) // a deleted session
	res, err := e.st.GC()
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed != 1 || res.Bytes != int64(len("dropped")) {
		t.Errorf("gc %+v", res)
	}
	e.revert("t1")
	e.want("a.txt", "kept")
	sum := sha256.Sum256([]byte("named by a damaged manifest"))
	if _, err := os.Stat(filepath.Join(e.st.objectsPath(), hex.EncodeToString(sum[:]))); err != nil {
		t.Errorf("object named by a damaged manifest was removed: %v", err)
	}
}

func TestGitDirectoryAndIndexNeverTouched(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	e := newCPEnv(t)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", e.root, "--no-optional-locks"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	e.put("tracked.txt", "committed\n")
	git("add", "tracked.txt")
	git("commit", "-q", "-m", "init")
	e.put("tracked.txt", "staged change\n")
	git("add", "tracked.txt")
	e.put("tracked.txt", "unstaged change on top\n")
	status := git("status", "--porcelain")
	index, _ := os.ReadFile(e.abs(".git/index"))
	snap := snapshotTree(t, e.abs(".git"))

	e.begin("t1")
	e.write("tracked.txt", "agent edit\n")
	e.write("new.txt", "agent file\n")
	e.write(".git/description", "the agent wrote here\n") // an approved write to a protected path
	if snapshotTree(t, e.abs(".git")) == snap {
		t.Fatal("the test's own write into .git did not happen")
	}
	e.put(".git/description", "Unnamed repository; edit this file 'description' to name the repository.\n")
	snap = snapshotTree(t, e.abs(".git"))
	res := e.revert("t1")

	e.want("tracked.txt", "unstaged change on top\n")
	e.wantAbsent("new.txt")
	if got, _ := os.ReadFile(e.abs(".git/index")); !bytes.Equal(got, index) {
		t.Error("the git index changed")
	}
	if snapshotTree(t, e.abs(".git")) != snap {
		t.Error("something under .git changed")
	}
	if got := git("status", "--porcelain"); got != status {
		t.Errorf("git status changed:\n%s\nwas:\n%s", got, status)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Path != ".git/description" || res.Skipped[0].Reason != ReasonGitDir {
		t.Errorf("result %+v", res)
	}
	// Nothing from the workspace's .git was copied into the checkpoint store.
	objs, _ := os.ReadDir(e.st.objectsPath())
	if len(objs) != 1 {
		t.Errorf("%d objects, want 1 (tracked.txt)", len(objs))
	}
}

// snapshotTree fingerprints every name, mode and content under dir.
func snapshotTree(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h.Write([]byte(p + "\x00" + fi.Mode().String() + "\x00" + fi.ModTime().String() + "\x00"))
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeTool is a fake write tool: it declares AccessWrite on its path and writes atomically.
type writeTool struct{ ws *fsafe.Workspace }

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Fail    bool   `json:"fail,omitempty"`
}

var writeSpec = tools.NewSpec[writeArgs]()

func (w *writeTool) Name() string        { return "write" }
func (w *writeTool) Description() string { return "write a file" }
func (w *writeTool) Spec() *tools.Spec   { return writeSpec }
func (w *writeTool) Permission(call *tools.Call) tools.Permission {
	p, err := w.ws.Resolve(tools.ArgsOf[writeArgs](call).Path)
	if err != nil {
		return tools.Permission{Access: tools.AccessWrite}
	}
	return p.Permission(tools.AccessWrite)
}
func (w *writeTool) Execute(ctx context.Context, call *tools.Call) (tools.Output, error) {
	a := tools.ArgsOf[writeArgs](call)
	p, err := w.ws.Resolve(a.Path)
	if err != nil {
		return tools.Output{}, err
	}
	if _, err := fsafe.WriteFile(p, []byte(a.Content), fsafe.WriteOptions{MkdirAll: true}); err != nil {
		return tools.Output{}, err
	}
	if a.Fail {
		return tools.Output{}, errors.New("failed after writing")
	}
	return tools.Output{Text: "wrote " + a.Path}, nil
}

// readTool declares read access: never checkpointed.
type readTool struct{ writeTool }

func (r *readTool) Name() string { return "read" }
func (r *readTool) Permission(call *tools.Call) tools.Permission {
	p := r.writeTool.Permission(call)
	p.Access = tools.AccessRead
	return p
}

func toolCall(id, name string, args any) agent.ToolCall {
	b, _ := json.Marshal(args)
	return agent.ToolCall{ID: id, Name: name, Arguments: b}
}

func TestMiddlewareThroughKernel(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.txt", "v0")
	e.put("r.txt", "r0")
	reg, err := tools.NewRegistry(&writeTool{ws: e.ws}, &readTool{writeTool{ws: e.ws}})
	if err != nil {
		t.Fatal(err)
	}
	k := agent.NewKernel(agent.Config{Registry: reg, Middleware: []agent.Middleware{e.cp.Middleware()}}, e.cp.Observe)
	k.Emit(agent.TurnStart{TurnID: "t1", Prompt: "go"}) // Observe begins the turn
	br := k.RunBatch(context.Background(), []agent.ToolCall{
		toolCall("c1", "write", writeArgs{Path: "a.txt", Content: "v1"}),
		toolCall("c2", "write", writeArgs{Path: "a.txt", Content: "v2"}),
		toolCall("c3", "write", writeArgs{Path: "dir/new.txt", Content: "n", Fail: true}),
		toolCall("c4", "read", writeArgs{Path: "r.txt", Content: "r1"}), // writes, but declares read
	}, nil)
	for i, r := range br.Results {
		if (i == 2) != r.IsError {
			t.Errorf("call %d: %+v", i, r)
		}
	}
	e.want("a.txt", "v2")
	e.want("dir/new.txt", "n")
	turns, _ := e.cp.Turns()
	if len(turns) != 1 || !slices.Equal(turns[0].Files, []string{"a.txt", "dir/new.txt"}) {
		t.Fatalf("turns %+v", turns)
	}
	res := e.revert("t1")
	e.want("a.txt", "v0")
	e.wantAbsent("dir/new.txt") // written by a call that then failed: still reverted
	e.want("r.txt", "r1")       // not a write call: not checkpointed
	if !slices.Equal(res.Restored, []string{"a.txt", "dir/new.txt"}) {
		t.Errorf("result %+v", res)
	}

	// A checkpoint that cannot be kept stops the call before it writes.
	big, _ := e.st.Checkpoints(e.ws, "s-big", CheckpointOptions{MaxFileBytes: 1})
	big.Begin("t2")
	k2 := agent.NewKernel(agent.Config{Registry: reg, Middleware: []agent.Middleware{big.Middleware()}}, nil)
	br = k2.RunBatch(context.Background(), []agent.ToolCall{
		toolCall("c5", "write", writeArgs{Path: "a.txt", Content: "must not be written"})}, nil)
	if r := br.Results[0]; !r.IsError || !strings.Contains(r.Text(), "Nothing was changed") {
		t.Errorf("result %+v", r)
	}
	e.want("a.txt", "v0")
}

func TestRevertDoesNotFollowALinkPlantedSince(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.txt", "v0")
	e.begin("t1")
	e.write("a.txt", "v1")
	e.put("other.txt", "v1") // same content as the turn left a.txt
	os.Remove(e.abs("a.txt"))
	if err := os.Symlink("other.txt", e.abs("a.txt")); err != nil {
		t.Fatal(err)
	}
	res := e.revert("t1")
	e.want("other.txt", "v1")
	if len(res.Skipped) != 1 || len(res.Restored) != 0 {
		t.Errorf("result %+v", res)
	}
}

func TestCheckpointsConcurrentUse(t *testing.T) {
	e := newCPEnv(t)
	e.begin("t1")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel := fmt.Sprintf("f%d.txt", i)
			if err := e.cp.BeforeWrite(e.abs(rel)); err != nil {
				t.Error(err)
				return
			}
			os.WriteFile(e.abs(rel), []byte(rel), 0o644)
			if err := e.cp.AfterWrite(e.abs(rel)); err != nil {
				t.Error(err)
			}
			if _, err := e.cp.Turns(); err != nil {
				t.Error(err)
			}
			if _, err := e.st.GC(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	res := e.revert("t1")
	if len(res.Restored) != 8 {
		t.Errorf("result %+v", res)
	}
}

// envKillWriteChild makes the test binary a turn that writes a large file through the real
// middleware and fsafe.FS.Commit, then reports "written" and waits to be killed before the
// middleware records the post-image. Its value is "<state dir>:<workspace>".
const envKillWriteChild = "AGENTD_STORE_KILL_WRITE_CHILD"

func killWriteContent() []byte { return bytes.Repeat([]byte("the turn's new content\n"), 6<<20/23) }

func killWriteChild(arg string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "kill-write child:", err)
		os.Exit(2)
	}
	stateDir, root, _ := strings.Cut(arg, string(filepath.ListSeparator))
	st, err := Open(stateDir)
	if err != nil {
		fail(err)
	}
	ws, err := fsafe.NewWorkspace(root)
	if err != nil {
		fail(err)
	}
	cp, err := st.Checkpoints(ws, "s-kill", CheckpointOptions{})
	if err != nil {
		fail(err)
	}
	if err := cp.Begin("t1"); err != nil {
		fail(err)
	}
	fsys := fsafe.New(ws, fsafe.Options{Limits: fsafe.Limits{ReadBytes: 16 << 20}})
	next := func(ctx context.Context, _ tools.Tool, _ *tools.Call) (tools.Output, error) {
		if _, err := fsys.Read(ctx, "big.txt"); err != nil {
			return tools.Output{}, err
		}
		target, err := fsys.PrepareWrite(ctx, "big.txt")
		if err != nil {
			return tools.Output{}, err
		}
		if _, err := fsys.Commit(ctx, target, killWriteContent()); err != nil {
			return tools.Output{}, err
		}
		fmt.Println("written")
		select {} // killed before the middleware records the post-image
	}
	_, err = cp.Middleware()(next)(context.Background(), &writeTool{ws}, &tools.Call{Args: &writeArgs{Path: "big.txt"}})
	fail(fmt.Errorf("the turn returned: %v", err))
}

// agentd killed with SIGKILL after a large write landed but before it recorded the file's new
// content: after a restart the turn still reverts completely.
func TestRevertAfterAKillBetweenWriteAndRecord(t *testing.T) {
	stateDir, root := t.TempDir(), t.TempDir()
	old := bytes.Repeat([]byte("the content before the turn\n"), 4<<20/28)
	if err := os.WriteFile(filepath.Join(root, "big.txt"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envKillWriteChild+"="+stateDir+string(filepath.ListSeparator)+root)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Blocks until the child reports; the test's deadline bounds it.
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "written\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("waiting for the child's write: got %q, stderr %s", line, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if b, err := os.ReadFile(filepath.Join(root, "big.txt")); err != nil || !bytes.Equal(b, killWriteContent()) {
		t.Fatalf("the write did not land before the kill (%d bytes, %v)", len(b), err)
	}

	st, err := Open(stateDir) // agentd restarted
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ws, err := fsafe.NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	cp, err := st.Checkpoints(ws, "s-kill", CheckpointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cp.Revert("t1")
	if err != nil || !slices.Equal(res.Restored, []string{"big.txt"}) || len(res.Skipped) != 0 {
		t.Fatalf("revert: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "big.txt")); !bytes.Equal(b, old) {
		t.Errorf("big.txt after the revert: %d bytes, want the %d bytes from before the turn", len(b), len(old))
	}
}

// The intent is recorded but agentd died before the rename: the file is as before the turn.
// A later change by someone else is still recognized as such.
func TestRevertWithAnIntentThatNeverLanded(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.txt", "before")
	e.put("b.txt", "before")
	e.begin("t1")
	for _, rel := range []string{"a.txt", "b.txt"} {
		if err := e.cp.BeforeWrite(e.abs(rel)); err != nil {
			t.Fatal(err)
		}
		if err := e.cp.Intend(e.abs(rel), []byte("the turn's")); err != nil {
			t.Fatal(err)
		}
	}
	e.put("b.txt", "the user's") // neither the pre-image nor the intended content
	cp2, _ := e.st.Checkpoints(e.ws, "s-cp", CheckpointOptions{})
	res, err := cp2.Revert("t1")
	if err != nil || !slices.Equal(res.Unchanged, []string{"a.txt"}) || len(res.Skipped) != 1 || res.Skipped[0].Reason != ReasonUnrecorded {
		t.Errorf("revert: %+v %v", res, err)
	}
	e.want("a.txt", "before")
	e.want("b.txt", "the user's")
}
