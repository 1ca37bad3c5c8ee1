package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/tools"
)

// TestFollowUpsAreGatedTogetherAfterTheCall: the changes a call proposes after it ran
// (tools.FollowUp) go to the gate as follow-ups of that call — the second is put up once the
// first is (Posted), so both wait for the user at once —, only the accepted one is applied,
// inside the middleware (the call's checkpoint), and the result tells the model each outcome in
// order. A cancelled turn applies none; with no gate none is applied (fail closed).
func TestFollowUpsAreGatedTogetherAfterTheCall(t *testing.T) {
	var mu sync.Mutex
	var applied []string
	var inMiddleware bool
	fu := func(name string) tools.FollowUp {
		return tools.FollowUp{Subject: "Review of " + name, Label: "from the command: " + name,
			Preview:    &tools.Preview{Summary: name},
			Permission: tools.Permission{Access: tools.AccessWrite, Paths: []string{"/ws/" + name}, Protected: true, Reason: "a hook"},
			Apply: func(ctx context.Context, a *tools.Approval) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				if ctx.Value(mwKey{}) == nil {
					t.Errorf("%s applied outside the middleware", name)
				}
				applied = append(applied, name)
				return "written", nil
			}}
	}
	cmd := &fakeTool{name: "bash", exec: func(context.Context, *tools.Call) (tools.Output, error) {
		return tools.Output{Text: "ran\n", FollowUps: []tools.FollowUp{fu("a"), fu("b")}}, nil
	}}
	mw := func(next ExecFunc) ExecFunc {
		return func(ctx context.Context, tl tools.Tool, c *tools.Call) (tools.Output, error) {
			inMiddleware = true
			return next(context.WithValue(ctx, mwKey{}, true), tl, c)
		}
	}
	bothUp := make(chan struct{})
	var up sync.WaitGroup
	up.Add(2)
	go func() { up.Wait(); close(bothUp) }()
	var asked []GateRequest
	gate := func(ctx context.Context, req GateRequest) (GateDecision, error) {
		if !req.FollowUp {
			return GateDecision{Allow: true}, nil
		}
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		req.Posted()
		up.Done()
		<-bothUp // decided only once both are up
		if req.Label == "from the command: b" {
			return GateDecision{Type: tools.RejectedByUser, Reason: "no"}, nil
		}
		return GateDecision{Allow: true}, nil
	}
	k, rec := newKernel(t, Config{Gate: gate, Middleware: []Middleware{mw}}, cmd)
	res := k.RunBatch(context.Background(), []ToolCall{call("c1", "bash", `{}`)}, nil).Results[0]
	if res.Type != tools.OK || !inMiddleware {
		t.Fatalf("result %s: %s", res.Type, res.Text())
	}
	want := "ran\n[Review of a: written]\n[Review of b: NOT applied: the user rejected it (no)."
	if !strings.HasPrefix(res.Text(), want) {
		t.Errorf("result:\n%s\nwant it to start with:\n%s", res.Text(), want)
	}
	if len(applied) != 1 || applied[0] != "a" {
		t.Errorf("applied %q, want only a", applied)
	}
	// The front ends hear what became of each (agentd run lists the ones no one could review).
	var ends []string
	for _, e := range rec.all() {
		if f, ok := e.(FollowUpEnd); ok {
			ends = append(ends, fmt.Sprintf("%s %s %v %s", f.CallID, f.Subject, f.Applied, f.Type))
		}
	}
	slices.Sort(ends)
	if want := []string{"c1 Review of a true ", "c1 Review of b false rejected_by_user"}; !slices.Equal(ends, want) {
		t.Errorf("follow-up ends %q, want %q", ends, want)
	}
	for _, q := range asked {
		perm := q.Tool.(tools.PermissionMetadata).Permission(q.Call)
		if q.Call.ID != "c1" || q.Tool.Name() != "bash" || !perm.Protected || q.Preview == nil {
			t.Errorf("follow-up question %+v, permission %+v", q, perm)
		}
	}

	// No gate: nothing applied.
	applied = nil
	k, rec = newKernel(t, Config{}, cmd)
	res = k.RunBatch(context.Background(), []ToolCall{call("c2", "bash", `{}`)}, nil).Results[0]
	if len(applied) != 0 || strings.Count(res.Text(), "NOT applied: nobody can review changes here") != 2 {
		t.Errorf("with no gate: applied %q\n%s", applied, res.Text())
	}
	for _, e := range rec.all() {
		if f, ok := e.(FollowUpEnd); ok && (f.Applied || f.Type != tools.ApprovalUnavailable) {
			t.Errorf("with no gate: follow-up end %+v, want not applied, approval unavailable", f)
		}
	}

	// Cancelled while the user decides: nothing applied.
	ctx, cancel := context.WithCancel(context.Background())
	k, _ = newKernel(t, Config{Gate: func(ctx context.Context, req GateRequest) (GateDecision, error) {
		if !req.FollowUp {
			return GateDecision{Allow: true}, nil
		}
		cancel()
		<-ctx.Done()
		return GateDecision{}, ctx.Err()
	}}, cmd)
	res = k.RunBatch(ctx, []ToolCall{call("c3", "bash", `{}`)}, nil).Results[0]
	if len(applied) != 0 {
		t.Errorf("a cancelled turn applied %q\n%s", applied, res.Text())
	}
}

type mwKey struct{}
