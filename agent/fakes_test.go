package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/tools"
)

// fakeArgs is the argument struct every fake tool shares.
type fakeArgs struct {
	N     int    `json:"n,omitempty"`
	Path  string `json:"path,omitempty"`
	Sleep int    `json:"sleepMs,omitempty"`
}

var fakeSpec = tools.NewSpec[fakeArgs]()

// fakeTool is a tool whose every capability is a field. Capabilities it does not set are still
// implemented, so a second type, plainTool, checks the documented defaults.
type fakeTool struct {
	name       string
	readOnly   bool
	safe       *bool
	interrupt  tools.Interrupt
	sequential bool
	validate   func(*tools.Call) error
	preview    func(*tools.Call) (*tools.Preview, error)
	exec       func(context.Context, *tools.Call) (tools.Output, error)
	calls      atomic.Int32
}

func (f *fakeTool) Name() string        { return f.name }
func (f *fakeTool) Description() string { return "fake " + f.name }
func (f *fakeTool) Spec() *tools.Spec   { return fakeSpec }
func (f *fakeTool) Execute(ctx context.Context, c *tools.Call) (tools.Output, error) {
	f.calls.Add(1)
	if f.exec != nil {
		return f.exec(ctx, c)
	}
	return tools.Output{Text: "ok " + f.name}, nil
}
func (f *fakeTool) ReadOnly(any) bool { return f.readOnly }
func (f *fakeTool) ConcurrencySafe(any) bool {
	if f.safe != nil {
		return *f.safe
	}
	return f.readOnly
}
func (f *fakeTool) InterruptBehavior(any) tools.Interrupt { return f.interrupt }
func (f *fakeTool) ExecutionMode() tools.Mode {
	if f.sequential {
		return tools.Sequential
	}
	return tools.Parallel
}
func (f *fakeTool) Validate(ctx context.Context, c *tools.Call) error {
	if f.validate != nil {
		return f.validate(c)
	}
	return nil
}
func (f *fakeTool) Preview(ctx context.Context, c *tools.Call) (*tools.Preview, error) {
	if f.preview != nil {
		return f.preview(c)
	}
	return nil, nil
}

// recorder is a Sink that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) sink(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// checkPairs asserts that every call ID has exactly one ToolStart followed by exactly one ToolEnd
// and no event of a call outside its pair, and returns the IDs in Start order.
func checkPairs(t *testing.T, events []Event) []string {
	t.Helper()
	state := map[string]int{} // 0 none, 1 started, 2 ended
	var order []string
	for _, e := range events {
		switch e := e.(type) {
		case ToolStart:
			if state[e.CallID] != 0 {
				t.Errorf("second ToolStart for %s", e.CallID)
			}
			state[e.CallID] = 1
			order = append(order, e.CallID)
		case ToolUpdate:
			if state[e.CallID] != 1 {
				t.Errorf("ToolUpdate for %s outside its Start/End pair", e.CallID)
			}
		case ToolEnd:
			if state[e.CallID] != 1 {
				t.Errorf("ToolEnd for %s without an open Start (state %d)", e.CallID, state[e.CallID])
			}
			if e.Result.CallID != e.CallID {
				t.Errorf("ToolEnd %s carries a result for %s", e.CallID, e.Result.CallID)
			}
			state[e.CallID] = 2
		}
	}
	for id, s := range state {
		if s != 2 {
			t.Errorf("call %s has no ToolEnd", id)
		}
	}
	return order
}

func newKernel(t *testing.T, cfg Config, ts ...tools.Tool) (*Kernel, *recorder) {
	t.Helper()
	reg, err := tools.NewRegistry(ts...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Registry = reg
	rec := &recorder{}
	return NewKernel(cfg, rec.sink), rec
}

func call(id, name, args string) ToolCall {
	return ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func boolp(b bool) *bool { return &b }

// concurrency tracks how many executions overlap.
type concurrency struct {
	mu       sync.Mutex
	cur, max int
	log      []string
}

func (c *concurrency) enter(name string) {
	c.mu.Lock()
	c.cur++
	if c.cur > c.max {
		c.max = c.cur
	}
	c.log = append(c.log, fmt.Sprintf("+%s@%d", name, c.cur))
	c.mu.Unlock()
}

func (c *concurrency) leave(name string) {
	c.mu.Lock()
	c.cur--
	c.log = append(c.log, "-"+name)
	c.mu.Unlock()
}

// tracked returns an exec function that records overlap and waits until release is closed or
// the call's sleep elapses.
func (c *concurrency) tracked(release <-chan struct{}) func(context.Context, *tools.Call) (tools.Output, error) {
	return func(ctx context.Context, call *tools.Call) (tools.Output, error) {
		c.enter(call.ID)
		defer c.leave(call.ID)
		a := tools.ArgsOf[fakeArgs](call)
		var timer <-chan time.Time
		if a.Sleep > 0 {
			timer = time.After(time.Duration(a.Sleep) * time.Millisecond)
		}
		select {
		case <-release:
		case <-timer:
		case <-ctx.Done():
			return tools.Output{}, ctx.Err()
		}
		return tools.Output{Text: "done " + call.ID}, nil
	}
}
