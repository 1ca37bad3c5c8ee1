package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentd/agentd/harness"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools/sandbox"
	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// testEnv is a daemon with a fake Ollama and a workspace.
type testEnv struct {
	t      testing.TB
	srv    *Server
	ollama *ollamatest.Server
	ws     string
}

func newEnv(t testing.TB, files map[string]string) *testEnv {
	t.Helper()
	return newEnvWith(t, files, nil)
}

func newEnvWith(t testing.TB, files map[string]string, mutate func(*harness.Options)) *testEnv {
	t.Helper()
	ws := t.TempDir()
	for name, content := range files {
		p := filepath.Join(ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, _ = filepath.EvalSymlinks(ws)
	fake := ollamatest.NewServer(&ollamatest.Script{Models: []ollamatest.Model{
		{Name: "qwen3:8b", Capabilities: []string{"completion", "tools"}, ContextLength: 40960},
	}})
	t.Cleanup(fake.Close)
	home := t.TempDir()
	opts := harness.Options{
		Version: "test", OllamaHost: fake.URL, Model: "qwen3:8b", ApprovalMode: "ask",
		StateDir:   filepath.Join(home, "state"),
		BuildCache: filepath.Join(home, "cache"),
		Policy:     policy.Locations{ConfigDir: filepath.Join(home, "config"), StateDir: filepath.Join(home, "state")},
	}
	if mutate != nil {
		mutate(&opts)
	}
	rt, err := harness.NewRuntime(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(rt)
	t.Cleanup(func() { srv.Shutdown(); rt.Close() })
	return &testEnv{t: t, srv: srv, ollama: fake, ws: ws}
}

// fakeEditor is an editor over an in-memory pipe: it keeps its open buffers, applies
// workspace/applyEdit to them (sending didChange), saves on document/save, and records every
// notification.
type fakeEditor struct {
	t       testing.TB
	env     *testEnv
	conn    *rpc.Conn
	reviews bool
	// initResult is the daemon's answer to initialize.
	initResult json.RawMessage

	mu      sync.Mutex
	docs    map[string]*editorDoc // by URI
	notes   []note
	applied []rpc.ApplyWorkspaceEditParams
	saves   []string
	wake    chan struct{}
}

type editorDoc struct {
	text    string
	version int32
}

type note struct {
	method string
	params json.RawMessage
}

func (e *testEnv) editor(reviews bool) *fakeEditor {
	return e.editorWith(rpc.InitializationOptions{ProtocolVersion: 1, Reviews: reviews, DocumentSave: true})
}

func (e *testEnv) editorWith(opts rpc.InitializationOptions) *fakeEditor {
	reviews := opts.Reviews
	a, b := net.Pipe()
	go e.srv.ServeConn(a)
	ed := &fakeEditor{t: e.t, env: e, reviews: reviews, docs: map[string]*editorDoc{}, wake: make(chan struct{}, 1)}
	ed.conn = rpc.NewConn(b)
	ed.conn.Go(ed)
	e.t.Cleanup(func() { ed.conn.Close() })
	var res json.RawMessage
	init := map[string]any{
		"processId": nil, "rootUri": fileURI(e.ws), "capabilities": map[string]any{},
		"workspaceFolders":      []map[string]any{{"uri": fileURI(e.ws), "name": "ws"}},
		"initializationOptions": opts,
	}
	ed.call("initialize", init, &res)
	ed.initResult = res
	ed.conn.Notify(context.Background(), "initialized", map[string]any{})
	return ed
}

func (ed *fakeEditor) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "workspace/applyEdit":
		var p rpc.ApplyWorkspaceEditParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		ed.mu.Lock()
		ed.applied = append(ed.applied, p)
		var changes []func()
		for _, dc := range p.Edit.DocumentChanges {
			d := ed.docs[dc.TextDocument.URI]
			if d == nil || d.version != dc.TextDocument.Version {
				ed.mu.Unlock()
				return rpc.ApplyWorkspaceEditResult{Applied: false, FailureReason: "version mismatch"}, nil
			}
			d.text = applyLSPEdits(ed.t, d.text, dc.Edits)
			d.version++
			uri, text, version := dc.TextDocument.URI, d.text, d.version
			changes = append(changes, func() { ed.sendChange(uri, version, text) })
		}
		ed.mu.Unlock()
		for _, c := range changes {
			c()
		}
		return rpc.ApplyWorkspaceEditResult{Applied: true}, nil
	case rpc.MethodDocumentSave:
		var p rpc.DocumentSaveParams
		json.Unmarshal(params, &p)
		ed.mu.Lock()
		d := ed.docs[p.URI]
		ed.saves = append(ed.saves, p.URI)
		ed.mu.Unlock()
		path, _ := fileURIPath(p.URI)
		if err := os.WriteFile(path, []byte(d.text), 0o644); err != nil {
			return nil, err
		}
		return rpc.DocumentSaveResult{Saved: true}, nil
	case "window/workDoneProgress/create":
		return nil, nil
	}
	return nil, rpc.ErrMethodNotFound
}

func (ed *fakeEditor) Notify(ctx context.Context, method string, params json.RawMessage) {
	ed.mu.Lock()
	ed.notes = append(ed.notes, note{method, params})
	ed.mu.Unlock()
	select {
	case ed.wake <- struct{}{}:
	default:
	}
}

func (ed *fakeEditor) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return ed.conn.Call(ctx, method, params, result)
}

func (ed *fakeEditor) mustCall(method string, params, result any) {
	ed.t.Helper()
	if err := ed.call(method, params, result); err != nil {
		ed.t.Fatalf("%s: %v", method, err)
	}
}

func (ed *fakeEditor) open(rel, text string) string {
	uri := fileURI(filepath.Join(ed.env.ws, rel))
	ed.mu.Lock()
	ed.docs[uri] = &editorDoc{text: text, version: 1}
	ed.mu.Unlock()
	ed.conn.Notify(context.Background(), "textDocument/didOpen", map[string]any{
		"textDocument": map[string]any{"uri": uri, "languageId": "go", "version": 1, "text": text}})
	return uri
}

func (ed *fakeEditor) sendChange(uri string, version int32, text string) {
	ed.conn.Notify(context.Background(), "textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": version},
		"contentChanges": []map[string]any{{"text": text}},
	})
}

// waitFor waits until a notification matches and returns its params.
func (ed *fakeEditor) waitFor(what string, match func(note) bool) json.RawMessage {
	ed.t.Helper()
	deadline := time.After(20 * time.Second)
	seen := 0
	for {
		ed.mu.Lock()
		notes := ed.notes
		ed.mu.Unlock()
		for ; seen < len(notes); seen++ {
			if match(notes[seen]) {
				return notes[seen].params
			}
		}
		select {
		case <-ed.wake:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			ed.t.Fatalf("timed out waiting for %s; notifications:\n%s", what, ed.dump())
		}
	}
}

func (ed *fakeEditor) dump() string {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	var b strings.Builder
	for _, n := range ed.notes {
		fmt.Fprintf(&b, "  %s %s\n", n.method, n.params)
	}
	return b.String()
}

func (ed *fakeEditor) review() rpc.ReviewRequestedParams {
	ed.t.Helper()
	var r rpc.ReviewRequestedParams
	json.Unmarshal(ed.waitFor("review/requested", func(n note) bool { return n.method == rpc.MethodReviewRequested }), &r)
	return r
}

func (ed *fakeEditor) turnEnd() rpc.Update {
	ed.t.Helper()
	var u rpc.SessionUpdateParams
	json.Unmarshal(ed.waitFor("turn end", func(n note) bool {
		return n.method == rpc.MethodSessionUpdate && (strings.Contains(string(n.params), `"turnCompleted"`) || strings.Contains(string(n.params), `"turnFailed"`))
	}), &u)
	return u.Update
}

func (ed *fakeEditor) newSession() string {
	ed.t.Helper()
	var res rpc.SessionNewResult
	ed.mustCall(rpc.MethodSessionNew, rpc.SessionNewParams{}, &res)
	return res.Session.SessionID
}

func (ed *fakeEditor) prompt(session, text string) string {
	ed.t.Helper()
	var res rpc.SessionPromptResult
	ed.mustCall(rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: session, Text: text}, &res)
	return res.TurnID
}

// applyLSPEdits applies non-overlapping edits (UTF-16 columns; the tests use ASCII) in reverse.
func applyLSPEdits(t testing.TB, text string, edits []protocol.TextEdit) string {
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		start, err := offsetOf(text, e.Range.Start)
		if err != nil {
			t.Fatal(err)
		}
		end, err := offsetOf(text, e.Range.End)
		if err != nil {
			t.Fatal(err)
		}
		text = text[:start] + e.NewText + text[end:]
	}
	return text
}

// lastToolResult returns the content of the last tool message the model received.
func (e *testEnv) lastToolResult() string {
	e.t.Helper()
	r, ok := e.ollama.LastToolResult()
	if !ok {
		e.t.Fatal("the model never received a tool result")
	}
	return r
}

const cartGo = `package shop

func Total(c *Cart) int {
	total := c.Sum()
	total -= c.Discount
	total -= c.Discount
	return total
}

func Label(c *Cart) string {
	return "cart"
}
`

// editTwoHunks scripts: read cart.go, then an edit making two distant hunks, then an answer.
func (e *testEnv) editTwoHunks() {
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"cart.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"cart.go","edits":[`+
			`{"old_string":"\ttotal -= c.Discount\n\ttotal -= c.Discount\n","new_string":"\ttotal -= c.Discount\n"},`+
			`{"old_string":"return \"cart\"","new_string":"return \"basket\""}]}`)),
		ollamatest.Text("Done."),
	)
}

// twoHunkReview starts a turn whose edit of cart.go (editTwoHunks) waits for the review of an
// editor that reviews, and returns the review.
func twoHunkReview(t *testing.T) (*testEnv, *fakeEditor, rpc.ReviewRequestedParams) {
	t.Helper()
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.editTwoHunks()
	ed := env.editor(true)
	ed.prompt(ed.newSession(), "fix the double discount")
	return env, ed, ed.review()
}

func TestAcceptOneHunkOfAClosedFile(t *testing.T) {
	env, ed, r := twoHunkReview(t)
	if r.Kind != "edit" || r.File == nil || len(r.File.Hunks) != 2 || r.File.Path != "cart.go" {
		t.Fatalf("review = %+v", r)
	}
	var res rpc.ReviewDecideResult
	ed.mustCall(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID,
		"decision": map[string]any{"type": "accept", "hunks": []string{r.File.Hunks[0].ID}, "reason": "leave the label alone"}}, &res)
	if res.Outcome != "accepted" {
		t.Errorf("outcome = %+v", res)
	}
	var upd rpc.SessionUpdateParams
	json.Unmarshal(ed.waitFor("labelled update", func(n note) bool {
		return n.method == rpc.MethodSessionUpdate && strings.Contains(string(n.params), `"toolCallUpdated"`)
	}), &upd)
	if upd.Update.ToolCall.Label == "edit" || !strings.Contains(upd.Update.ToolCall.Label, "cart.go") {
		t.Errorf("tool call label = %q, want one naming the file", upd.Update.ToolCall.Label)
	}
	if end := ed.turnEnd(); end.Type != rpc.UpdateTurnCompleted || end.Reason != "done" {
		t.Fatalf("turn end = %+v", end)
	}
	got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go"))
	want := strings.Replace(cartGo, "\ttotal -= c.Discount\n\ttotal -= c.Discount\n", "\ttotal -= c.Discount\n", 1)
	if string(got) != want {
		t.Errorf("disk =\n%s\nwant only the first hunk:\n%s", got, want)
	}
	tr := env.lastToolResult()
	if !strings.Contains(tr, r.File.Hunks[0].ID) || !strings.Contains(tr, r.File.Hunks[1].ID) || !strings.Contains(strings.ToLower(tr), "reject") {
		t.Errorf("the model was not told which hunks were applied and rejected:\n%s", tr)
	}
	if !strings.Contains(tr, "leave the label alone") {
		t.Errorf("the model was not told the reason for the rejected hunk:\n%s", tr)
	}
	ed.waitFor("review/resolved", func(n note) bool { return n.method == rpc.MethodReviewResolved })
}

func TestAcceptedHunkOfAnOpenDocumentGoesThroughApplyEdit(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.editTwoHunks()
	ed := env.editor(true)
	uri := ed.open("cart.go", cartGo)
	s := ed.newSession()
	ed.prompt(s, "fix it")
	r := ed.review()
	if r.File.URI != uri || r.File.Version != 1 {
		t.Errorf("review names %s v%d, want the open document %s v1", r.File.URI, r.File.Version, uri)
	}
	ed.mustCall(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID,
		"decision": map[string]any{"type": "accept", "hunks": []string{r.File.Hunks[1].ID}}}, nil)
	if end := ed.turnEnd(); end.Reason != "done" {
		t.Fatalf("turn end = %+v", end)
	}
	ed.mu.Lock()
	applied, saves, buffer := ed.applied, ed.saves, ed.docs[uri].text
	ed.mu.Unlock()
	if len(applied) != 1 || len(applied[0].Edit.DocumentChanges) != 1 {
		t.Fatalf("applyEdit calls = %+v", applied)
	}
	edits := applied[0].Edit.DocumentChanges[0].Edits
	if len(edits) != 1 || !strings.Contains(edits[0].NewText, "basket") {
		t.Errorf("applyEdit carried %+v, want exactly the accepted hunk", edits)
	}
	want := strings.Replace(cartGo, `return "cart"`, `return "basket"`, 1)
	if buffer != want {
		t.Errorf("buffer =\n%s", buffer)
	}
	if len(saves) != 1 {
		t.Errorf("document/save calls = %v, want one (the buffer was clean)", saves)
	}
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != want {
		t.Errorf("disk =\n%s", got)
	}
}

func TestEditOfADirtyBufferKeepsTheUsersTextAndTheDisk(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	dirty := strings.Replace(cartGo, "func Label", "// unsaved note by the user\nfunc Label", 1)
	env.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"cart.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"cart.go","old_string":"return \"cart\"","new_string":"return \"basket\""}`)),
		ollamatest.Text("Done."),
	)
	ed := env.editor(true)
	uri := ed.open("cart.go", dirty)
	s := ed.newSession()
	ed.prompt(s, "rename")
	r := ed.review()
	ed.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: "accept"}}, nil)
	ed.turnEnd()
	// The read saw the unsaved text.
	var readResult string
	if rs := env.ollama.Chats()[1].ToolResults(); len(rs) > 0 {
		readResult = rs[len(rs)-1]
	}
	if !strings.Contains(readResult, "unsaved note by the user") {
		t.Errorf("read did not see the editor's unsaved text:\n%s", readResult)
	}
	ed.mu.Lock()
	buffer, saves := ed.docs[uri].text, ed.saves
	ed.mu.Unlock()
	if want := strings.Replace(dirty, `return "cart"`, `return "basket"`, 1); buffer != want {
		t.Errorf("buffer =\n%s", buffer)
	}
	if len(saves) != 0 {
		t.Error("a buffer with unsaved changes was saved by agentd")
	}
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != cartGo {
		t.Error("the disk changed under a dirty buffer")
	}
	if tr := env.lastToolResult(); !strings.Contains(tr, "unsaved changes") {
		t.Errorf("the model was not told the change is only in the buffer:\n%s", tr)
	}
}

func TestRejectWithAReason(t *testing.T) {
	env, ed, r := twoHunkReview(t)
	var res rpc.ReviewDecideResult
	ed.mustCall(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID,
		"decision": map[string]any{"type": "reject", "reason": "keep the label as it is"}}, &res)
	if res.Outcome != "rejected" {
		t.Errorf("outcome = %s", res.Outcome)
	}
	ed.turnEnd()
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != cartGo {
		t.Error("a rejected edit changed the file")
	}
	if tr := env.lastToolResult(); !strings.Contains(tr, "keep the label as it is") || !strings.Contains(tr, "rejected_by_user") {
		t.Errorf("the model did not get the reason:\n%s", tr)
	}
}

func TestNoReviewingEditorFailsClosed(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.editTwoHunks()
	ed := env.editor(false) // cannot review
	s := ed.newSession()
	ed.prompt(s, "fix it")
	if end := ed.turnEnd(); end.Reason != "blocked" {
		t.Errorf("turn end = %+v, want blocked: no one can approve the edit", end)
	}
	ed.turnEndOf(ed.prompt(s, "what happened?")) // the model reads the result in its next request
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != cartGo {
		t.Error("an edit was applied with no editor able to review it")
	}
	if tr := env.lastToolResult(); !strings.Contains(tr, "no editor that can review") {
		t.Errorf("the model was not told why:\n%s", tr)
	}
	ed.mu.Lock()
	defer ed.mu.Unlock()
	for _, n := range ed.notes {
		if n.method == rpc.MethodReviewRequested {
			t.Error("a review was sent to an editor without review support")
		}
	}
}

func TestDisconnectDuringAReviewRejectsAndTheSessionResumes(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"cart.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"cart.go","old_string":"return \"cart\"","new_string":"return \"basket\""}`)),
	)
	ed := env.editor(true)
	s := ed.newSession()
	// An attached editor that cannot review sees the turn end; it cannot answer the review, so
	// the daemon still has no reviewer once the first editor is gone.
	watcher := env.editor(false)
	var att rpc.SessionAttachResult
	watcher.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	ed.prompt(s, "fix it")
	ed.review()
	ed.conn.Close() // the editor vanishes mid-review
	// No one can approve the edit any more: it is not run, and the turn ends there (as in
	// `agentd run` without a terminal), without asking the model again.
	if end := watcher.turnEnd(); end.Reason != "blocked" {
		t.Errorf("the interrupted turn ended with %+v, want blocked", end)
	}
	if n := len(env.ollama.Chats()); n != 2 {
		t.Errorf("the model was asked %d times, want 2 (the read, the edit)", n)
	}
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != cartGo {
		t.Error("the file changed after the reviewing editor disconnected")
	}
	// The daemon keeps serving; the session resumes in another editor, and the model's next
	// request tells it what happened.
	ed2 := env.editor(true)
	ed2.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	if len(att.History) < 3 || att.History[0].Type != "user" || att.History[0].Text != "fix it" {
		t.Errorf("resumed history = %+v", att.History)
	}
	env.ollama.Enqueue(ollamatest.Text("Still here."))
	ed2.prompt(s, "are you there?")
	if end := ed2.turnEnd(); end.Reason != "done" {
		t.Errorf("turn end after resuming = %+v", end)
	}
	if tr := env.lastToolResult(); !strings.Contains(tr, "disconnected") || !strings.Contains(tr, "approval_unavailable") {
		t.Errorf("the model was not told the editor disconnected:\n%s", tr)
	}
}

func TestTwoEditorsFirstDecisionWins(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.editTwoHunks()
	a := env.editor(true)
	b := env.editor(true)
	s := a.newSession()
	b.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, nil)
	a.prompt(s, "fix it")
	ra, rb := a.review(), b.review()
	if ra.ReviewID != rb.ReviewID {
		t.Fatalf("editors got different reviews: %s / %s", ra.ReviewID, rb.ReviewID)
	}
	b.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: rb.ReviewID, Decision: rpc.Decision{Type: "reject"}}, nil)
	err := a.call(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: ra.ReviewID, Decision: rpc.Decision{Type: "accept"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "already resolved") {
		t.Errorf("second decision: %v, want 'already resolved'", err)
	}
	for _, ed := range []*fakeEditor{a, b} {
		var rr rpc.ReviewResolvedParams
		json.Unmarshal(ed.waitFor("resolved", func(n note) bool { return n.method == rpc.MethodReviewResolved }), &rr)
		if rr.Outcome != "rejected" || rr.By != "editor" {
			t.Errorf("resolved = %+v", rr)
		}
	}
	a.turnEnd()
	b.turnEnd()
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != cartGo {
		t.Error("the losing accept was applied")
	}
}

func TestCancelMidTurn(t *testing.T) {
	env := newEnv(t, nil)
	env.ollama.Enqueue(ollamatest.Reply{Text: "thinking very slowly", Hang: true})
	ed := env.editor(true)
	s := ed.newSession()
	ed.prompt(s, "hello")
	ed.waitFor("text", func(n note) bool { return strings.Contains(string(n.params), `"textDelta"`) })
	var res rpc.SessionCancelResult
	ed.mustCall(rpc.MethodSessionCancel, rpc.SessionCancelParams{SessionID: s}, &res)
	if !res.Cancelled {
		t.Error("cancel said no turn was running")
	}
	if end := ed.turnEnd(); end.Reason != "cancelled" {
		t.Errorf("turn end = %+v", end)
	}
}

func TestBadRequests(t *testing.T) {
	env := newEnv(t, nil)
	ed := env.editor(true)
	cases := []struct {
		method string
		params any
		want   string
	}{
		{rpc.MethodSessionPrompt, map[string]any{"sessionId": "s-nope", "text": "hi"}, "not attached"},
		{rpc.MethodSessionAttach, map[string]any{"sessionId": "s-nope"}, "s-nope"},
		{rpc.MethodReviewDecide, map[string]any{"reviewId": "r-999", "decision": map[string]any{"type": "accept"}}, "unknown review"},
		{rpc.MethodReviewDecide, map[string]any{"reviewId": "r-1", "decision": map[string]any{"type": "accept", "extra": 1}}, "invalid"},
		{rpc.MethodSessionNew, map[string]any{"workspaceFolder": "file:///etc"}, "not inside a workspace folder"},
		{rpc.MethodSessionNew, map[string]any{"workspaceFolder": "untitled:Untitled-1"}, "file: URI"},
		{rpc.MethodSessionNew, map[string]any{"approvalMode": "reckless"}, "mode"},
		{"session/explode", map[string]any{}, "not found"},
	}
	for _, c := range cases {
		err := ed.call(c.method, c.params, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: error %v, want %q", c.method, c.params, err, c.want)
		}
	}
	// A request that cannot be carried out has a code and a readable message.
	s := ed.newSession()
	err := ed.call(rpc.MethodSessionRevert, rpc.SessionRevertParams{SessionID: s}, nil)
	var rerr *jsonrpc2.Error
	if !errors.As(err, &rerr) || rerr.Code != rpc.CodeRequestFailed || !strings.Contains(rerr.Message, "no turn of this session changed files") {
		t.Errorf("revert with nothing to revert: %#v", err)
	}
	// Documents outside the workspace and untitled ones never enter the overlay.
	ed.conn.Notify(context.Background(), "textDocument/didOpen", map[string]any{
		"textDocument": map[string]any{"uri": "file:///etc/passwd", "languageId": "x", "version": 1, "text": "x"}})
	ed.conn.Notify(context.Background(), "textDocument/didOpen", map[string]any{
		"textDocument": map[string]any{"uri": "untitled:Untitled-1", "languageId": "x", "version": 1, "text": "x"}})
	ed.mustCall(rpc.MethodSessionList, map[string]any{}, nil) // a round trip: the notifications were handled
	if open := env.srv.overlay.Open(); len(open) != 0 {
		t.Errorf("overlay holds %v", open)
	}
}

func TestTurnFailureShowsTheFix(t *testing.T) {
	env := newEnv(t, nil)
	env.ollama.Enqueue(ollamatest.HTTPError(404, "model 'qwen3:8b' not found"))
	ed := env.editor(true)
	s := ed.newSession()
	ed.prompt(s, "hi")
	end := ed.turnEnd()
	if end.Type != rpc.UpdateTurnFailed || end.Error == nil || !strings.Contains(end.Error.Fix, "ollama pull qwen3:8b") {
		t.Fatalf("turn end = %+v", end)
	}
	msg := ed.waitFor("showMessage", func(n note) bool { return n.method == "window/showMessage" })
	if !strings.Contains(string(msg), "ollama pull qwen3:8b") || !strings.Contains(string(msg), `"type":1`) {
		t.Errorf("showMessage = %s", msg)
	}
}

func TestReviewTimeoutRejects(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.srv.reviewTimeout = 200 * time.Millisecond
	env.editTwoHunks()
	ed := env.editor(true)
	s := ed.newSession()
	ed.prompt(s, "fix it")
	r := ed.review()
	if r.TimeoutMs != 200 {
		t.Errorf("review timeoutMs = %d", r.TimeoutMs)
	}
	var rr rpc.ReviewResolvedParams
	json.Unmarshal(ed.waitFor("resolved", func(n note) bool { return n.method == rpc.MethodReviewResolved }), &rr)
	if rr.By != "timeout" || rr.Outcome != "rejected" {
		t.Errorf("resolved = %+v", rr)
	}
	if end := ed.turnEnd(); end.Reason != "blocked" {
		t.Errorf("turn end = %+v, want blocked: no one approved the edit", end)
	}
	ed.turnEndOf(ed.prompt(s, "what happened?")) // the model reads the result in its next request
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != cartGo {
		t.Error("a timed-out review changed the file")
	}
	if tr := env.lastToolResult(); !strings.Contains(tr, "no decision within") {
		t.Errorf("tool result:\n%s", tr)
	}
}

func TestWarningsReachTheEditorsLog(t *testing.T) {
	env := newEnv(t, nil)
	ed := env.editor(true)
	h := NewLogHandler(slog.NewTextHandler(io.Discard, nil))
	h.Attach(env.srv)
	slog.New(h).Warn("the disk is nearly full", "free", "1%")
	msg := ed.waitFor("logMessage", func(n note) bool { return n.method == "window/logMessage" })
	if !strings.Contains(string(msg), "the disk is nearly full free=1%") || !strings.Contains(string(msg), `"type":2`) {
		t.Errorf("logMessage = %s", msg)
	}
}

func TestWithoutASandboxEveryCommandAsksEvenInYolo(t *testing.T) {
	env := newEnvWith(t, nil, func(o *harness.Options) {
		o.SandboxFeatures = &sandbox.Features{Arch: "x86_64"} // nothing works
		o.ApprovalMode = "yolo"
	})
	env.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("bash", `{"command":"echo unconfined > out.txt"}`)),
		ollamatest.Calls(ollamatest.Call("bash", `{"command":"echo again > out2.txt"}`)),
		ollamatest.Text("done"),
	)
	ed := env.editor(true)
	s := ed.newSession()
	ed.prompt(s, "run it")
	r := ed.review()
	if r.Kind != "command" || r.Command == nil || r.Command.Sandbox != "none" || len(r.Scopes) != 0 {
		t.Fatalf("review = %+v (command %+v)", r, r.Command)
	}
	if !strings.Contains(r.Why, "sandbox") && !strings.Contains(r.Why, "unsandboxed") {
		t.Errorf("the review does not say why: %q", r.Why)
	}
	ed.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: "accept"}}, nil)
	// The second command asks again: one approval covers one command.
	r2 := ed.waitFor("second review", func(n note) bool {
		return n.method == rpc.MethodReviewRequested && !strings.Contains(string(n.params), `"`+r.ReviewID+`"`)
	})
	var rr rpc.ReviewRequestedParams
	json.Unmarshal(r2, &rr)
	ed.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: rr.ReviewID, Decision: rpc.Decision{Type: "reject"}}, nil)
	ed.turnEnd()
	if got, _ := os.ReadFile(filepath.Join(env.ws, "out.txt")); string(got) != "unconfined\n" {
		t.Errorf("the approved unsandboxed command did not run: %q", got)
	}
	if _, err := os.Stat(filepath.Join(env.ws, "out2.txt")); err == nil {
		t.Error("the rejected command ran")
	}
}

func TestTheEditorsOllamaHostAndContextCapApplyToItsSessions(t *testing.T) {
	env := newEnv(t, nil)
	other := ollamatest.NewServer(&ollamatest.Script{Models: []ollamatest.Model{
		{Name: "qwen3:8b", Capabilities: []string{"completion", "tools"}, ContextLength: 40960}}})
	defer other.Close()
	other.Enqueue(ollamatest.Text("from the editor's server"))
	ed := env.editorWith(rpc.InitializationOptions{ProtocolVersion: 1, Reviews: true, OllamaHost: other.URL, ContextLength: 12288})
	s := ed.newSession()
	ed.prompt(s, "hi")
	if end := ed.turnEnd(); end.Type != rpc.UpdateTurnCompleted {
		t.Fatalf("turn end = %+v", end)
	}
	chats := other.Chats()
	if len(chats) != 1 || len(env.ollama.Chats()) != 0 {
		t.Fatalf("editor's server got %d chats, the daemon's default %d", len(chats), len(env.ollama.Chats()))
	}
	if n := chats[0].NumCtx(); n == 0 || n > 12288 {
		t.Errorf("num_ctx = %d, want at most the editor's cap 12288", n)
	}
}
