package agent

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentd/agentd/tools"
)

// A gate refusal with EndTurn: the call gets the gate's result type and reason, the rest of the
// batch is answered, the turn ends "blocked" without another model call, and the history holds
// the truthful result for when the conversation continues.
func TestGateEndTurnStopsTheTurnAfterTheBatch(t *testing.T) {
	edit := &fakeTool{name: "edit"}
	read := &fakeTool{name: "read", readOnly: true}
	gate := func(ctx context.Context, req GateRequest) (GateDecision, error) {
		if req.Call.Name == "edit" {
			return GateDecision{Type: tools.ApprovalUnavailable, EndTurn: true, Reason: "nobody to ask"}, nil
		}
		return GateDecision{Allow: true}, nil
	}
	h := newHarness(t, func(c *SessionConfig) { c.Kernel.Gate = gate }, edit, read)
	h.model.add(callTools(call("c1", "edit", `{}`), call("c2", "read", `{}`)), say("Done, the file is changed."))
	end := h.turn("change it")
	if end.Reason != "blocked" || end.Err != nil {
		t.Errorf("turn end = %+v, want blocked", end)
	}
	if n := len(h.model.reqs()); n != 1 {
		t.Errorf("%d model calls, want 1: the model was asked to go on after a call no one could approve", n)
	}
	if edit.calls.Load() != 0 || read.calls.Load() != 1 {
		t.Errorf("edit ran %d times (want 0), read %d (want 1)", edit.calls.Load(), read.calls.Load())
	}
	checkPairs(t, h.rec.all())
	var got string
	for _, m := range h.s.History() {
		if m.Role == RoleTool && m.ToolCallID == "c1" {
			got = m.Content
		}
	}
	for _, want := range []string{"Error (approval_unavailable): ", "Not run: this call needs an approval that no one can give here",
		"The turn ends here.", "Reason: nobody to ask"} {
		if !strings.Contains(got, want) {
			t.Errorf("the model's result lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "rejected") {
		t.Errorf("the model is told the user rejected the call:\n%s", got)
	}
	for _, e := range h.rec.all() {
		if te, ok := e.(ToolEnd); ok && te.CallID == "c1" && (!te.Result.Halt || te.Result.Type != tools.ApprovalUnavailable) {
			t.Errorf("ToolEnd result = %+v, want approval_unavailable with Halt", te.Result)
		}
	}
}

// A plain refusal does not end the turn: the model reads it and goes on.
func TestGateRefusalWithoutEndTurnContinues(t *testing.T) {
	gate := func(ctx context.Context, req GateRequest) (GateDecision, error) {
		return GateDecision{Reason: "not now"}, nil
	}
	h := newHarness(t, func(c *SessionConfig) { c.Kernel.Gate = gate }, &fakeTool{name: "edit"})
	h.model.add(callTools(call("c1", "edit", `{}`)), say("Understood."))
	if end := h.turn("change it"); end.Reason != "done" {
		t.Errorf("turn end = %+v, want done", end)
	}
	if n := len(h.model.reqs()); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
}

// --think on a model without the thinking capability is said, not silently dropped.
func TestThinkOnAModelThatCannotThinkWarns(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	t.Cleanup(func() { slog.SetDefault(prev) })

	h := newHarness(t, func(c *SessionConfig) { c.Think = true; c.Info.Name = "plain:7b" })
	h.model.add(say("hi"))
	h.turn("hello")
	if req := h.model.reqs()[0]; req.Think {
		t.Error("think was sent to a model that cannot think")
	}
	if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "thinking is off") || !strings.Contains(out, "plain:7b") {
		t.Errorf("no warning that thinking is off; log:\n%s", out)
	}

	buf.Reset()
	h2 := newHarness(t, func(c *SessionConfig) { c.Think = true; c.Info.Thinking = true })
	h2.model.add(say("hi"))
	h2.turn("hello")
	if req := h2.model.reqs()[0]; !req.Think {
		t.Error("think was not sent to a model that can think")
	}
	if strings.Contains(buf.String(), "thinking is off") {
		t.Errorf("warned although the model can think:\n%s", buf.String())
	}
}
