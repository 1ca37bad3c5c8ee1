package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

// session/rewind: the editor is attached to a new session holding the turns before the one it
// rewound, the files that turn wrote are gone but the one the user changed since, which is
// listed; the old session is left as it is. session/fork copies a session.
func TestRewindAndForkFromTheEditor(t *testing.T) {
	env := newEnvWith(t, nil, func(o *harness.Options) { o.ApprovalMode = "auto-edit" })
	env.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("write", `{"path":"one.txt","content":"1\n"}`)), ollamatest.Text("Wrote one."),
		ollamatest.Calls(ollamatest.Call("write", `{"path":"two.txt","content":"2\n"}`),
			ollamatest.Call("write", `{"path":"three.txt","content":"3\n"}`)), ollamatest.Text("Wrote two and three."))
	ed := env.editor(true)
	// ended waits for the end of one turn of one session.
	ended := func(session, turn string) {
		t.Helper()
		ed.waitFor("the end of "+turn, func(n note) bool {
			var u rpc.SessionUpdateParams
			return n.method == rpc.MethodSessionUpdate && json.Unmarshal(n.params, &u) == nil && u.SessionID == session &&
				u.TurnID == turn && u.Update.Type == rpc.UpdateTurnCompleted
		})
	}
	s := ed.newSession()
	ed.prompt(s, "write one")
	ended(s, "t1")
	// The second prompt goes with the editor's context (the active file): the model reads it,
	// but the rewind gives back what the user wrote.
	var pr rpc.SessionPromptResult
	ed.mustCall(rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: s, Text: "write two and three",
		Context: []rpc.ContextItem{{URI: fileURI(filepath.Join(env.ws, "one.txt"))}}}, &pr)
	ended(s, "t2")
	if err := os.WriteFile(filepath.Join(env.ws, "three.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var rw rpc.SessionRewindResult
	ed.mustCall(rpc.MethodSessionRewind, rpc.SessionRewindParams{SessionID: s, TurnID: "t2"}, &rw)
	if rw.Session.SessionID == s || rw.Session.Turns != 1 || rw.Prompt != "write two and three" {
		t.Fatalf("rewind = %+v: want a new session of one turn and the second prompt as the user wrote it, without the editor context", rw)
	}
	if last, ok := env.ollama.LastChat(); !ok || !strings.Contains(string(last.Body), "The user is looking at one.txt.") {
		t.Errorf("the model did not read the editor context of the second prompt")
	}
	if len(rw.Restored) != 1 || rw.Restored[0] != "two.txt" || len(rw.Skipped) != 1 || rw.Skipped[0].Path != "three.txt" {
		t.Errorf("restored %v, skipped %+v: want two.txt restored and three.txt listed", rw.Restored, rw.Skipped)
	}
	if b, _ := os.ReadFile(filepath.Join(env.ws, "three.txt")); string(b) != "mine\n" {
		t.Errorf("three.txt = %q: the user's change was overwritten", b)
	}
	if _, err := os.Stat(filepath.Join(env.ws, "two.txt")); err == nil {
		t.Error("two.txt is still there")
	}
	var att rpc.SessionAttachResult
	ed.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: rw.Session.SessionID}, &att)
	var users []string
	for _, h := range att.History {
		if h.Type == rpc.HistoryUser {
			users = append(users, h.Text)
		}
	}
	if len(users) != 1 || users[0] != "write one" {
		t.Errorf("the new session's prompts = %q, want the first only", users)
	}
	// The editor goes on in the new session, already attached.
	env.ollama.Enqueue(ollamatest.Text("Only two now."))
	if id := ed.prompt(rw.Session.SessionID, "write only two"); id != "t2" {
		t.Errorf("the next turn of the new session is %s, want t2", id)
	}
	ended(rw.Session.SessionID, "t2")

	var fk rpc.SessionForkResult
	ed.mustCall(rpc.MethodSessionFork, rpc.SessionForkParams{SessionID: s}, &fk)
	if fk.Session.SessionID == s || fk.Session.Turns != 2 {
		t.Errorf("fork = %+v: want a new session with the two turns", fk.Session)
	}
}
