package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

const greetGo = "package shop\n\nfunc Greet() string { return \"hi\" }\n"

// One reply edits cart.go, edits greet.go, creates cart_test.go and then edits it: the three
// files are up for review at once, decided 3, 2, 1; the edit of the new file is previewed against
// what its creation left, once that was decided; the model reads the results in its call order.
func TestEveryFileOfAReplyIsReviewedTogether(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo, "greet.go": greetGo})
	env.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"cart.go"}`), ollamatest.Call("read", `{"path":"greet.go"}`)),
		ollamatest.Calls(
			ollamatest.Call("edit", `{"path":"cart.go","old_string":"\ttotal -= c.Discount\n\ttotal -= c.Discount\n","new_string":"\ttotal -= c.Discount\n"}`),
			ollamatest.Call("edit", `{"path":"greet.go","old_string":"\"hi\"","new_string":"\"hello\""}`),
			ollamatest.Call("write", `{"path":"cart_test.go","content":"package shop\n\n// TODO\n"}`),
			ollamatest.Call("edit", `{"path":"cart_test.go","old_string":"// TODO","new_string":"// tests"}`),
		),
		ollamatest.Text("Done."),
	)
	ed := env.editor(true)
	sid := ed.newSession()
	ed.prompt(sid, "fix the discount, greet politely, add a test file")
	seen := map[string]bool{}
	byPath := map[string]rpc.ReviewRequestedParams{}
	for range 3 {
		r := ed.nextReview(seen)
		byPath[r.File.Path] = r
	}
	var list rpc.ReviewListResult
	ed.mustCall(rpc.MethodReviewList, map[string]any{"sessionId": sid}, &list)
	var pending []string
	for _, r := range list.Reviews {
		pending = append(pending, r.File.Path)
	}
	slices.Sort(pending)
	if want := []string{"cart.go", "cart_test.go", "greet.go"}; !slices.Equal(pending, want) {
		t.Fatalf("pending reviews %v, want %v at once", pending, want)
	}
	// The reply's calls start in its order (an editor adds a card per call as it starts), and the
	// edit of the new file says it waits for its creation.
	var started []string // "path callID" of the reply's changes
	waits := map[string]string{}
	ed.mu.Lock()
	for _, n := range ed.notes {
		var u rpc.SessionUpdateParams
		if n.method != rpc.MethodSessionUpdate || json.Unmarshal(n.params, &u) != nil || u.Update.ToolCall == nil {
			continue
		}
		tc := u.Update.ToolCall
		var args struct{ Path string }
		json.Unmarshal(tc.Arguments, &args)
		switch {
		case u.Update.Type == rpc.UpdateToolCallStarted && tc.Tool != "read":
			started = append(started, args.Path+" "+tc.CallID)
		case tc.WaitsFor != "":
			waits[tc.CallID] = tc.WaitsFor
		}
	}
	ed.mu.Unlock()
	var paths []string
	for _, s := range started {
		paths = append(paths, strings.Fields(s)[0])
	}
	if want := []string{"cart.go", "greet.go", "cart_test.go", "cart_test.go"}; !slices.Equal(paths, want) {
		t.Fatalf("the reply's calls started in the order %v, want %v", paths, want)
	}
	id := func(i int) string { return strings.Fields(started[i])[1] }
	if len(waits) != 1 || waits[id(3)] != id(2) {
		t.Errorf("waitsFor %v, want the edit of cart_test.go (%s) waiting for its creation (%s)", waits, id(3), id(2))
	}
	decide := func(path, typ string) {
		t.Helper()
		var res rpc.ReviewDecideResult
		d := map[string]any{"type": typ}
		if typ == "reject" {
			d["reason"] = "not now"
		}
		ed.mustCall(rpc.MethodReviewDecide, map[string]any{"reviewId": byPath[path].ReviewID, "decision": d}, &res)
	}
	decide("cart_test.go", "accept")
	decide("greet.go", "reject")
	decide("cart.go", "accept")
	// The edit of the new file comes once its creation is decided, against the file it left.
	r := ed.nextReview(seen)
	if r.File == nil || r.File.Path != "cart_test.go" || r.File.Created {
		t.Fatalf("fourth review = %+v, want the edit of the created cart_test.go", r)
	}
	byPath["cart_test.go"] = r
	decide("cart_test.go", "accept")
	if end := ed.turnEnd(); end.Reason != "done" {
		t.Fatalf("turn end = %+v", end)
	}
	read := func(p string) string {
		b, _ := os.ReadFile(filepath.Join(env.ws, p))
		return string(b)
	}
	if got := read("cart.go"); strings.Count(got, "total -= c.Discount") != 1 {
		t.Errorf("cart.go =\n%s", got)
	}
	if got := read("greet.go"); got != greetGo {
		t.Errorf("the rejected greet.go changed:\n%s", got)
	}
	if got := read("cart_test.go"); got != "package shop\n\n// tests\n" {
		t.Errorf("cart_test.go = %q", got)
	}
	res := env.toolResults()
	if len(res) != 6 { // the two reads, then the reply's four calls
		t.Fatalf("tool results %q", res)
	}
	res = res[2:]
	for i, want := range []string{"cart.go", "not now", "cart_test.go", "cart_test.go"} {
		if !strings.Contains(res[i], want) {
			t.Errorf("result %d (model's order) lacks %q: %s", i+1, want, res[i])
		}
	}
	if !strings.Contains(res[1], "rejected") {
		t.Errorf("greet.go's result does not say it was rejected: %s", res[1])
	}
}

// When the creation is rejected, the edit of the file it would have made is not put up: it is
// stale, and the model is told which earlier call it depended on.
func TestAChangeOnTopOfARejectedOneIsStale(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.ollama.Enqueue(
		ollamatest.Calls(
			ollamatest.Call("write", `{"path":"cart_test.go","content":"package shop\n\n// TODO\n"}`),
			ollamatest.Call("edit", `{"path":"cart_test.go","old_string":"// TODO","new_string":"// tests"}`),
		),
		ollamatest.Text("Done."),
	)
	ed := env.editor(true)
	ed.prompt(ed.newSession(), "add a test file")
	r := ed.review()
	var res rpc.ReviewDecideResult
	ed.mustCall(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID, "decision": map[string]any{"type": "reject"}}, &res)
	if end := ed.turnEnd(); end.Reason != "done" {
		t.Fatalf("turn end = %+v", end)
	}
	if _, err := os.Stat(filepath.Join(env.ws, "cart_test.go")); err == nil {
		t.Error("cart_test.go exists")
	}
	results := env.toolResults()
	if len(results) != 2 {
		t.Fatalf("results %q", results)
	}
	for _, want := range []string{"stale", "(write)", "which was not applied", "rejected_by_user", "Read the file"} {
		if !strings.Contains(results[1], want) {
			t.Errorf("the dependent edit's result lacks %q: %s", want, results[1])
		}
	}
}
