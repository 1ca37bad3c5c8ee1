package daemon

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/agentd/agentd/rpc"
	"go.lsp.dev/jsonrpc2"
)

// hunkStates waits for the n-th review/hunkStates notification (1-based) an editor received.
func (ed *fakeEditor) hunkStates(what string, n int) rpc.ReviewHunkStatesParams {
	ed.t.Helper()
	seen := 0
	var p rpc.ReviewHunkStatesParams
	raw := ed.waitFor(what, func(x note) bool {
		if x.method != rpc.MethodReviewHunkStates {
			return false
		}
		seen++
		return seen == n
	})
	if err := rpc.DecodeStrict(raw, &p); err != nil {
		ed.t.Fatalf("%s: %v\n%s", what, err, raw)
	}
	return p
}

func (ed *fakeEditor) count(method string) int {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	n := 0
	for _, x := range ed.notes {
		if x.method == method {
			n++
		}
	}
	return n
}

// Per-hunk decisions made in one editor reach the session's other editors (not the sender), an
// undo reaches them too, an editor attaching mid-review gets them with the review, and the final
// decision's per-hunk reasons come with review/resolved.
func TestHunkStatesAreRelayedToTheOtherEditors(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.editTwoHunks()
	a := env.editor(true)
	b := env.editor(true)
	s := a.newSession()
	b.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, nil)
	a.prompt(s, "fix it")
	r := a.review()
	b.review()
	h1, h2 := r.File.Hunks[0].ID, r.File.Hunks[1].ID

	var res rpc.ReviewHunkStateResult
	a.mustCall(rpc.MethodReviewHunkState, rpc.ReviewHunkStateParams{ReviewID: r.ReviewID, Hunks: map[string]rpc.HunkState{
		h2: {State: rpc.HunkRejected, Reason: "keep the label"}}}, &res)
	want := map[string]rpc.HunkState{h2: {State: rpc.HunkRejected, Reason: "keep the label"}}
	if !maps.Equal(res.Hunks, want) {
		t.Errorf("result hunks = %+v, want %+v", res.Hunks, want)
	}
	got := b.hunkStates("A's rejected hunk in B", 1)
	if got.ReviewID != r.ReviewID || got.SessionID != s || !maps.Equal(got.Hunks, want) {
		t.Errorf("B got %+v, want review %s session %s hunks %+v", got, r.ReviewID, s, want)
	}

	// B accepts the other hunk: A gets both states. A's own change never came back to A: it
	// would have been queued to A before B's relay.
	b.mustCall(rpc.MethodReviewHunkState, rpc.ReviewHunkStateParams{ReviewID: r.ReviewID, Hunks: map[string]rpc.HunkState{
		h1: {State: rpc.HunkAccepted}}}, nil)
	want = map[string]rpc.HunkState{h1: {State: rpc.HunkAccepted}, h2: {State: rpc.HunkRejected, Reason: "keep the label"}}
	if got := a.hunkStates("B's accepted hunk in A", 1); !maps.Equal(got.Hunks, want) {
		t.Errorf("A got %+v, want %+v", got.Hunks, want)
	}
	if n := a.count(rpc.MethodReviewHunkStates); n != 1 {
		t.Errorf("A received %d review/hunkStates, want only B's (its own change is not echoed):\n%s", n, a.dump())
	}

	// An editor attaching now gets the review with its states, and the later changes.
	c := env.editor(true)
	var att rpc.SessionAttachResult
	c.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	if len(att.PendingReviews) != 1 || !maps.Equal(att.PendingReviews[0].HunkStates, want) {
		t.Fatalf("pending reviews at attach = %+v, want %s with hunk states %+v", att.PendingReviews, r.ReviewID, want)
	}
	var list rpc.ReviewListResult
	c.mustCall(rpc.MethodReviewList, rpc.ReviewListParams{SessionID: s}, &list)
	if len(list.Reviews) != 1 || !maps.Equal(list.Reviews[0].HunkStates, want) {
		t.Errorf("review/list = %+v, want hunk states %+v", list.Reviews, want)
	}

	// A undoes its rejection: B and C see the hunk pending again (not listed).
	a.mustCall(rpc.MethodReviewHunkState, rpc.ReviewHunkStateParams{ReviewID: r.ReviewID, Hunks: map[string]rpc.HunkState{
		h2: {State: rpc.HunkPending}}}, nil)
	want = map[string]rpc.HunkState{h1: {State: rpc.HunkAccepted}}
	if got := b.hunkStates("A's undo in B", 2); !maps.Equal(got.Hunks, want) {
		t.Errorf("after the undo B got %+v, want %+v", got.Hunks, want)
	}
	if got := c.hunkStates("A's undo in C", 1); !maps.Equal(got.Hunks, want) {
		t.Errorf("after the undo C got %+v, want %+v", got.Hunks, want)
	}

	// The file is settled with a reason for the rejected hunk: every editor gets the reason.
	a.mustCall(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID, "decision": map[string]any{
		"type": "accept", "hunks": []string{h1}, "hunkReasons": map[string]string{h2: "Label is public API"}}}, nil)
	for name, ed := range map[string]*fakeEditor{"A": a, "B": b, "C": c} {
		var rr rpc.ReviewResolvedParams
		json.Unmarshal(ed.waitFor("review/resolved in "+name, func(n note) bool { return n.method == rpc.MethodReviewResolved }), &rr)
		if rr.Outcome != rpc.OutcomeAccepted || len(rr.Hunks) != 1 || rr.Hunks[0] != h1 ||
			!maps.Equal(rr.HunkReasons, map[string]string{h2: "Label is public API"}) {
			t.Errorf("review/resolved in %s = %+v, want accepted %s with the reason for %s", name, rr, h1, h2)
		}
	}
	// Settled: no more per-hunk changes.
	err := b.call(rpc.MethodReviewHunkState, rpc.ReviewHunkStateParams{ReviewID: r.ReviewID, Hunks: map[string]rpc.HunkState{
		h2: {State: rpc.HunkAccepted}}}, nil)
	var rerr *jsonrpc2.Error
	if !errors.As(err, &rerr) || rerr.Code != rpc.CodeReviewResolved {
		t.Errorf("a hunk state after the review was settled: %v, want code %d", err, rpc.CodeReviewResolved)
	}
	a.turnEnd()
}

// A reject's per-hunk reasons come with review/resolved too.
func TestResolvedRejectCarriesHunkReasons(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.editTwoHunks()
	a := env.editor(true)
	s := a.newSession()
	a.prompt(s, "fix it")
	r := a.review()
	h1 := r.File.Hunks[0].ID
	a.mustCall(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID, "decision": map[string]any{
		"type": "reject", "hunkReasons": map[string]string{h1: "the second discount is intended"}}}, nil)
	var rr rpc.ReviewResolvedParams
	json.Unmarshal(a.waitFor("review/resolved", func(n note) bool { return n.method == rpc.MethodReviewResolved }), &rr)
	if rr.Outcome != rpc.OutcomeRejected || !maps.Equal(rr.HunkReasons, map[string]string{h1: "the second discount is intended"}) {
		t.Errorf("review/resolved = %+v, want rejected with the reason for %s", rr, h1)
	}
	a.turnEnd()
}

// Invalid per-hunk changes are invalid params and change nothing; nothing is relayed.
func TestBadHunkStatesChangeNothing(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.editTwoHunks()
	a := env.editor(true)
	b := env.editor(true)
	s := a.newSession()
	b.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, nil)
	a.prompt(s, "fix it")
	r := a.review()
	h1, h2 := r.File.Hunks[0].ID, r.File.Hunks[1].ID
	outsider := env.editor(true)
	cases := []struct {
		name   string
		ed     *fakeEditor
		params any
		want   string
	}{
		{"unknown review", a, map[string]any{"reviewId": "r-999", "hunks": map[string]any{h1: map[string]any{"state": "accepted"}}}, "unknown review"},
		{"no review", a, map[string]any{"hunks": map[string]any{h1: map[string]any{"state": "accepted"}}}, "reviewId"},
		{"unknown hunk", a, map[string]any{"reviewId": r.ReviewID, "hunks": map[string]any{
			h1: map[string]any{"state": "accepted"}, "hdeadbeef": map[string]any{"state": "accepted"}}}, `no hunk "hdeadbeef"`},
		{"unknown state", a, map[string]any{"reviewId": r.ReviewID, "hunks": map[string]any{h1: map[string]any{"state": "maybe"}}}, "unknown state"},
		{"no state", a, map[string]any{"reviewId": r.ReviewID, "hunks": map[string]any{h1: map[string]any{}}}, "unknown state"},
		{"reason with accepted", a, map[string]any{"reviewId": r.ReviewID, "hunks": map[string]any{
			h2: map[string]any{"state": "rejected", "reason": "ok"}, h1: map[string]any{"state": "accepted", "reason": "x"}}}, "a reason goes with a rejected hunk"},
		{"blank reason", a, map[string]any{"reviewId": r.ReviewID, "hunks": map[string]any{h1: map[string]any{"state": "rejected", "reason": "  "}}}, "blank"},
		{"empty", a, map[string]any{"reviewId": r.ReviewID, "hunks": map[string]any{}}, "empty"},
		{"unknown field", a, map[string]any{"reviewId": r.ReviewID, "hunks": map[string]any{h1: map[string]any{"state": "accepted", "why": "x"}}}, "why"},
		{"not attached", outsider, map[string]any{"reviewId": r.ReviewID, "hunks": map[string]any{h1: map[string]any{"state": "accepted"}}}, "not attached"},
	}
	for _, c := range cases {
		err := c.ed.call(rpc.MethodReviewHunkState, c.params, nil)
		var rerr *jsonrpc2.Error
		if !errors.As(err, &rerr) || rerr.Code != rpc.CodeInvalidParams || !strings.Contains(rerr.Message, c.want) {
			t.Errorf("%s: error %v, want invalid params (%d) saying %q", c.name, err, rpc.CodeInvalidParams, c.want)
		}
	}
	var list rpc.ReviewListResult
	a.mustCall(rpc.MethodReviewList, rpc.ReviewListParams{SessionID: s}, &list)
	if len(list.Reviews) != 1 || list.Reviews[0].HunkStates != nil {
		t.Fatalf("after invalid changes the review is %+v, want no hunk states", list.Reviews)
	}
	// A valid change is the first thing B is told.
	a.mustCall(rpc.MethodReviewHunkState, rpc.ReviewHunkStateParams{ReviewID: r.ReviewID, Hunks: map[string]rpc.HunkState{
		h1: {State: rpc.HunkRejected}}}, nil)
	if got := b.hunkStates("the valid change in B", 1); !maps.Equal(got.Hunks, map[string]rpc.HunkState{h1: {State: rpc.HunkRejected}}) {
		t.Errorf("B's first relay = %+v, want only the valid change", got.Hunks)
	}
	a.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: "reject"}}, nil)
	a.turnEnd()
}
