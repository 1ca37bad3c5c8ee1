package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools"
)

// quittingEditor is a fake editor that quits (its connection ends at once, unanswered) when the
// daemon sends it the request named quitOn; everything else is the plain fake editor's.
type quittingEditor struct {
	*fakeEditor
	quitOn string

	mu   sync.Mutex
	quit bool // the request arrived and the editor quit
}

func (q *quittingEditor) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == q.quitOn {
		q.mu.Lock()
		q.quit = true
		q.mu.Unlock()
		q.conn.Abort()
		return nil, errors.New("the editor quit")
	}
	return q.fakeEditor.Call(ctx, method, params)
}

func (q *quittingEditor) didQuit() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.quit
}

// quittingEditor connects an editor (no reviews) that quits when it receives quitOn.
func (e *testEnv) quittingEditor(quitOn string) *quittingEditor {
	a, b := net.Pipe()
	go e.srv.ServeConn(a)
	ed := &fakeEditor{t: e.t, env: e, docs: map[string]*editorDoc{}, wake: make(chan struct{}, 1)}
	q := &quittingEditor{fakeEditor: ed, quitOn: quitOn}
	ed.conn = rpc.NewConn(b)
	ed.conn.Go(q)
	e.t.Cleanup(func() { ed.conn.Close() })
	init := map[string]any{
		"processId": nil, "rootUri": fileURI(e.ws), "capabilities": map[string]any{},
		"workspaceFolders":      []map[string]any{{"uri": fileURI(e.ws), "name": "ws"}},
		"initializationOptions": rpc.InitializationOptions{ProtocolVersion: 1, DocumentSave: true},
	}
	var res json.RawMessage
	ed.mustCall("initialize", init, &res)
	ed.conn.Notify(context.Background(), "initialized", map[string]any{})
	return q
}

// waitHolders waits until n editors have rel open in the overlay.
func (e *testEnv) waitHolders(rel string, n int) {
	e.t.Helper()
	key := tools.Canonical(filepath.Join(e.ws, rel))
	deadline := time.After(20 * time.Second)
	for {
		changed := e.srv.overlay.watch()
		if got := len(e.srv.overlay.holders(key)); got == n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			e.t.Fatalf("timed out waiting for %d editors to have %s open (have %d)", n, rel, len(e.srv.overlay.holders(key)))
		}
	}
}

// oneEdit scripts: read cart.go, one edit of it, then an answer.
func (e *testEnv) oneEdit() string {
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"cart.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"cart.go","old_string":"return \"cart\"","new_string":"return \"basket\""}`)),
		ollamatest.Text("Done."),
	)
	return strings.Replace(cartGo, `return "cart"`, `return "basket"`, 1)
}

// acceptAndFinish accepts the turn's one review in ed and waits for the turn to end.
func (ed *fakeEditor) acceptAndFinish() {
	ed.t.Helper()
	r := ed.review()
	ed.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: "accept"}}, nil)
	if end := ed.turnEnd(); end.Type != rpc.UpdateTurnCompleted {
		ed.t.Fatalf("turn end = %+v", end)
	}
}

// editResult is the result of the edit call the model received.
func (e *testEnv) editResult() string {
	e.t.Helper()
	chats := e.ollama.Chats()
	if len(chats) < 3 {
		e.t.Fatalf("the model was asked %d times, want 3", len(chats))
	}
	rs := chats[2].ToolResults()
	if len(rs) == 0 {
		e.t.Fatal("the model never received the edit's result")
	}
	return rs[len(rs)-1]
}

func (ed *fakeEditor) buffer(uri string) string {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	return ed.docs[uri].text
}

// Two editors have cart.go open; the one that opened it last (whose buffer the write goes
// through) quits when asked to apply the accepted change. The change lands through the other
// editor, which still has the document open: in its buffer, then on disk (its buffer was clean).
// twoEditorsEdit opens cart.go with firstText in a first editor, then (as cartGo) in a second
// that quits when the daemon sends it quitOn — it opened the document last, so the write goes
// through it — and runs the edit turn from the first editor, accepting it.
func (e *testEnv) twoEditorsEdit(firstText, quitOn string) (first *fakeEditor, uri string, last *quittingEditor) {
	first = e.editor(true)
	uri = first.open("cart.go", firstText)
	e.waitHolders("cart.go", 1)
	last = e.quittingEditor(quitOn)
	last.open("cart.go", cartGo)
	e.waitHolders("cart.go", 2)
	first.prompt(first.newSession(), "rename the label")
	first.acceptAndFinish()
	return first, uri, last
}

func TestEditorQuittingAtApplyEditWritesThroughTheOtherEditor(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	want := env.oneEdit()
	first, uri, last := env.twoEditorsEdit(cartGo, "workspace/applyEdit")

	if !last.didQuit() {
		t.Fatal("the write never went through the editor that opened the document last (the scenario did not happen)")
	}
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != want {
		t.Errorf("the accepted change was lost: disk =\n%s", got)
	}
	if b := first.buffer(uri); b != want {
		t.Errorf("the remaining editor's buffer =\n%s\nwant the change", b)
	}
	if tr := env.editResult(); strings.Contains(tr, "error") || strings.Contains(tr, "NOT written") || !strings.Contains(tr, "Edited") {
		t.Errorf("the model was not told the change was made:\n%s", tr)
	}
	env.waitHolders("cart.go", 1)
}

// The only editor that has cart.go open (clean) quits when asked to apply the change: no buffer
// holds the document any more, and the disk holds the text the change was made from, so the
// change is written to disk.
func TestSoleEditorQuittingAtApplyEditWritesTheDisk(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	want := env.oneEdit()
	reviewer := env.editor(true)
	holder := env.quittingEditor("workspace/applyEdit")
	holder.open("cart.go", cartGo)
	env.waitHolders("cart.go", 1)

	reviewer.prompt(reviewer.newSession(), "rename the label")
	reviewer.acceptAndFinish()

	if !holder.didQuit() {
		t.Fatal("the write never went through the editor holding the document")
	}
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != want {
		t.Errorf("the accepted change was lost: disk =\n%s", got)
	}
	if tr := env.editResult(); strings.Contains(tr, "error") || !strings.Contains(tr, "Edited") {
		t.Errorf("the model was not told the change was made:\n%s", tr)
	}
	env.waitHolders("cart.go", 0)
}

// The only editor that has cart.go open has unsaved changes, and quits when asked to apply the
// change: the change was made from text that now exists nowhere, so nothing is written and the
// model is told so.
func TestDirtyEditorQuittingAtApplyEditWritesNothingAndSaysSo(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.oneEdit()
	dirty := strings.Replace(cartGo, "func Label", "// unsaved note by the user\nfunc Label", 1)
	reviewer := env.editor(true)
	holder := env.quittingEditor("workspace/applyEdit")
	holder.open("cart.go", dirty)
	env.waitHolders("cart.go", 1)

	reviewer.prompt(reviewer.newSession(), "rename the label")
	reviewer.acceptAndFinish()

	if !holder.didQuit() {
		t.Fatal("the write never went through the editor holding the document")
	}
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != cartGo {
		t.Errorf("the disk changed though the change was made from a buffer that is gone:\n%s", got)
	}
	if tr := env.editResult(); !strings.Contains(tr, "NOT written") {
		t.Errorf("the model was not told the change was not written:\n%s", tr)
	}
}

// Two editors have cart.go open; the last one applies the change (its buffer was clean) and
// quits when asked to save it. Its buffer, and the change in it, are gone: the change is made
// again through the other editor, then saved.
func TestEditorQuittingAtSaveWritesThroughTheOtherEditor(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	want := env.oneEdit()
	first, uri, last := env.twoEditorsEdit(cartGo, rpc.MethodDocumentSave)

	if !last.didQuit() {
		t.Fatal("the save was never asked of the editor that opened the document last")
	}
	if b := first.buffer(uri); b != want {
		t.Errorf("the remaining editor's buffer =\n%s\nwant the change", b)
	}
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != want {
		t.Errorf("disk =\n%s", got)
	}
	first.mu.Lock()
	saves := len(first.saves)
	first.mu.Unlock()
	if saves != 1 {
		t.Errorf("the remaining editor was asked to save %d times, want 1", saves)
	}
	if tr := env.editResult(); strings.Contains(tr, "error") || !strings.Contains(tr, "Edited") {
		t.Errorf("the model was not told the change was made:\n%s", tr)
	}
}

// Two editors have cart.go open: the first with unsaved changes, the last clean. The last one
// applies the change and quits when asked to save: the disk must not be written under the first
// editor's unsaved text, and the change (made from the last editor's text) does not apply to the
// first editor's buffer, so nothing is written and the model is told so.
func TestEditorQuittingAtSaveNeverWritesUnderAnotherEditorsUnsavedText(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.oneEdit()
	dirty := strings.Replace(cartGo, "func Label", "// unsaved note by the user\nfunc Label", 1)
	first, uri, last := env.twoEditorsEdit(dirty, rpc.MethodDocumentSave)

	if !last.didQuit() {
		t.Fatal("the save was never asked of the editor that opened the document last")
	}
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != cartGo {
		t.Errorf("the disk was written under another editor's unsaved text:\n%s", got)
	}
	if b := first.buffer(uri); b != dirty {
		t.Errorf("the first editor's buffer changed:\n%s", b)
	}
	if tr := env.editResult(); !strings.Contains(tr, "NOT written") {
		t.Errorf("the model was not told the change was not written:\n%s", tr)
	}
}

// Each editor's didChange changes its own buffer in the overlay; when the editor that opened a
// document last goes away, the other editor's text (with its later changes) is what tools read.
func TestOverlayKeepsEachEditorsBuffer(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	first := env.editor(false)
	uri := first.open("cart.go", cartGo)
	env.waitHolders("cart.go", 1)
	last := env.editor(false)
	last.open("cart.go", cartGo)
	env.waitHolders("cart.go", 2)
	key := tools.Canonical(filepath.Join(env.ws, "cart.go"))
	first.sendChange(uri, 2, "first's text\n")
	deadline := time.After(20 * time.Second)
	for {
		changed := env.srv.overlay.watch()
		if d, ok := env.srv.overlay.getFrom(key, firstClient(t, env)); ok && d.text == "first's text\n" {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("timed out waiting for the first editor's didChange in the overlay")
		}
	}
	if d, _ := env.srv.overlay.get(key); d.text != cartGo {
		t.Errorf("the last editor's buffer took the first editor's change: %q", d.text)
	}
	last.conn.Close()
	env.waitHolders("cart.go", 1)
	if d, _ := env.srv.overlay.Document(key); string(d.Content) != "first's text\n" || d.Version != 2 {
		t.Errorf("after the last editor left, tools read %q v%d, want the first editor's buffer", d.Content, d.Version)
	}
}

// firstClient returns the daemon's client of the editor that opened cart.go first.
func firstClient(t *testing.T, env *testEnv) *client {
	t.Helper()
	hs := env.srv.overlay.holders(tools.Canonical(filepath.Join(env.ws, "cart.go")))
	if len(hs) != 2 {
		t.Fatalf("holders = %d, want 2", len(hs))
	}
	return hs[0].owner
}

// Two editors have cart.go open; the one that opened it last quits while the review waits. The
// accepted change then goes through the remaining editor's buffer (not under it on disk).
func TestEditorQuittingBeforeTheWriteLeavesTheOtherEditorsBuffer(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	want := env.oneEdit()
	first := env.editor(true)
	uri := first.open("cart.go", cartGo)
	env.waitHolders("cart.go", 1)
	last := env.editor(false)
	last.open("cart.go", cartGo)
	env.waitHolders("cart.go", 2)

	first.prompt(first.newSession(), "rename the label")
	r := first.review()
	last.conn.Close()
	env.waitHolders("cart.go", 1)
	first.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: "accept"}}, nil)
	if end := first.turnEnd(); end.Type != rpc.UpdateTurnCompleted {
		t.Fatalf("turn end = %+v", end)
	}
	if b := first.buffer(uri); b != want {
		t.Errorf("the remaining editor's buffer =\n%s\nwant the change", b)
	}
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != want {
		t.Errorf("disk =\n%s", got)
	}
	first.mu.Lock()
	applied := len(first.applied)
	first.mu.Unlock()
	if applied != 1 {
		t.Errorf("the remaining editor got %d applyEdit requests, want 1", applied)
	}
	if tr := env.editResult(); strings.Contains(tr, "error") || !strings.Contains(tr, "Edited") {
		t.Errorf("the model was not told the change was made:\n%s", tr)
	}
}
