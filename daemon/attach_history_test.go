package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools/sandbox"
	"go.lsp.dev/protocol"
)

// liveTurnIDs collects the turn IDs of every session/update an editor received.
func liveTurnIDs(ed *fakeEditor) map[string]bool {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	ids := map[string]bool{}
	for _, n := range ed.notes {
		if n.method != rpc.MethodSessionUpdate {
			continue
		}
		var u rpc.SessionUpdateParams
		if json.Unmarshal(n.params, &u) == nil && u.TurnID != "" {
			ids[u.TurnID] = true
		}
	}
	return ids
}

// The history groups messages by the agent's real turns: a steering message sent mid-turn (and
// the loop's nudge after an empty reply, which the history leaves out) belongs to the turn it was
// sent in, so an editor
// attaching mid-turn gets the turn ID the live updates carry (before, each user-role message
// counted as a new turn: the running turn was "t4" in the history and "t2" on the wire).
func TestAttachAfterSteeringKeepsTheLiveTurnIDs(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.ollama.Enqueue(
		ollamatest.Text("Hello."),
		// Turn 2: an empty reply (the loop nudges), an edit the user steers away from, then
		// an edit that waits for its review while the second editor attaches.
		ollamatest.Text(""),
		ollamatest.Calls(ollamatest.Call("read", `{"path":"cart.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"cart.go","old_string":"return \"cart\"","new_string":"return \"basket\""}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"cart.go","old_string":"return \"cart\"","new_string":"return \"trolley\""}`)),
		ollamatest.Text("Done."),
	)
	a := env.editor(true)
	s := a.newSession()
	t1 := a.prompt(s, "hi")
	if end := a.turnEnd(); end.Reason != "done" {
		t.Fatalf("first turn end = %+v", end)
	}
	t2 := a.prompt(s, "rename the label")
	if t1 == t2 {
		t.Fatalf("two prompts got one turn ID %q", t1)
	}
	r1 := a.review()
	var steer rpc.SessionSteerResult
	a.mustCall(rpc.MethodSessionSteer, rpc.SessionSteerParams{SessionID: s, Text: "call it a trolley instead"}, &steer)
	if steer.TurnID != t2 {
		t.Fatalf("the steer joined turn %q, want the running %q", steer.TurnID, t2)
	}
	var r2 rpc.ReviewRequestedParams
	json.Unmarshal(a.waitFor("the second edit's review (after the steer)", func(n note) bool {
		return n.method == rpc.MethodReviewRequested && strings.Contains(string(n.params), "trolley") &&
			!strings.Contains(string(n.params), `"`+r1.ReviewID+`"`)
	}), &r2)

	b := env.editor(true)
	var att rpc.SessionAttachResult
	b.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	if !att.Session.Running {
		t.Fatalf("session not running while its edit waits for a review: %+v", att.Session)
	}
	var users []string
	for i, h := range att.History {
		if h.TurnID != t1 && h.TurnID != t2 {
			t.Errorf("history item %d (%s %q) has turn %q; the live turns are %q and %q", i, h.Type, h.Text, h.TurnID, t1, t2)
		}
		if h.Type == rpc.HistoryUser {
			users = append(users, h.TurnID+": "+h.Text)
		}
	}
	// The prompts and the steer sent within turn 2 carry its ID; the loop's nudge after the
	// empty reply is agentd's, not the user's words: it is not in the history.
	wantUsers := []string{t1 + ": hi", t2 + ": rename the label", t2 + ": call it a trolley instead"}
	if len(users) != len(wantUsers) {
		t.Fatalf("user messages of the history = %q, want %q", users, wantUsers)
	}
	for i, w := range wantUsers {
		if !strings.HasPrefix(users[i], w) {
			t.Errorf("user message %d of the history = %q, want %q…", i, users[i], w)
		}
	}
	if last := att.History[len(att.History)-1]; last.Type != rpc.HistoryTool || last.ToolCall.CallID != r2.CallID || last.TurnID != t2 {
		t.Errorf("the history ends with %+v, want the edit waiting for its review in turn %s", last, t2)
	}

	// What the attached editor is told next carries the same turn ID.
	a.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r2.ReviewID, Decision: rpc.Decision{Type: "reject"}}, nil)
	if end := b.turnEnd(); end.Reason != "done" {
		t.Fatalf("turn end in the attached editor = %+v", end)
	}
	for id := range liveTurnIDs(b) {
		if id != t2 {
			t.Errorf("the attached editor got an update of turn %q, want %q", id, t2)
		}
	}

	// Loaded again from its journal by another daemon: the same turns.
	env.srv.Shutdown() // closes the journal (Shutdown is safe to call again at cleanup)
	env2 := newEnvWith(t, nil, func(o *harness.Options) { o.StateDir = env.srv.rt.Options().StateDir })
	c := env2.editor(true)
	c.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	users = users[:0]
	for _, h := range att.History {
		if h.Type == rpc.HistoryUser {
			users = append(users, h.TurnID+": "+h.Text)
		}
	}
	if len(users) != len(wantUsers) {
		t.Fatalf("user messages of the resumed history = %q, want %q", users, wantUsers)
	}
	for i, w := range wantUsers {
		if !strings.HasPrefix(users[i], w) {
			t.Errorf("user message %d of the resumed history = %q, want %q…", i, users[i], w)
		}
	}
}

// An editor attaching while a command runs gets what the command printed so far in the history
// (the call's progress), and the output that follows as updates: together, every line once.
func TestAttachDuringACommandShowsItsOutputSoFar(t *testing.T) {
	env := newEnvWith(t, nil, func(o *harness.Options) {
		o.SandboxFeatures = &sandbox.Features{Arch: "x86_64"} // unsandboxed: every command asks
	})
	// The command prints three lines, waits for the test to create "go", then prints one more.
	cmd := `for i in 1 2 3; do echo "early line $i"; done; while [ ! -e go ]; do sleep 0.02; done; echo "late line"`
	args, _ := json.Marshal(map[string]string{"command": cmd})
	env.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("bash", string(args))), ollamatest.Text("done"))
	a := env.editor(true)
	s := a.newSession()
	a.prompt(s, "run it")
	r := a.review()
	a.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: "accept"}}, nil)
	a.waitFor("the command's third line as progress", func(n note) bool {
		return n.method == rpc.MethodSessionUpdate && strings.Contains(string(n.params), "early line 3")
	})

	b := env.editor(true)
	var att rpc.SessionAttachResult
	b.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	call := historyCall(t, att, "bash")
	if call.Status != rpc.StatusRunning {
		t.Fatalf("the command is in the history as %+v, want running", call)
	}
	for i := 1; i <= 3; i++ {
		if line := "early line " + string(rune('0'+i)); strings.Count(call.Progress, line) != 1 {
			t.Errorf("the history's output of the running command = %q, want %q once", call.Progress, line)
		}
	}

	if err := os.WriteFile(filepath.Join(env.ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if end := b.turnEnd(); end.Reason != "done" {
		t.Fatalf("turn end = %+v", end)
	}
	// The attached editor's view: the history's output plus the progress it was sent.
	out := call.Progress
	b.mu.Lock()
	for _, n := range b.notes {
		var u rpc.SessionUpdateParams
		if n.method == rpc.MethodSessionUpdate && json.Unmarshal(n.params, &u) == nil && u.Update.Type == rpc.UpdateToolCallUpdated &&
			u.Update.ToolCall != nil && u.Update.ToolCall.CallID == call.CallID {
			out += u.Update.ToolCall.Progress
		}
	}
	b.mu.Unlock()
	for _, line := range []string{"early line 1", "early line 2", "early line 3", "late line"} {
		if strings.Count(out, line) != 1 {
			t.Errorf("the attached editor's output of the command = %q, want %q once", out, line)
		}
	}
}

// A prompt sent with editor context (the active file, a selection, a mention): the model reads the
// context, but the live userMessage, the history of an editor attaching and the history of a
// daemon that loads the session from its journal all show the user's words with the context's
// labels, never the appended context ("The user is looking at cart.go…").
func TestHistoryShowsTheUsersWordsWithTheContextLabels(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo, "greet.go": "package shop\n"})
	env.ollama.Enqueue(ollamatest.Text("Seen."))
	a := env.editor(true)
	s := a.newSession()
	words := "why is @greet.go unused?"
	sel := protocol.Range{Start: protocol.Position{Line: 2}, End: protocol.Position{Line: 5}}
	items := []rpc.ContextItem{
		fileItem(env, "greet.go"),
		{URI: fileURI(filepath.Join(env.ws, "cart.go")), Range: &sel, Text: "func Total(c *Cart) int {\n"},
		{URI: fileURI(filepath.Join(env.ws, "cart.go"))},
	}
	var res rpc.SessionPromptResult
	a.mustCall(rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: s, Text: words, Context: items}, &res)
	if end := a.turnEnd(); end.Reason != "done" {
		t.Fatalf("turn end = %+v", end)
	}
	msgs := env.ollama.Chats()[0].Request.Messages
	if got := msgs[len(msgs)-1].Content; !strings.Contains(got, words+"\n\nThe user mentions the file greet.go") || !strings.Contains(got, "The user is looking at cart.go.") {
		t.Fatalf("the model read %q, want the words and the context", got)
	}
	want := rpc.HistoryItem{Type: rpc.HistoryUser, TurnID: res.TurnID, Text: words, Context: []string{"@greet.go", "cart.go:3-5", "cart.go"}}

	var live rpc.SessionUpdateParams
	json.Unmarshal(a.waitFor("the userMessage update", func(n note) bool {
		return n.method == rpc.MethodSessionUpdate && strings.Contains(string(n.params), `"userMessage"`)
	}), &live)
	if got := (rpc.HistoryItem{Type: rpc.HistoryUser, TurnID: live.TurnID, Text: live.Update.Text, Context: live.Update.Context}); !reflect.DeepEqual(got, want) {
		t.Errorf("live userMessage = %+v, want %+v", got, want)
	}
	userItem := func(who string, att rpc.SessionAttachResult) {
		t.Helper()
		if len(att.History) == 0 || !reflect.DeepEqual(att.History[0], want) {
			t.Errorf("%s: history = %+v, want it to start with %+v", who, att.History, want)
		}
	}
	var att rpc.SessionAttachResult
	env.editor(true).mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	userItem("a second editor attaching", att)

	env.srv.Shutdown()
	env2 := newEnvWith(t, nil, func(o *harness.Options) { o.StateDir = env.srv.rt.Options().StateDir })
	env2.editor(true).mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	userItem("another daemon loading the journal", att)
}
