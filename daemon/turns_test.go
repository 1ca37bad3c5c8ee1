package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
	"go.lsp.dev/jsonrpc2"
)

// yoloTurnOnTwoFiles runs one yolo turn that edits cart.go in two hunks (the second Discount line
// goes; "cart" becomes "basket") and creates notes.txt, and returns the session.
func yoloTurnOnTwoFiles(t *testing.T, env *testEnv, ed *fakeEditor) string {
	t.Helper()
	env.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"cart.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"cart.go","edits":[`+
			`{"old_string":"\ttotal -= c.Discount\n\ttotal -= c.Discount\n","new_string":"\ttotal -= c.Discount\n"},`+
			`{"old_string":"return \"cart\"","new_string":"return \"basket\""}]}`)),
		ollamatest.Calls(ollamatest.Call("write", `{"path":"notes.txt","content":"one\ntwo\n"}`)),
		ollamatest.Text("Done."),
	)
	var res rpc.SessionNewResult
	ed.mustCall(rpc.MethodSessionNew, rpc.SessionNewParams{ApprovalMode: "yolo"}, &res)
	s := res.Session.SessionID
	ed.prompt(s, "fix the discount\nand more words on a second line")
	if end := ed.turnEnd(); end.Reason != "done" {
		t.Fatalf("turn end = %+v\n%s", end, ed.dump())
	}
	return s
}

// endOf waits for the end of the turn with the given ID.
func endOf(ed *fakeEditor, turn string) {
	ed.t.Helper()
	ed.waitFor("the end of turn "+turn, func(n note) bool {
		p := string(n.params)
		return n.method == rpc.MethodSessionUpdate && strings.Contains(p, `"turnId":"`+turn+`"`) &&
			(strings.Contains(p, `"turnCompleted"`) || strings.Contains(p, `"turnFailed"`))
	})
}

func changes(t *testing.T, ed *fakeEditor, s, turn string) rpc.TurnChangesResult {
	t.Helper()
	var ch rpc.TurnChangesResult
	ed.mustCall(rpc.MethodTurnChanges, rpc.TurnChangesParams{SessionID: s, TurnID: turn}, &ch)
	return ch
}

func fileOf(t *testing.T, ch rpc.TurnChangesResult, path string) rpc.TurnChange {
	t.Helper()
	for _, f := range ch.Files {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("turn/changes has no %s: %+v", path, ch)
	return rpc.TurnChange{}
}

func readWS(t *testing.T, env *testEnv, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.ws, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTurnChangesListAndUndoOneHunk(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	ed := env.editor(true)
	s := yoloTurnOnTwoFiles(t, env, ed)

	var list rpc.TurnListResult
	ed.mustCall(rpc.MethodTurnList, rpc.TurnListParams{SessionID: s}, &list)
	if len(list.Turns) != 1 || list.Turns[0].TurnID != "t1" || list.Turns[0].Prompt != "fix the discount" ||
		list.Turns[0].Files != 2 || list.Turns[0].Reverted || list.Turns[0].CreatedAt == "" {
		t.Fatalf("turn/list = %+v", list)
	}

	ch := changes(t, ed, s, "")
	if ch.TurnID != "t1" || len(ch.Files) != 2 {
		t.Fatalf("turn/changes = %+v", ch)
	}
	cart, notes := fileOf(t, ch, "cart.go"), fileOf(t, ch, "notes.txt")
	if cart.Status != "modified" || len(cart.Hunks) != 2 || cart.ChangedSince || !strings.Contains(cart.Diff, "+\treturn \"basket\"") ||
		cart.URI != fileURI(filepath.Join(env.ws, "cart.go")) || !strings.HasPrefix(cart.Hunks[0].Header, "@@ -") {
		t.Errorf("cart.go = %+v", cart)
	}
	if notes.Status != "created" || len(notes.Hunks) != 1 || !strings.Contains(notes.Diff, "+++ b/notes.txt") {
		t.Errorf("notes.txt = %+v", notes)
	}
	// The same ids twice (stable).
	if again := fileOf(t, changes(t, ed, s, "t1"), "cart.go"); again.Hunks[0].ID != cart.Hunks[0].ID {
		t.Errorf("hunk ids changed between two turn/changes: %s, %s", cart.Hunks[0].ID, again.Hunks[0].ID)
	}

	// Undo the first hunk (the removed Discount line) only.
	var undo rpc.TurnUndoResult
	ed.mustCall(rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: s, TurnID: "t1",
		Hunks: map[string][]string{cart.URI: {cart.Hunks[0].ID}}}, &undo)
	if len(undo.Undone) != 1 || undo.Undone[0] != "cart.go" || len(undo.Skipped) != 0 {
		t.Fatalf("turn/undo = %+v", undo)
	}
	want := strings.Replace(cartGo, `return "cart"`, `return "basket"`, 1)
	if got := readWS(t, env, "cart.go"); got != want {
		t.Errorf("cart.go after undoing hunk 1 =\n%s\nwant\n%s", got, want)
	}
	if got := readWS(t, env, "notes.txt"); got != "one\ntwo\n" {
		t.Errorf("notes.txt was touched: %q", got)
	}
	// What is left of the turn: one hunk in cart.go, notes.txt as before.
	left := fileOf(t, changes(t, ed, s, "t1"), "cart.go")
	if len(left.Hunks) != 1 || left.ChangedSince || strings.Contains(left.Diff, "Discount") {
		t.Errorf("cart.go after the undo = %+v", left)
	}

	// The model's next request tells what the user undid, in a message of its own before the
	// prompt (undo_note_test.go checks the rest).
	env.ollama.Enqueue(ollamatest.Text("Noted."))
	endOf(ed, ed.prompt(s, "thanks"))
	last, ok := env.ollama.LastChat()
	if !ok {
		t.Fatal("no chat request")
	}
	msgs := last.Request.Messages
	note, user := msgs[len(msgs)-2], msgs[len(msgs)-1]
	if note.Role != "user" || !strings.Contains(note.Content, "undid") || !strings.Contains(note.Content, "cart.go: reverted hunk 1 of 2") ||
		user.Role != "user" || user.Content != "thanks" {
		t.Errorf("the model's next request did not mention the undo before the prompt:\n%s\n---\n%s", note.Content, user.Content)
	}
	// Once only.
	env.ollama.Enqueue(ollamatest.Text("Ok."))
	endOf(ed, ed.prompt(s, "again"))
	last, _ = env.ollama.LastChat()
	if msgs := last.Request.Messages; strings.Contains(msgs[len(msgs)-1].Content, "undid") {
		t.Errorf("the undo note was repeated: %s", msgs[len(msgs)-1].Content)
	}

	// Undo the created file: deleted. Then every file is back: the turn counts as reverted.
	ed.mustCall(rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: s, TurnID: "t1", Files: []string{notes.URI}}, &undo)
	if len(undo.Undone) != 1 || undo.Undone[0] != "notes.txt" {
		t.Fatalf("turn/undo notes.txt = %+v", undo)
	}
	if _, err := os.Stat(filepath.Join(env.ws, "notes.txt")); !os.IsNotExist(err) {
		t.Errorf("notes.txt still exists after undoing its creation: %v", err)
	}
	ed.mustCall(rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: s, TurnID: "t1", Files: []string{cart.URI}}, &undo)
	if got := readWS(t, env, "cart.go"); got != cartGo {
		t.Errorf("cart.go after undoing the file =\n%s", got)
	}
	ed.mustCall(rpc.MethodTurnList, rpc.TurnListParams{SessionID: s}, &list)
	if len(list.Turns) != 1 || !list.Turns[0].Reverted {
		t.Errorf("turn/list after undoing every file = %+v", list)
	}
	if ch := changes(t, ed, s, ""); ch.TurnID != "" || len(ch.Files) != 0 {
		t.Errorf("turn/changes with nothing left = %+v", ch)
	}
}

func TestTurnUndoSkipsFilesChangedSinceAndNamesThem(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	ed := env.editor(true)
	s := yoloTurnOnTwoFiles(t, env, ed)
	theirs := readWS(t, env, "cart.go") + "// the user's own line\n"
	if err := os.WriteFile(filepath.Join(env.ws, "cart.go"), []byte(theirs), 0o644); err != nil {
		t.Fatal(err)
	}
	cart := fileOf(t, changes(t, ed, s, "t1"), "cart.go")
	if !cart.ChangedSince || !strings.Contains(cart.Reason, "changed since") || !strings.Contains(cart.Diff, "the user's own line") {
		t.Errorf("cart.go changed since the turn = %+v", cart)
	}
	var undo rpc.TurnUndoResult
	ed.mustCall(rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: s, TurnID: "t1"}, &undo)
	if len(undo.Undone) != 1 || undo.Undone[0] != "notes.txt" || len(undo.Skipped) != 1 || undo.Skipped[0].Path != "cart.go" ||
		!strings.Contains(undo.Skipped[0].Reason, "changed since") {
		t.Errorf("turn/undo of the whole turn = %+v", undo)
	}
	if got := readWS(t, env, "cart.go"); got != theirs {
		t.Errorf("a file changed since the turn was overwritten:\n%s", got)
	}
	// Per hunk too.
	err := ed.call(rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: s, TurnID: "t1",
		Hunks: map[string][]string{cart.URI: {cart.Hunks[0].ID}}}, &undo)
	if err != nil || len(undo.Skipped) != 1 || undo.Skipped[0].Path != "cart.go" || len(undo.Undone) != 0 {
		t.Errorf("hunk undo of a changed file: %+v, %v", undo, err)
	}
	if got := readWS(t, env, "cart.go"); got != theirs {
		t.Errorf("a file changed since the turn was overwritten by a hunk undo:\n%s", got)
	}
}

func TestTurnUndoOfAnOpenDocument(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	ed := env.editor(true)
	s := yoloTurnOnTwoFiles(t, env, ed)
	after := readWS(t, env, "cart.go")
	cart := fileOf(t, changes(t, ed, s, "t1"), "cart.go")

	// A dirty buffer (unsaved text): the file counts as changed since; neither disk nor buffer
	// is written.
	dirty := after + "// unsaved\n"
	uri := ed.open("cart.go", dirty)
	var undo rpc.TurnUndoResult
	ed.mustCall(rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: s, TurnID: "t1", Files: []string{uri}}, &undo)
	if len(undo.Skipped) != 1 || undo.Skipped[0].Path != "cart.go" || len(undo.Undone) != 0 {
		t.Errorf("undo under a dirty buffer = %+v", undo)
	}
	ed.mu.Lock()
	applied, buffer := len(ed.applied), ed.docs[uri].text
	ed.mu.Unlock()
	if applied != 0 || buffer != dirty || readWS(t, env, "cart.go") != after {
		t.Errorf("undo wrote under a dirty buffer: %d applyEdit, buffer %q", applied, buffer)
	}

	// The user saves nothing but undoes their typing: the buffer is clean again, and the undo
	// of one hunk goes through workspace/applyEdit (then document/save).
	ed.mu.Lock()
	ed.docs[uri].text, ed.docs[uri].version = after, 2
	ed.mu.Unlock()
	ed.sendChange(uri, 2, after)
	ed.mustCall(rpc.MethodSessionList, map[string]any{}, nil) // a round trip: didChange handled
	ed.mustCall(rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: s, TurnID: "t1",
		Hunks: map[string][]string{uri: {cart.Hunks[1].ID}}}, &undo)
	if len(undo.Undone) != 1 {
		t.Fatalf("undo of a clean open document = %+v", undo)
	}
	want := strings.Replace(after, `return "basket"`, `return "cart"`, 1)
	ed.mu.Lock()
	applied, buffer = len(ed.applied), ed.docs[uri].text
	ed.mu.Unlock()
	if applied != 1 || buffer != want {
		t.Errorf("the undo did not go through the editor: %d applyEdit, buffer\n%s", applied, buffer)
	}
	if got := readWS(t, env, "cart.go"); got != want {
		t.Errorf("disk after the editor saved =\n%s", got)
	}
}

func TestTurnRequestErrors(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	ed := env.editor(true)
	s := yoloTurnOnTwoFiles(t, env, ed)
	uri := fileURI(filepath.Join(env.ws, "cart.go"))
	cases := []struct {
		method string
		params any
		code   int64
		want   string
	}{
		{rpc.MethodTurnList, rpc.TurnListParams{SessionID: "s-nope"}, int64(rpc.CodeUnknownSession), "s-nope"},
		{rpc.MethodTurnChanges, rpc.TurnChangesParams{SessionID: "s-nope"}, int64(rpc.CodeUnknownSession), "s-nope"},
		{rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: "s-nope", TurnID: "t1"}, int64(rpc.CodeUnknownSession), "s-nope"},
		{rpc.MethodTurnChanges, rpc.TurnChangesParams{SessionID: s, TurnID: "t9"}, int64(rpc.CodeInvalidParams), `"t9"`},
		{rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: s, TurnID: "t9"}, int64(rpc.CodeInvalidParams), `"t9"`},
		{rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: s, TurnID: "t1", Hunks: map[string][]string{uri: {"h-bogus"}}},
			int64(rpc.CodeInvalidParams), `"h-bogus"`},
		{rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: s, TurnID: "t1", Files: []string{fileURI(filepath.Join(env.ws, "other.go"))}},
			int64(rpc.CodeInvalidParams), "other.go"},
	}
	for _, c := range cases {
		err := ed.call(c.method, c.params, nil)
		var rerr *jsonrpc2.Error
		if !errors.As(err, &rerr) || int64(rerr.Code) != c.code || !strings.Contains(rerr.Message, c.want) {
			t.Errorf("%s %+v: error %v, want code %d naming %s", c.method, c.params, err, c.code, c.want)
		}
	}
	// Nothing was changed by the failed requests.
	if got := readWS(t, env, "cart.go"); !strings.Contains(got, "basket") {
		t.Errorf("a failed undo changed cart.go:\n%s", got)
	}
}
