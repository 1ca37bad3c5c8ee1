package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/rpc"
)

// The user edited the proposal before accepting it (review/decide accept with content): the
// user's version is what is written, and the model reads that the user changed it, and how.
func TestAcceptWithTheUsersVersionOfTheFile(t *testing.T) {
	env, ed, r := twoHunkReview(t)
	users := strings.Replace(cartGo, "\ttotal -= c.Discount\n\ttotal -= c.Discount\n", "\ttotal -= c.Discount // once, as the user wants\n", 1)
	// Content goes without hunks, and only with an accept.
	for _, bad := range []map[string]any{
		{"type": "accept", "content": users, "hunks": []string{r.File.Hunks[0].ID}},
		{"type": "reject", "content": users},
	} {
		if err := ed.call(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID, "decision": bad}, nil); err == nil {
			t.Errorf("decision %v was taken", bad)
		}
	}
	var res rpc.ReviewDecideResult
	ed.mustCall(rpc.MethodReviewDecide, map[string]any{"reviewId": r.ReviewID, "decision": map[string]any{"type": "accept", "content": users}}, &res)
	if res.Outcome != "accepted" {
		t.Fatalf("outcome = %+v", res)
	}
	if end := ed.turnEnd(); end.Reason != "done" {
		t.Fatalf("turn end = %+v", end)
	}
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != users {
		t.Errorf("disk =\n%s\nwant the user's version", got)
	}
	tr := env.lastToolResult()
	for _, want := range []string{"with the user's version: the user edited your proposed change", "+\ttotal -= c.Discount // once, as the user wants"} {
		if !strings.Contains(tr, want) {
			t.Errorf("the model's result lacks %q:\n%s", want, tr)
		}
	}
}
