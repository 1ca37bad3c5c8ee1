package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/rpc"
	"go.lsp.dev/jsonrpc2"
)

// A partial accept with a reason for the rejected hunk: the model reads which hunks were applied,
// which were not, and the user's reason for the rejected one, next to that hunk's ID.
func TestReasonForOneRejectedHunkReachesTheModel(t *testing.T) {
	env, ed, r := twoHunkReview(t)
	kept, dropped := r.File.Hunks[0].ID, r.File.Hunks[1].ID
	var res rpc.ReviewDecideResult
	ed.mustCall(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID, "decision": map[string]any{
		"type": "accept", "hunks": []string{kept}, "hunkReasons": map[string]string{dropped: "Label is part of the public API"}}}, &res)
	if res.Outcome != "accepted" {
		t.Fatalf("outcome = %+v", res)
	}
	if end := ed.turnEnd(); end.Reason != "done" {
		t.Fatalf("turn end = %+v", end)
	}
	got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go"))
	if want := strings.Replace(cartGo, "\ttotal -= c.Discount\n\ttotal -= c.Discount\n", "\ttotal -= c.Discount\n", 1); string(got) != want {
		t.Errorf("disk =\n%s\nwant only the first hunk", got)
	}
	tr := env.lastToolResult()
	if !strings.Contains(tr, "applied 1 of 2 hunks") || !strings.Contains(tr, "rejected: "+dropped) {
		t.Errorf("the model was not told which hunks were applied:\n%s", tr)
	}
	if !strings.Contains(tr, "Why the user rejected hunk "+dropped+": Label is part of the public API") {
		t.Errorf("the model was not told the rejected hunk's reason:\n%s", tr)
	}
	if strings.Contains(tr, "Why the user rejected hunk "+kept) {
		t.Errorf("the applied hunk got a reason:\n%s", tr)
	}
}

// A reject with a reason per hunk and one for the whole change: the model reads each hunk with
// its own reason, and nothing is written.
func TestRejectWithAReasonPerHunk(t *testing.T) {
	env, ed, r := twoHunkReview(t)
	h1, h2 := r.File.Hunks[0].ID, r.File.Hunks[1].ID
	var res rpc.ReviewDecideResult
	ed.mustCall(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID, "decision": map[string]any{
		"type": "reject", "reason": "smaller steps please",
		"hunkReasons": map[string]string{h1: "the second discount is intended", h2: "keep the label"}}}, &res)
	if res.Outcome != "rejected" {
		t.Fatalf("outcome = %+v", res)
	}
	ed.turnEnd()
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != cartGo {
		t.Error("a rejected edit changed the file")
	}
	tr := env.lastToolResult()
	for _, want := range []string{"rejected_by_user", "smaller steps please", "applied 0 of 2 hunks",
		"Why the user rejected hunk " + h1 + ": the second discount is intended",
		"Why the user rejected hunk " + h2 + ": keep the label"} {
		if !strings.Contains(tr, want) {
			t.Errorf("the model's result lacks %q:\n%s", want, tr)
		}
	}
}

// A reason for a hunk the review does not have, or for an accepted hunk, is invalid params and
// decides nothing: the review is still pending and a valid decision then settles it.
func TestBadHunkReasonsDecideNothing(t *testing.T) {
	_, ed, r := twoHunkReview(t)
	h1, h2 := r.File.Hunks[0].ID, r.File.Hunks[1].ID
	cases := []struct {
		name     string
		decision map[string]any
		want     string
	}{
		{"unknown hunk", map[string]any{"type": "reject", "hunkReasons": map[string]string{"hdeadbeef": "x"}}, `no hunk "hdeadbeef"`},
		{"unknown hunk in a partial accept", map[string]any{"type": "accept", "hunks": []string{h1}, "hunkReasons": map[string]string{"hdeadbeef": "x"}}, `no hunk "hdeadbeef"`},
		{"accepted hunk", map[string]any{"type": "accept", "hunks": []string{h1}, "hunkReasons": map[string]string{h1: "x"}}, "is accepted"},
		{"accept of every hunk", map[string]any{"type": "accept", "hunkReasons": map[string]string{h2: "x"}}, "accepts every hunk"},
		{"blank reason", map[string]any{"type": "reject", "hunkReasons": map[string]string{h2: "  "}}, "blank"},
		{"grant", map[string]any{"type": "acceptForSession", "scope": map[string]any{"kind": "tool", "tool": "edit"}, "hunkReasons": map[string]string{h2: "x"}}, "only a scope"},
	}
	for _, c := range cases {
		err := ed.call(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID, "decision": c.decision}, nil)
		var rerr *jsonrpc2.Error
		if !errors.As(err, &rerr) || rerr.Code != rpc.CodeInvalidParams || !strings.Contains(rerr.Message, c.want) {
			t.Errorf("%s: error %v, want invalid params (%d) saying %q", c.name, err, rpc.CodeInvalidParams, c.want)
		}
	}
	var list rpc.ReviewListResult
	ed.mustCall(rpc.MethodReviewList, rpc.ReviewListParams{SessionID: r.SessionID}, &list)
	if len(list.Reviews) != 1 || list.Reviews[0].ReviewID != r.ReviewID {
		t.Fatalf("after invalid decisions the pending reviews are %+v, want %s still pending", list.Reviews, r.ReviewID)
	}
	var res rpc.ReviewDecideResult
	ed.mustCall(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID, "decision": map[string]any{
		"type": "accept", "hunks": []string{h1}, "hunkReasons": map[string]string{h2: "keep the label"}}}, &res)
	if res.Outcome != "accepted" {
		t.Fatalf("the valid decision after the invalid ones: %+v", res)
	}
	ed.turnEnd()
}
