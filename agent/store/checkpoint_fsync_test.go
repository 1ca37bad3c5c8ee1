package store

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools/fsafe"
)

// edit is what the checkpoint middleware does around one write: BeforeWrite, Intend (the write
// hook), the atomic write, AfterWrite.
func (e *cpEnv) edit(rel, content string) {
	e.t.Helper()
	if err := e.cp.BeforeWrite(e.abs(rel)); err != nil {
		e.t.Fatal(err)
	}
	if err := e.cp.Intend(e.abs(rel), []byte(content)); err != nil {
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

func (e *cpEnv) manifestInfo(turn string) os.FileInfo {
	e.t.Helper()
	fi, err := os.Stat(e.cp.manifestPath(turn))
	if err != nil {
		e.t.Fatal(err)
	}
	return fi
}

// Later edits of a file in a turn append one record to the intent log and do not replace the
// manifest (each replacement costs two fsyncs); a crash before the turn's end still reverts
// completely, from the intent log.
func TestLaterEditsAppendIntentsWithoutRewritingTheManifest(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.go", "before")
	e.begin("t1")
	e.edit("a.go", "v1")
	first := e.manifestInfo("t1")
	for _, v := range []string{"v2", "v3", "v4"} {
		e.edit("a.go", v)
	}
	if !os.SameFile(first, e.manifestInfo("t1")) {
		t.Errorf("the manifest was replaced by later edits of a.go in the same turn")
	}
	intents, err := e.cp.readIntents("t1")
	if err != nil || len(intents) != 4 {
		t.Fatalf("intent log: %d records (%v), want 4", len(intents), err)
	}
	// A crash now (no turn end): another process reverts from what is on disk.
	cp2, _ := e.st.Checkpoints(e.ws, "s-cp", CheckpointOptions{})
	res, err := cp2.Revert("t1")
	if err != nil || !slices.Equal(res.Restored, []string{"a.go"}) {
		t.Fatalf("revert after a crash: %+v %v", res, err)
	}
	e.want("a.go", "before")
}

// The turn's end saves the post-images: the manifest then names the last content and no intent.
func TestTurnEndSavesDeferredPostImages(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.go", "before")
	e.begin("t1")
	e.edit("a.go", "v1")
	e.edit("a.go", "v2")
	e.cp.Observe(agent.TurnEnd{TurnID: "t1"})
	m, err := readManifest(e.cp.manifestPath("t1"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := e.ws.Resolve("a.go")
	img, _, _ := readState(p, 1<<20)
	if len(m.Files) != 1 || m.Files[0].Post == nil || m.Files[0].Post.SHA256 != img.SHA256 || len(m.Files[0].Intended) != 0 || m.IntentLog != 2 {
		t.Fatalf("manifest after the turn's end: %+v (post %+v)", m, m.Files[0].Post)
	}
}

// Intents the manifest already accounts for are not applied again: a file the user set back to
// an intermediate content of the turn counts as changed since the turn, as before the intent log.
func TestSavedIntentsAreNotReapplied(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.go", "before")
	e.begin("t1")
	e.edit("a.go", "v1")
	e.edit("a.go", "v2")
	e.cp.Observe(agent.TurnEnd{TurnID: "t1"})
	e.put("a.go", "v1") // the user's change, equal to the turn's first version
	cp2, _ := e.st.Checkpoints(e.ws, "s-cp", CheckpointOptions{})
	res, err := cp2.Revert("t1")
	if err != nil || len(res.Skipped) != 1 || res.Skipped[0].Reason != ReasonChanged {
		t.Fatalf("revert: %+v %v", res, err)
	}
	e.want("a.go", "v1")
}

// A record torn by a crash does not hide the records appended after it.
func TestTornIntentRecordIsSkipped(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.go", "before")
	e.begin("t1")
	e.edit("a.go", "v1")
	f, err := os.OpenFile(e.cp.intentLogPath("t1"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"path":"` + e.abs("a.go") + `","sha2`) // torn mid-record
	f.Close()
	if err := e.cp.BeforeWrite(e.abs("a.go")); err != nil {
		t.Fatal(err)
	}
	if err := e.cp.Intend(e.abs("a.go"), []byte("v2")); err != nil {
		t.Fatal(err)
	}
	p, _ := e.ws.Resolve("a.go")
	if _, err := fsafe.WriteFile(p, []byte("v2"), fsafe.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Killed before AfterWrite: the record after the torn one still counts.
	cp2, _ := e.st.Checkpoints(e.ws, "s-cp", CheckpointOptions{})
	res, err := cp2.Revert("t1")
	if err != nil || !slices.Equal(res.Restored, []string{"a.go"}) {
		t.Fatalf("revert: %+v %v", res, err)
	}
	e.want("a.go", "before")
}

// A tool's write leaves the rename's directory fsync to the next sync point: the journal's Sync
// makes it durable before (or with) the journal's own record of the batch.
func TestJournalSyncMakesTheToolsRenamesDurable(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.go", "before")
	fsys := fsafe.New(e.ws, fsafe.Options{})
	if _, err := fsys.Read(context.Background(), "a.go"); err != nil {
		t.Fatal(err)
	}
	tg, err := fsys.PrepareWrite(context.Background(), "a.go")
	if err != nil {
		t.Fatal(err)
	}
	sf, err := e.st.Create(agent.SessionSettings{ID: "s-dirsync"})
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	if _, err := fsys.Commit(context.Background(), tg, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if fsafe.PendingDirs() == 0 {
		t.Fatal("the commit's directory fsync is not pending: nothing for Sync to do")
	}
	if err := sf.Append(agent.Entry{Type: agent.EntryMessage, TurnID: "t1", Message: &agent.Message{Role: agent.RoleUser, Content: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := sf.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := fsafe.PendingDirs(); n != 0 {
		t.Fatalf("%d directories still wait for their fsync after the journal's Sync", n)
	}
}

// A pre-image that cannot be kept fails BeforeWrite (the write must not happen), and the file is
// not counted as kept: once the store works again, the next BeforeWrite keeps it.
func TestPreImageThatCannotBeKeptIsNotCounted(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.go", "before")
	e.begin("t1")
	objs := e.st.objectsPath()
	if err := os.RemoveAll(objs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(objs, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.cp.BeforeWrite(e.abs("a.go")); err == nil {
		t.Fatal("BeforeWrite succeeded although the pre-image could not be stored")
	}
	if err := os.Remove(objs); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(objs, 0o700); err != nil {
		t.Fatal(err)
	}
	e.edit("a.go", "after")
	cp2, _ := e.st.Checkpoints(e.ws, "s-cp", CheckpointOptions{})
	res, err := cp2.Revert("t1")
	if err != nil || !slices.Equal(res.Restored, []string{"a.go"}) {
		t.Fatalf("revert: %+v %v", res, err)
	}
	e.want("a.go", "before")
}
