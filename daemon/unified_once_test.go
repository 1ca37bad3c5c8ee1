package daemon

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/rpc"
)

// A reviewed edit's unified diff is rendered once: the call's preview update and the review carry
// the same string (the same bytes in memory, not two renderings that happen to be equal).
func TestReviewedEditRendersItsDiffOnce(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.editTwoHunks()
	ed := env.editor(true)
	s := ed.newSession()
	ed.prompt(s, "fix it")
	r := ed.review()
	ed.waitFor("the edit's preview update", func(n note) bool {
		return n.method == rpc.MethodSessionUpdate && strings.Contains(string(n.params), `"unifiedDiff"`) &&
			strings.Contains(string(n.params), r.CallID)
	})
	env.srv.mu.Lock()
	ls, rv := env.srv.sessions[s], env.srv.reviews[r.ReviewID]
	env.srv.mu.Unlock()
	if ls == nil || rv == nil || rv.params.File == nil {
		t.Fatalf("session %v, review %v: missing, or the review has no file", ls, rv)
	}
	var shown string
	for _, item := range ls.history(harness.Snapshot{Turns: ls.h.Transcript()}) {
		if info := item.ToolCall; info != nil && info.CallID == r.CallID && info.Preview != nil {
			shown = info.Preview.UnifiedDiff
		}
	}
	reviewed := rv.params.File.UnifiedDiff
	if shown == "" || shown != reviewed {
		t.Fatalf("preview diff %q, review diff %q: want the same non-empty text", shown, reviewed)
	}
	if unsafe.StringData(shown) != unsafe.StringData(reviewed) {
		t.Fatal("the unified diff was rendered twice (once for the preview update, once for the review)")
	}
	var res rpc.ReviewDecideResult
	ed.mustCall(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID, "decision": map[string]any{"type": "reject"}}, &res)
	ed.turnEnd()
}
