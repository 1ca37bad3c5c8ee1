package daemon

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

// historyCall finds the one tool call of a tool in an attach's history.
func historyCall(t *testing.T, att rpc.SessionAttachResult, tool string) *rpc.ToolCallInfo {
	t.Helper()
	var found *rpc.ToolCallInfo
	for _, h := range att.History {
		if h.Type == rpc.HistoryTool && h.ToolCall != nil && h.ToolCall.Tool == tool {
			if found != nil {
				t.Fatalf("two %s calls in the history: %+v", tool, att.History)
			}
			found = h.ToolCall
		}
	}
	if found == nil {
		t.Fatalf("no %s call in the history: %+v", tool, att.History)
	}
	return found
}

// An editor attaching while a call waits for its review sees that call waiting (not done), with
// the label the other editors have; a call of the same batch that ended meanwhile shows its result
// (the history gets a batch's results only at its end); a call not started yet is pending; and
// the calls show as done once they are.
func TestAttachMidTurnShowsTheCallsAsTheyAre(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"cart.go"}`)),
		ollamatest.Calls(ollamatest.Call("ls", `{"path":"."}`),
			ollamatest.Call("edit", `{"path":"cart.go","old_string":"return \"cart\"","new_string":"return \"basket\""}`),
			ollamatest.Call("glob", `{"pattern":"*.go"}`)),
		ollamatest.Text("Done."),
	)
	a := env.editor(true)
	s := a.newSession()
	a.prompt(s, "rename the label")
	r := a.review()
	a.waitFor("the ls call completed", func(n note) bool {
		return n.method == rpc.MethodSessionUpdate && strings.Contains(string(n.params), `"toolCallCompleted"`) &&
			strings.Contains(string(n.params), `"tool":"ls"`)
	})

	b := env.editor(true)
	var att rpc.SessionAttachResult
	b.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	if !att.Session.Running {
		t.Fatalf("session not running while its edit waits for a review: %+v", att.Session)
	}
	if len(att.PendingReviews) != 1 || att.PendingReviews[0].ReviewID != r.ReviewID {
		t.Fatalf("pending reviews = %+v, want %s", att.PendingReviews, r.ReviewID)
	}
	edit := historyCall(t, att, "edit")
	if edit.CallID != r.CallID || edit.Status != rpc.StatusAwaitingApproval || edit.Result != nil {
		t.Errorf("the edit waiting for its review is in the history as %+v, want status %s and no result", edit, rpc.StatusAwaitingApproval)
	}
	if edit.Label != r.Label || !strings.Contains(edit.Label, "cart.go") {
		t.Errorf("the edit's label in the history = %q, want the review's %q", edit.Label, r.Label)
	}
	if edit.Preview == nil || !strings.Contains(edit.Preview.UnifiedDiff, "basket") {
		t.Errorf("the edit's preview in the history = %+v, want its diff", edit.Preview)
	}
	if ls := historyCall(t, att, "ls"); ls.Status != rpc.StatusCompleted || ls.Result == nil || !strings.Contains(ls.Result.Text, "cart.go") {
		t.Errorf("the ls call that ended in the same batch is in the history as %+v, want completed with its result", ls)
	}
	// glob comes after the edit, which may write: it is prepared only once the edit has run.
	if glob := historyCall(t, att, "glob"); glob.Status != rpc.StatusPending || glob.Result != nil {
		t.Errorf("the glob call not started yet is in the history as %+v, want pending", glob)
	}
	if read := historyCall(t, att, "read"); read.Status != rpc.StatusCompleted || read.Result == nil {
		t.Errorf("the read of the turn's first batch is in the history as %+v, want completed with its result", read)
	}

	// Accepted in A: B is told the edit completed.
	a.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: "accept"}}, nil)
	var done rpc.SessionUpdateParams
	json.Unmarshal(b.waitFor("the edit's toolCallCompleted in the attached editor", func(n note) bool {
		return n.method == rpc.MethodSessionUpdate && strings.Contains(string(n.params), `"toolCallCompleted"`) &&
			strings.Contains(string(n.params), r.CallID)
	}), &done)
	if done.Update.ToolCall.Status != rpc.StatusCompleted || done.Update.ToolCall.Result == nil {
		t.Errorf("the edit's end in the attached editor = %+v", done.Update.ToolCall)
	}
	if end := b.turnEnd(); end.Reason != "done" {
		t.Fatalf("turn end = %+v", end)
	}

	// Attached after the turn: every call is done.
	c := env.editor(true)
	c.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	for _, tool := range []string{"read", "ls", "edit", "glob"} {
		if tc := historyCall(t, att, tool); tc.Status != rpc.StatusCompleted || tc.Result == nil {
			t.Errorf("after the turn, the %s call is in the history as %+v, want completed with its result", tool, tc)
		}
	}
	if len(att.PendingReviews) != 0 {
		t.Errorf("pending reviews after the turn = %+v", att.PendingReviews)
	}
}
