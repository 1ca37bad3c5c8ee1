package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/tools"
)

// runOne runs one call through a batch of one.
func runOne(ctx context.Context, k *Kernel, c ToolCall) tools.Result {
	return k.RunBatch(ctx, []ToolCall{c}, nil).Results[0]
}

// failTimes makes n counted failures of the tool (invalid arguments).
func failTimes(t *testing.T, k *Kernel, name string, n int) {
	t.Helper()
	for range n {
		if r := runOne(context.Background(), k, call("", name, `{"n":"x"}`)); r.Type != tools.InvalidArgs {
			t.Fatalf("setup failure has type %s", r.Type)
		}
	}
}

func TestAccountingTable(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	deny := func(context.Context, GateRequest) (GateDecision, error) {
		return GateDecision{Reason: "not this file"}, nil
	}
	gateErr := func(context.Context, GateRequest) (GateDecision, error) {
		return GateDecision{}, errors.New("no editor attached")
	}
	rows := []struct {
		name      string
		prior     int // counted failures before the call
		ctx       context.Context
		gate      Gate
		tool      func() *fakeTool
		callName  string
		args      string
		wantType  tools.ResultType
		wantText  string
		wantCount int
		executed  bool
	}{
		{name: "cancelled", prior: 1, ctx: cancelled, wantType: tools.Cancelled, wantText: "cancelled", wantCount: 1},
		{name: "breaker", prior: 3, wantType: tools.ExecFailed, wantText: "disabled after 3 consecutive errors", wantCount: 3},
		{name: "not found", callName: "nope", wantType: tools.NotFound, wantText: `tool "nope" not found`, wantCount: 1},
		{name: "schema", prior: 1, args: `{"n":"1.5","bogus":true}`, wantType: tools.InvalidArgs, wantText: "/bogus: unknown property", wantCount: 2},
		{name: "validator", prior: 1, tool: func() *fakeTool {
			return &fakeTool{name: "t", validate: func(*tools.Call) error {
				return tools.Errorf(tools.ReadFirst, "read the file first")
			}}
		}, wantType: tools.ReadFirst, wantText: "read the file first", wantCount: 2},
		{name: "gate deny", prior: 2, gate: deny, wantType: tools.RejectedByUser, wantText: "Reason: not this file", wantCount: 2},
		{name: "gate error", prior: 2, gate: gateErr, wantType: tools.RejectedByUser, wantText: "no editor attached", wantCount: 2},
		{name: "execute error", prior: 1, tool: func() *fakeTool {
			return &fakeTool{name: "t", exec: func(context.Context, *tools.Call) (tools.Output, error) {
				return tools.Output{}, errors.New("exit status 2")
			}}
		}, wantType: tools.ExecFailed, wantText: "exit status 2", wantCount: 2, executed: true},
		{name: "success reset", prior: 2, wantType: tools.OK, wantText: "ok t", wantCount: 0, executed: true},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			ft := &fakeTool{name: "t"}
			if row.tool != nil {
				ft = row.tool()
			}
			k, rec := newKernel(t, Config{Gate: row.gate}, ft)
			name := row.callName
			if name == "" {
				name = "t"
			}
			failTimes(t, k, name, row.prior)
			ctx := row.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			args := row.args
			if args == "" {
				args = `{"n":1}`
			}
			res := runOne(ctx, k, call("c1", name, args))
			if res.Type != row.wantType || res.IsError != (row.wantType != tools.OK) {
				t.Errorf("result type = %s (IsError %v), want %s", res.Type, res.IsError, row.wantType)
			}
			if !strings.Contains(res.Text(), row.wantText) {
				t.Errorf("result text = %q, want it to contain %q", res.Text(), row.wantText)
			}
			if got := k.ToolFailures(name); got != row.wantCount {
				t.Errorf("breaker count = %d, want %d", got, row.wantCount)
			}
			if got := ft.calls.Load() > 0; got != row.executed {
				t.Errorf("executed = %v, want %v", got, row.executed)
			}
			if res.CallID != "c1" || res.Tool != name {
				t.Errorf("result identifies %s/%s, want c1/%s", res.CallID, res.Tool, name)
			}
			checkPairs(t, rec.all())
		})
	}
}

func TestStartCarriesRawArgumentsAndValidatedArgsFlowDownstream(t *testing.T) {
	var gotArgs fakeArgs
	ft := &fakeTool{name: "t", exec: func(ctx context.Context, c *tools.Call) (tools.Output, error) {
		gotArgs = *tools.ArgsOf[fakeArgs](c)
		return tools.Output{Text: "x"}, nil
	}}
	k, rec := newKernel(t, Config{}, ft)
	raw := `{"n":"42"}`
	runOne(context.Background(), k, call("c", "t", raw))
	if gotArgs.N != 42 {
		t.Errorf("tool saw %+v, want the coerced n=42", gotArgs)
	}
	start := rec.all()[0].(ToolStart)
	if string(start.Args) != raw {
		t.Errorf("ToolStart args = %s, want as sent %s", start.Args, raw)
	}
}

func TestPreviewIsEmittedBeforeTheGateAndPassedToIt(t *testing.T) {
	pv := &tools.Preview{Summary: "edit a.go", Binding: "b1"}
	ft := &fakeTool{name: "t", preview: func(*tools.Call) (*tools.Preview, error) { return pv, nil }}
	var rec *recorder
	var sawUpdateBeforeGate bool
	gate := func(ctx context.Context, req GateRequest) (GateDecision, error) {
		for _, e := range rec.all() {
			if u, ok := e.(ToolUpdate); ok && u.Preview == pv {
				sawUpdateBeforeGate = true
			}
		}
		if req.Preview != pv || req.Call.Preview != pv {
			t.Errorf("gate got preview %v", req.Preview)
		}
		return GateDecision{Allow: true, Approval: &tools.Approval{Hunks: []string{"h1"}}}, nil
	}
	var approval *tools.Approval
	ft.exec = func(ctx context.Context, c *tools.Call) (tools.Output, error) {
		approval = c.Approval
		return tools.Output{}, nil
	}
	var k *Kernel
	k, rec = newKernel(t, Config{Gate: gate}, ft)
	runOne(context.Background(), k, call("c", "t", `{}`))
	if !sawUpdateBeforeGate {
		t.Error("no ToolUpdate with the preview before the gate")
	}
	if approval == nil || len(approval.Hunks) != 1 || approval.Hunks[0] != "h1" {
		t.Errorf("Execute saw approval %+v", approval)
	}
}

func TestMiddlewareOrderAndAfterHook(t *testing.T) {
	var order []string
	mw := func(name string) Middleware {
		return func(next ExecFunc) ExecFunc {
			return func(ctx context.Context, tl tools.Tool, c *tools.Call) (tools.Output, error) {
				order = append(order, name+">")
				out, err := next(ctx, tl, c)
				order = append(order, "<"+name)
				return out, err
			}
		}
	}
	ft := &fakeTool{name: "t", exec: func(context.Context, *tools.Call) (tools.Output, error) {
		order = append(order, "exec")
		return tools.Output{Text: "orig", Details: "d0"}, nil
	}}
	yes := true
	after := func(ctx context.Context, c *tools.Call, r *tools.Result) (*ResultPatch, error) {
		if r.Text() != "orig" {
			t.Errorf("after-hook saw %q", r.Text())
		}
		return &ResultPatch{Content: []tools.Block{{Type: "text", Text: "patched"}}, Terminate: &yes}, nil
	}
	k, _ := newKernel(t, Config{Middleware: []Middleware{mw("outer"), mw("inner")}, After: after}, ft)
	res := runOne(context.Background(), k, call("c", "t", `{}`))
	if got := strings.Join(order, " "); got != "outer> inner> exec <inner <outer" {
		t.Errorf("order = %s", got)
	}
	if res.Text() != "patched" || res.Details != "d0" || !res.Terminate || res.IsError {
		t.Errorf("patched result = %+v", res)
	}

	failing := func(context.Context, *tools.Call, *tools.Result) (*ResultPatch, error) {
		return nil, errors.New("hook broke")
	}
	k2, _ := newKernel(t, Config{After: failing}, &fakeTool{name: "t"})
	res = runOne(context.Background(), k2, call("c", "t", `{}`))
	if res.Type != tools.ExecFailed || !strings.Contains(res.Text(), "hook broke") {
		t.Errorf("failing hook result = %+v", res)
	}
}

func TestPanickingToolBecomesAnErrorResult(t *testing.T) {
	ft := &fakeTool{name: "t", exec: func(context.Context, *tools.Call) (tools.Output, error) {
		var p *fakeArgs
		return tools.Output{Text: p.Path}, nil // nil dereference
	}}
	k, rec := newKernel(t, Config{}, ft)
	res := runOne(context.Background(), k, call("c", "t", `{}`))
	if res.Type != tools.ExecFailed || !strings.Contains(res.Text(), "crashed") {
		t.Errorf("result = %+v", res)
	}
	checkPairs(t, rec.all())
}

func TestProgressAfterExecuteReturnedIsDropped(t *testing.T) {
	var late func()
	var wg sync.WaitGroup
	wg.Add(1)
	ft := &fakeTool{name: "t", exec: func(ctx context.Context, c *tools.Call) (tools.Output, error) {
		tools.ReportProgress(ctx, tools.Progress{Text: "early"})
		late = func() { tools.ReportProgress(ctx, tools.Progress{Text: "late"}) }
		return tools.Output{}, nil
	}}
	k, rec := newKernel(t, Config{}, ft)
	runOne(context.Background(), k, call("c", "t", `{}`))
	late()
	var progress []string
	for _, e := range rec.all() {
		if u, ok := e.(ToolUpdate); ok && u.Progress != nil {
			progress = append(progress, u.Progress.Text)
		}
	}
	if strings.Join(progress, ",") != "early" {
		t.Errorf("progress events = %v, want only the one sent during Execute", progress)
	}
	checkPairs(t, rec.all())
	wg.Done()
}

func TestToolErrorTypesPassThrough(t *testing.T) {
	for _, typ := range []tools.ResultType{tools.Timeout, tools.Oversized, tools.IOError, tools.PermissionDenied} {
		ft := &fakeTool{name: "t", exec: func(context.Context, *tools.Call) (tools.Output, error) {
			return tools.Output{}, tools.Errorf(typ, "because")
		}}
		k, _ := newKernel(t, Config{}, ft)
		if res := runOne(context.Background(), k, call("c", "t", `{}`)); res.Type != typ || res.Text() != "because" {
			t.Errorf("result = %s %q, want %s", res.Type, res.Text(), typ)
		}
	}
}

func TestElapsedIsMeasured(t *testing.T) {
	ft := &fakeTool{name: "t", exec: func(context.Context, *tools.Call) (tools.Output, error) {
		time.Sleep(2 * time.Millisecond)
		return tools.Output{}, nil
	}}
	k, _ := newKernel(t, Config{}, ft)
	if res := runOne(context.Background(), k, call("c", "t", `{}`)); res.Elapsed < 2*time.Millisecond {
		t.Errorf("elapsed = %v", res.Elapsed)
	}
}
