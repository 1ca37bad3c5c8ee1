package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

// TestApprovalUnavailable: when no one can decide a review — no editor that can review is
// attached, the reviewing editor disconnects, no decision comes within the timeout — the call is
// not run, the turn ends ("blocked", as in `agentd run` without a terminal) without asking the
// model again, and the model's next request carries approval_unavailable saying which, not
// "the user rejected".
func TestApprovalUnavailable(t *testing.T) {
	for _, c := range []struct {
		name string
		// start prompts the session and makes the review unanswerable; it returns the editor
		// that stays attached and the turn.
		start func(t *testing.T, env *testEnv) (*fakeEditor, string, string)
		want  string
	}{
		{"no editor", func(t *testing.T, env *testEnv) (*fakeEditor, string, string) {
			ed := env.editor(false)
			s := ed.newSession()
			return ed, s, ed.prompt(s, "write a note")
		}, "no one was asked: no editor that can review changes is attached"},
		{"disconnect", func(t *testing.T, env *testEnv) (*fakeEditor, string, string) {
			ed := env.editor(true)
			s := ed.newSession()
			watcher := env.editor(false) // attached, but cannot review
			watcher.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, nil)
			turn := ed.prompt(s, "write a note")
			ed.review()
			ed.conn.Close()
			return watcher, s, turn
		}, "the editor that was reviewing it disconnected before the user decided"},
		{"timeout", func(t *testing.T, env *testEnv) (*fakeEditor, string, string) {
			env.srv.reviewTimeout = 200 * time.Millisecond
			ed := env.editor(true)
			s := ed.newSession()
			turn := ed.prompt(s, "write a note")
			ed.review() // and no answer
			return ed, s, turn
		}, "the user was asked but made no decision within 200ms (the review timeout)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newEnv(t, nil)
			env.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("write", `{"path":"note.txt","content":"hi\n"}`)))
			ed, s, turn := c.start(t, env)
			if end := ed.turnEndOf(turn); end.Type != rpc.UpdateTurnCompleted || end.Reason != "blocked" {
				t.Errorf("turn end = %+v, want turnCompleted, blocked", end)
			}
			ed.waitFor("the call's end as approval_unavailable", func(n note) bool {
				return n.method == rpc.MethodSessionUpdate && strings.Contains(string(n.params), `"toolCallCompleted"`) &&
					strings.Contains(string(n.params), `"type":"approval_unavailable"`)
			})
			if n := len(env.ollama.Chats()); n != 1 {
				t.Errorf("the model was asked %d times in the turn, want 1", n)
			}
			if _, err := os.Stat(filepath.Join(env.ws, "note.txt")); !os.IsNotExist(err) {
				t.Errorf("the unapproved write happened: %v", err)
			}
			env.ollama.Enqueue(ollamatest.Text("Understood."))
			if end := ed.turnEndOf(ed.prompt(s, "what happened?")); end.Reason != "done" {
				t.Errorf("next turn end = %+v", end)
			}
			res := env.toolResults()
			if len(res) != 1 {
				t.Fatalf("the model's next request has %d tool results, want 1: %q", len(res), res)
			}
			for _, w := range []string{"approval_unavailable", "Not run", "nothing was changed", "The turn ends here.", c.want} {
				if !strings.Contains(res[0], w) {
					t.Errorf("the model's next request does not say %q:\n%s", w, res[0])
				}
			}
			if strings.Contains(res[0], "rejected") {
				t.Errorf("the model was told the user rejected the call:\n%s", res[0])
			}
		})
	}
}
