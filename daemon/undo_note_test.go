package daemon

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

const undoNoteMark = "since your last turn the user undid"

// userUpdates returns the texts of the userMessage updates of a turn an editor received.
func userUpdates(ed *fakeEditor, turn string) []string {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	var out []string
	for _, n := range ed.notes {
		var u rpc.SessionUpdateParams
		if n.method == rpc.MethodSessionUpdate && json.Unmarshal(n.params, &u) == nil &&
			u.TurnID == turn && u.Update.Type == rpc.UpdateUserMessage {
			out = append(out, u.Update.Text)
		}
	}
	return out
}

// historyUsers returns the user items of an attach's history, and fails on any item that shows
// the undo note.
func historyUsers(t *testing.T, what string, att rpc.SessionAttachResult) []string {
	t.Helper()
	var users []string
	for _, h := range att.History {
		if strings.Contains(h.Text, undoNoteMark) {
			t.Errorf("%s: the undo note shows in the history as a %s item of turn %s: %q", what, h.Type, h.TurnID, h.Text)
		}
		if h.Type == rpc.HistoryUser {
			users = append(users, h.Text)
		}
	}
	return users
}

// After an undo, the model reads what the user undid in a message of its own before the next
// prompt; the prompt the model, the editors (live and in the attach history, also after a resume
// from the journal) and the journal see is exactly what the user typed, and the messages before
// it are the previous request's, byte for byte (the prompt cache still applies).
func TestUndoNoteIsItsOwnMessageNotTheUsersWords(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	ed := env.editor(true)
	s := yoloTurnOnTwoFiles(t, env, ed)
	cart := fileOf(t, changes(t, ed, s, "t1"), "cart.go")
	var undo rpc.TurnUndoResult
	ed.mustCall(rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: s, TurnID: "t1",
		Hunks: map[string][]string{cart.URI: {cart.Hunks[0].ID}}}, &undo)
	if len(undo.Undone) != 1 {
		t.Fatalf("turn/undo = %+v", undo)
	}

	before := env.ollama.Chats()
	env.ollama.Enqueue(ollamatest.Text("Noted."))
	turn := ed.prompt(s, "thanks")
	endOf(ed, turn)
	chats := env.ollama.Chats()
	if len(chats) != len(before)+1 {
		t.Fatalf("%d chat requests for the turn, want 1", len(chats)-len(before))
	}
	prev, msgs := before[len(before)-1].Request.Messages, chats[len(chats)-1].Request.Messages
	// prev, then the answer to it, the note and the prompt.
	if len(msgs) != len(prev)+3 {
		t.Fatalf("the request after the undo has %d messages, want %d (the previous %d, the answer, the note, the prompt)", len(msgs), len(prev)+3, len(prev))
	}
	for i := range prev {
		if !reflect.DeepEqual(msgs[i], prev[i]) {
			t.Errorf("message %d of the request changed after the undo (the prompt prefix is not cache-stable):\n%+v\nwas\n%+v", i, msgs[i], prev[i])
		}
	}
	note, user := msgs[len(msgs)-2], msgs[len(msgs)-1]
	if note.Role != "user" || !strings.Contains(note.Content, undoNoteMark) || !strings.Contains(note.Content, "cart.go: reverted hunk 1 of 2") {
		t.Errorf("the message before the prompt is not the undo note: %s %q", note.Role, note.Content)
	}
	if user.Role != "user" || user.Content != "thanks" {
		t.Errorf("the prompt the model got = %s %q, want user %q", user.Role, user.Content, "thanks")
	}
	if got := userUpdates(ed, turn); !reflect.DeepEqual(got, []string{"thanks"}) {
		t.Errorf("the editor was shown the user messages %q in turn %s, want [\"thanks\"]", got, turn)
	}

	// The next turn: the note is not told again (it stays where it was in the history).
	env.ollama.Enqueue(ollamatest.Text("Ok."))
	endOf(ed, ed.prompt(s, "again"))
	last, _ := env.ollama.LastChat()
	n := 0
	for _, m := range last.Request.Messages {
		if strings.Contains(m.Content, undoNoteMark) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the undo note is in the next request %d times, want once", n)
	}

	wantUsers := []string{"fix the discount\nand more words on a second line", "thanks", "again"}
	b := env.editor(true)
	var att rpc.SessionAttachResult
	b.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	if got := historyUsers(t, "attach", att); !reflect.DeepEqual(got, wantUsers) {
		t.Errorf("the attach history's user messages = %q, want %q", got, wantUsers)
	}

	// From the journal, in another daemon: the same, and the model still gets the note.
	env.srv.Shutdown()
	env2 := newEnvWith(t, nil, func(o *harness.Options) { o.StateDir = env.srv.rt.Options().StateDir })
	c := env2.editor(true)
	c.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	if got := historyUsers(t, "resumed attach", att); !reflect.DeepEqual(got, wantUsers) {
		t.Errorf("the resumed attach history's user messages = %q, want %q", got, wantUsers)
	}
	env2.ollama.Enqueue(ollamatest.Text("Resumed."))
	endOf(c, c.prompt(s, "once more"))
	last, ok := env2.ollama.LastChat()
	if !ok {
		t.Fatal("no chat request after the resume")
	}
	var noted bool
	for i, m := range last.Request.Messages {
		if strings.Contains(m.Content, undoNoteMark) {
			next := last.Request.Messages[i+1]
			noted = m.Role == "user" && next.Role == "user" && next.Content == "thanks"
		}
	}
	if !noted {
		t.Errorf("the resumed session's request lost the undo note before %q: %+v", "thanks", last.Request.Messages)
	}
}
