package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/tools"
)

func TestEveryEarlyExitPairsStartAndEnd(t *testing.T) {
	deny := func(ctx context.Context, r GateRequest) (GateDecision, error) {
		if tools.ArgsOf[fakeArgs](r.Call).N == 3 {
			return GateDecision{Reason: "no"}, nil
		}
		if tools.ArgsOf[fakeArgs](r.Call).N == 4 {
			return GateDecision{}, errors.New("gate down")
		}
		return GateDecision{Allow: true}, nil
	}
	ft := &fakeTool{name: "t", validate: func(c *tools.Call) error {
		if tools.ArgsOf[fakeArgs](c).N == 2 {
			return errors.New("bad")
		}
		return nil
	}, exec: func(ctx context.Context, c *tools.Call) (tools.Output, error) {
		if tools.ArgsOf[fakeArgs](c).N == 5 {
			return tools.Output{}, errors.New("boom")
		}
		return tools.Output{}, nil
	}}
	k, rec := newKernel(t, Config{Gate: deny, MaxToolErrors: 100}, ft)
	calls := []ToolCall{
		call("a", "missing", `{}`), call("b", "t", `{"n":"x"}`), call("c", "t", `{"n":2}`),
		call("d", "t", `{"n":3}`), call("e", "t", `{"n":4}`), call("f", "t", `{"n":5}`), call("g", "t", `{"n":6}`),
	}
	br := k.RunBatch(context.Background(), calls, nil)
	order := checkPairs(t, rec.all())
	if strings.Join(order, "") != "abcdefg" {
		t.Errorf("start order = %v", order)
	}
	want := []tools.ResultType{tools.NotFound, tools.InvalidArgs, tools.InvalidArgs, tools.RejectedByUser,
		tools.RejectedByUser, tools.ExecFailed, tools.OK}
	for i, r := range br.Results {
		if r.Type != want[i] || r.CallID != calls[i].ID {
			t.Errorf("result %d = %s/%s, want %s/%s", i, r.CallID, r.Type, calls[i].ID, want[i])
		}
	}
	// Cancelled and breaker paths pair too.
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	k2, rec2 := newKernel(t, Config{MaxToolErrors: 1}, &fakeTool{name: "t"})
	k2.RunBatch(cctx, []ToolCall{call("x", "t", `{}`), call("y", "t", `{}`)}, nil)
	failTimes(t, k2, "t", 1)
	k2.RunBatch(context.Background(), []ToolCall{call("z", "t", `{}`)}, nil)
	checkPairs(t, rec2.all())
}

func TestResultsComeInModelOrderWhateverTheCompletionOrder(t *testing.T) {
	var c concurrency
	var mu sync.Mutex
	var finished []string
	ft := &fakeTool{name: "r", readOnly: true}
	ft.exec = func(ctx context.Context, call *tools.Call) (tools.Output, error) {
		out, err := c.tracked(nil)(ctx, call)
		mu.Lock()
		finished = append(finished, call.ID)
		mu.Unlock()
		return out, err
	}
	k, _ := newKernel(t, Config{MaxToolConcurrency: 3}, ft)
	br := k.RunBatch(context.Background(), []ToolCall{
		call("slow", "r", `{"sleepMs":60}`), call("mid", "r", `{"sleepMs":30}`), call("fast", "r", `{"sleepMs":1}`),
	}, nil)
	if strings.Join(finished, ",") == "slow,mid,fast" {
		t.Skip("completion order happened to equal model order; nothing to check")
	}
	for i, id := range []string{"slow", "mid", "fast"} {
		if br.Results[i].CallID != id || br.Results[i].Text() != "done "+id {
			t.Errorf("result %d = %s %q, want %s", i, br.Results[i].CallID, br.Results[i].Text(), id)
		}
	}
}

func TestReadOnlyCallsOverlapAndAWriteRunsAlone(t *testing.T) {
	var c concurrency
	release := make(chan struct{})
	r := &fakeTool{name: "read", readOnly: true, exec: c.tracked(release)}
	w := &fakeTool{name: "write", exec: c.tracked(nil)}
	k, _ := newKernel(t, Config{MaxToolConcurrency: 4}, r, w)

	done := make(chan BatchResult)
	go func() {
		done <- k.RunBatch(context.Background(), []ToolCall{
			call("r1", "read", `{}`), call("r2", "read", `{}`), call("r3", "read", `{}`),
			call("w1", "write", `{"sleepMs":5}`), call("r4", "read", `{}`),
		}, nil)
	}()
	// The three reads block on release: they can only all be inside at once if they overlap.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		cur := c.cur
		c.mu.Unlock()
		if cur == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("three read-only calls never ran together (log %v)", c.log)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	<-done
	// The write started only when nothing ran, and nothing started while it ran.
	log := strings.Join(c.log, " ")
	if !strings.Contains(log, "+w1@1 -w1") {
		t.Errorf("write did not run alone: %s", log)
	}
	if i, j := strings.Index(log, "-w1"), strings.Index(log, "+r4"); j < i {
		t.Errorf("a read started while the write ran: %s", log)
	}
}

func TestSequentialToolMakesTheBatchSerial(t *testing.T) {
	var c concurrency
	r := &fakeTool{name: "read", readOnly: true, exec: c.tracked(nil)}
	s := &fakeTool{name: "seq", readOnly: true, sequential: true, exec: c.tracked(nil)}
	k, _ := newKernel(t, Config{MaxToolConcurrency: 8}, r, s)
	k.RunBatch(context.Background(), []ToolCall{
		call("a", "read", `{"sleepMs":5}`), call("b", "read", `{"sleepMs":5}`), call("c", "seq", `{"sleepMs":5}`),
		call("d", "read", `{"sleepMs":5}`),
	}, nil)
	if c.max != 1 {
		t.Errorf("max concurrency = %d with a sequential tool in the batch, want 1 (log %v)", c.max, c.log)
	}
	// Without the sequential tool, reads overlap (control).
	var c2 concurrency
	release := make(chan struct{})
	r2 := &fakeTool{name: "read", readOnly: true, exec: c2.tracked(release)}
	k2, _ := newKernel(t, Config{MaxToolConcurrency: 8}, r2)
	go func() {
		for {
			c2.mu.Lock()
			n := c2.cur
			c2.mu.Unlock()
			if n == 2 {
				close(release)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	k2.RunBatch(context.Background(), []ToolCall{call("a", "read", `{}`), call("b", "read", `{}`)}, nil)
	if c2.max != 2 {
		t.Errorf("control: max concurrency = %d, want 2", c2.max)
	}
}

func TestMaxToolConcurrencyOneIsSerial(t *testing.T) {
	var c concurrency
	r := &fakeTool{name: "read", readOnly: true, exec: c.tracked(nil)}
	k, _ := newKernel(t, Config{MaxToolConcurrency: 1}, r)
	k.RunBatch(context.Background(), []ToolCall{call("a", "read", `{"sleepMs":3}`), call("b", "read", `{"sleepMs":3}`), call("c", "read", `{"sleepMs":3}`)}, nil)
	if c.max != 1 {
		t.Errorf("max concurrency = %d, want 1", c.max)
	}
}

func TestAWriteFinishesBeforeTheNextCallIsPrepared(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	os.WriteFile(f, []byte("v1"), 0o644)
	w := &fakeTool{name: "write", exec: func(context.Context, *tools.Call) (tools.Output, error) {
		time.Sleep(5 * time.Millisecond)
		return tools.Output{}, os.WriteFile(f, []byte("v2"), 0o644)
	}}
	var previewed string
	e := &fakeTool{name: "edit", preview: func(*tools.Call) (*tools.Preview, error) {
		b, _ := os.ReadFile(f)
		previewed = string(b)
		return &tools.Preview{Summary: string(b)}, nil
	}}
	k, _ := newKernel(t, Config{}, w, e)
	k.RunBatch(context.Background(), []ToolCall{call("1", "write", `{}`), call("2", "edit", `{}`)}, nil)
	if previewed != "v2" {
		t.Errorf("the second call was previewed against %q, want the state the write left (v2)", previewed)
	}
}

func TestGatesSeeCallsInModelOrder(t *testing.T) {
	var seen []string
	gate := func(ctx context.Context, r GateRequest) (GateDecision, error) {
		seen = append(seen, r.Call.ID)
		return GateDecision{Allow: true}, nil
	}
	r := &fakeTool{name: "read", readOnly: true, exec: (&concurrency{}).tracked(nil)}
	k, _ := newKernel(t, Config{Gate: gate}, r)
	var calls []ToolCall
	for i := range 10 {
		calls = append(calls, call(strconv.Itoa(i), "read", fmt.Sprintf(`{"sleepMs":%d}`, 10-i)))
	}
	k.RunBatch(context.Background(), calls, nil)
	if got := strings.Join(seen, ""); got != "0123456789" {
		t.Errorf("gate order = %s", got)
	}
}

func TestSteeringCancelsBlocksAndSkips(t *testing.T) {
	started := make(chan string, 4)
	slow := func(ctx context.Context, c *tools.Call) (tools.Output, error) {
		started <- c.ID
		select {
		case <-ctx.Done():
			return tools.Output{}, ctx.Err()
		case <-time.After(150 * time.Millisecond):
			return tools.Output{Text: "finished " + c.ID}, nil
		}
	}
	cancelTool := &fakeTool{name: "cancelme", readOnly: true, interrupt: tools.InterruptCancel, exec: slow}
	blockTool := &fakeTool{name: "blockme", readOnly: true, interrupt: tools.InterruptBlock, exec: slow}
	later := &fakeTool{name: "later"}
	k, rec := newKernel(t, Config{MaxToolConcurrency: 4}, cancelTool, blockTool, later)
	steer := make(chan struct{}, 1)
	go func() {
		<-started
		<-started
		steer <- struct{}{}
	}()
	br := k.RunBatch(context.Background(), []ToolCall{
		call("c", "cancelme", `{}`), call("b", "blockme", `{}`), call("w", "later", `{}`), call("x", "later", `{}`),
	}, steer)
	if !br.Steered {
		t.Error("batch not marked steered")
	}
	got := map[string]tools.Result{}
	for _, r := range br.Results {
		got[r.CallID] = r
	}
	if r := got["c"]; r.Type != tools.Cancelled || r.Text() != msgSkippedSteer {
		t.Errorf("cancel-behaviour call: %s %q", r.Type, r.Text())
	}
	if r := got["b"]; r.Type != tools.OK || r.Text() != "finished b" {
		t.Errorf("block-behaviour call: %s %q, want it to finish", r.Type, r.Text())
	}
	for _, id := range []string{"w", "x"} {
		if r := got[id]; r.Type != tools.Cancelled || r.Text() != msgSkippedSteer {
			t.Errorf("not-started call %s: %s %q, want skipped", id, r.Type, r.Text())
		}
	}
	if later.calls.Load() != 0 {
		t.Error("a call started after the steer")
	}
	if k.ToolFailures("cancelme") != 0 || k.ToolFailures("later") != 0 {
		t.Error("steering counted as tool failures")
	}
	checkPairs(t, rec.all())
}

func TestCancelledRunMarksTheRestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ft := &fakeTool{name: "t", exec: func(c context.Context, _ *tools.Call) (tools.Output, error) {
		cancel()
		<-c.Done()
		return tools.Output{}, c.Err()
	}}
	k, rec := newKernel(t, Config{}, ft)
	br := k.RunBatch(ctx, []ToolCall{call("a", "t", `{}`), call("b", "t", `{}`), call("c", "t", `{}`)}, nil)
	for _, r := range br.Results {
		if r.Type != tools.Cancelled || r.Text() != msgCancelled {
			t.Errorf("%s: %s %q", r.CallID, r.Type, r.Text())
		}
	}
	if ft.calls.Load() != 1 {
		t.Errorf("executed %d calls after cancellation", ft.calls.Load())
	}
	checkPairs(t, rec.all())
}

func TestSteerWhileTheGateWaits(t *testing.T) {
	steer := make(chan struct{})
	gate := func(ctx context.Context, r GateRequest) (GateDecision, error) {
		close(steer)
		<-ctx.Done()
		return GateDecision{}, ctx.Err()
	}
	ft := &fakeTool{name: "t"}
	k, rec := newKernel(t, Config{Gate: gate}, ft)
	br := k.RunBatch(context.Background(), []ToolCall{call("a", "t", `{}`), call("b", "t", `{}`)}, steer)
	for _, r := range br.Results {
		if r.Type != tools.Cancelled || r.Text() != msgSkippedSteer {
			t.Errorf("%s: %s %q", r.CallID, r.Type, r.Text())
		}
	}
	if ft.calls.Load() != 0 {
		t.Error("a call ran after the steer")
	}
	checkPairs(t, rec.all())
}

func TestTerminateOnlyWhenEveryCallAsks(t *testing.T) {
	term := &fakeTool{name: "finish", exec: func(context.Context, *tools.Call) (tools.Output, error) {
		return tools.Output{Text: "bye", Terminate: true}, nil
	}}
	plain := &fakeTool{name: "plain"}
	k, _ := newKernel(t, Config{}, term, plain)
	if br := k.RunBatch(context.Background(), []ToolCall{call("a", "finish", `{}`), call("b", "finish", `{}`)}, nil); !br.Terminate {
		t.Error("all calls asked to terminate, batch did not")
	}
	if br := k.RunBatch(context.Background(), []ToolCall{call("a", "finish", `{}`), call("b", "plain", `{}`)}, nil); br.Terminate {
		t.Error("one call did not ask to terminate, batch did")
	}
	if br := k.RunBatch(context.Background(), []ToolCall{call("a", "finish", `{}`), call("b", "finish", `{"bogus":1}`)}, nil); br.Terminate {
		t.Error("a failed call cannot ask to terminate")
	}
	if br := k.RunBatch(context.Background(), nil, nil); br.Terminate {
		t.Error("an empty batch terminated")
	}
}

func TestLengthCutVoidsEveryCall(t *testing.T) {
	ft := &fakeTool{name: "t"}
	k, rec := newKernel(t, Config{}, ft)
	res := k.VoidCalls([]ToolCall{call("a", "t", `{"n":1}`), call("b", "t", `{"path":"x`)})
	if len(res) != 2 || ft.calls.Load() != 0 {
		t.Fatalf("results %d, executed %d", len(res), ft.calls.Load())
	}
	for _, r := range res {
		if r.Type != tools.InvalidArgs || !strings.Contains(r.Text(), "Resend the call with complete arguments") {
			t.Errorf("%s: %s %q", r.CallID, r.Type, r.Text())
		}
	}
	if k.ToolFailures("t") != 0 {
		t.Error("voided calls counted against the tool")
	}
	checkPairs(t, rec.all())
}

func TestMissingAndDuplicateCallIDsAreMadeUnique(t *testing.T) {
	k, rec := newKernel(t, Config{}, &fakeTool{name: "t"})
	br := k.RunBatch(context.Background(), []ToolCall{call("", "t", `{}`), call("x", "t", `{}`), call("x", "t", `{}`), call("", "t", `{}`)}, nil)
	seen := map[string]bool{}
	for _, r := range br.Results {
		if r.CallID == "" || seen[r.CallID] {
			t.Errorf("call ID %q empty or repeated", r.CallID)
		}
		seen[r.CallID] = true
	}
	checkPairs(t, rec.all())
}

// TestFiftyConcurrentEditsThroughTheMutationQueue runs 50 read-modify-write edits of one file from
// five sessions at once (each a kernel running a batch), half of them through a symlinked path.
func TestFiftyConcurrentEditsThroughTheMutationQueue(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "real", "f.txt")
	os.WriteFile(file, nil, 0o644)
	var q tools.MutationQueue
	edit := &fakeTool{name: "append", safe: boolp(true), exec: func(ctx context.Context, c *tools.Call) (tools.Output, error) {
		a := tools.ArgsOf[fakeArgs](c)
		unlock := q.Lock(filepath.Join(dir, a.Path))
		defer unlock()
		b, err := os.ReadFile(filepath.Join(dir, a.Path))
		if err != nil {
			return tools.Output{}, err
		}
		time.Sleep(time.Millisecond) // widen the lost-update window
		return tools.Output{}, os.WriteFile(filepath.Join(dir, a.Path), append(b, fmt.Sprintf("%d\n", a.N)...), 0o644)
	}}
	var wg sync.WaitGroup
	for s := range 5 {
		k, _ := newKernel(t, Config{MaxToolConcurrency: 10}, edit)
		var calls []ToolCall
		for i := range 10 {
			n := s*10 + i
			p := "real/f.txt"
			if n%2 == 1 {
				p = "link/f.txt"
			}
			calls = append(calls, call("", "append", fmt.Sprintf(`{"n":%d,"path":%q}`, n, p)))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range k.RunBatch(context.Background(), calls, nil).Results {
				if r.IsError {
					t.Error(r.Text())
				}
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(file)
	lines := map[string]bool{}
	for _, l := range strings.Fields(string(b)) {
		lines[l] = true
	}
	for n := range 50 {
		if !lines[strconv.Itoa(n)] {
			t.Errorf("edit %d lost", n)
		}
	}
}

// changeTool is a file change for ReviewTogether: it writes the path in its arguments.
type changeTool struct {
	fakeTool
}

func (c *changeTool) Permission(call *tools.Call) tools.Permission {
	return tools.Permission{Access: tools.AccessWrite, Paths: []string{"/w/" + call.Args.(*fakeArgs).Path}}
}

// decidingGate records each gate request on asked and waits for a decision on its call's channel.
type decidingGate struct {
	silent    bool // never calls GateRequest.Posted
	asked     chan string
	mu        sync.Mutex
	decisions map[string]chan GateDecision
}

func newDecidingGate(ids ...string) *decidingGate {
	g := &decidingGate{asked: make(chan string, 16), decisions: map[string]chan GateDecision{}}
	for _, id := range ids {
		g.decisions[id] = make(chan GateDecision, 1)
	}
	return g
}

func (g *decidingGate) gate(ctx context.Context, r GateRequest) (GateDecision, error) {
	g.asked <- r.Call.ID
	if r.Posted != nil && !g.silent {
		r.Posted()
	}
	g.mu.Lock()
	ch := g.decisions[r.Call.ID]
	g.mu.Unlock()
	select {
	case d := <-ch:
		return d, nil
	case <-ctx.Done():
		return GateDecision{}, ctx.Err()
	}
}

func (g *decidingGate) decide(id string, d GateDecision) { g.decisions[id] <- d }

// next waits for the next gate request; a kernel that never asks fails the test, it does not hang it.
func (g *decidingGate) next(t *testing.T) string {
	t.Helper()
	select {
	case id := <-g.asked:
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no gate request came")
		return ""
	}
}

func TestFileChangesOfOneReplyAreGatedTogether(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	record := func(_ context.Context, c *tools.Call) (tools.Output, error) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, c.ID)
		return tools.Output{Text: "done " + c.ID}, nil
	}
	w := &changeTool{fakeTool{name: "write", exec: record}}
	cmd := &fakeTool{name: "bash", exec: record}
	g := newDecidingGate("a", "b", "c", "cmd")
	k, _ := newKernel(t, Config{Gate: g.gate, ReviewTogether: true}, w, cmd)
	done := make(chan BatchResult)
	go func() {
		done <- k.RunBatch(context.Background(), []ToolCall{
			call("a", "write", `{"path":"cart.go"}`), call("b", "write", `{"path":"greet.go"}`),
			call("c", "write", `{"path":"cart_test.go"}`), call("cmd", "bash", `{}`)}, nil)
	}()
	// All three changes are put up before any is decided, in the model's order.
	if got := []string{g.next(t), g.next(t), g.next(t)}; !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("gated %v, want a, b, c together", got)
	}
	// Decided in the other order; the command waits for all three.
	g.decide("c", GateDecision{Allow: true})
	g.decide("b", GateDecision{Reason: "not this one"})
	g.decide("a", GateDecision{Allow: true})
	if id := g.next(t); id != "cmd" {
		t.Fatalf("then gated %q, want the command", id)
	}
	mu.Lock()
	before := slices.Clone(ran)
	mu.Unlock()
	slices.Sort(before)
	if !slices.Equal(before, []string{"a", "c"}) {
		t.Errorf("before the command was asked, ran %v, want a and c (b rejected)", before)
	}
	g.decide("cmd", GateDecision{Allow: true})
	res := <-done
	var order []string
	for _, r := range res.Results {
		order = append(order, r.CallID+":"+string(r.Type))
	}
	if want := []string{"a:ok", "b:rejected_by_user", "c:ok", "cmd:ok"}; !slices.Equal(order, want) {
		t.Errorf("results %v, want %v (the model's order)", order, want)
	}
}

func TestChangesAreGatedOneAtATimeUnlessTheGateSaysItPostedThem(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*decidingGate) Config
	}{
		{"ReviewTogether off", func(g *decidingGate) Config { return Config{Gate: g.gate} }},
		{"a gate that never calls Posted (a terminal)", func(g *decidingGate) Config {
			g.silent = true
			return Config{Gate: g.gate, ReviewTogether: true}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { gatedOneAtATime(t, tc.cfg) })
	}
}

func gatedOneAtATime(t *testing.T, cfg func(*decidingGate) Config) {
	w := &changeTool{fakeTool{name: "write"}}
	g := newDecidingGate("a", "b")
	k, _ := newKernel(t, cfg(g), w)
	done := make(chan BatchResult)
	go func() {
		done <- k.RunBatch(context.Background(), []ToolCall{call("a", "write", `{"path":"x"}`), call("b", "write", `{"path":"y"}`)}, nil)
	}()
	if id := g.next(t); id != "a" {
		t.Fatalf("gated %q first", id)
	}
	// b is asked only after a's decision: deciding a is what lets it through, so b's request
	// cannot be there yet (it would be, deterministically, if the gate order did not wait).
	select {
	case id := <-g.asked:
		t.Fatalf("%q was gated before the first change was decided", id)
	default:
	}
	g.decide("a", GateDecision{Allow: true})
	if id := g.next(t); id != "b" {
		t.Fatalf("gated %q", id)
	}
	g.decide("b", GateDecision{Allow: true})
	<-done
}

func TestASecondChangeOfAFileWaitsForTheFirst(t *testing.T) {
	// The first change creates the file; the second one validates only against it.
	var exists atomic.Bool
	w := &changeTool{fakeTool{name: "write", exec: func(_ context.Context, c *tools.Call) (tools.Output, error) {
		if c.Args.(*fakeArgs).Path == "new.go" {
			exists.Store(true)
		}
		return tools.Output{Text: "created"}, nil
	}}}
	e := &changeTool{fakeTool{name: "edit", validate: func(*tools.Call) error {
		if !exists.Load() {
			return tools.Errorf(tools.NotFound, "new.go does not exist")
		}
		return nil
	}}}
	for _, tc := range []struct {
		name  string
		first GateDecision
		want  []string
	}{
		{"accepted: previewed against what it left", GateDecision{Allow: true}, []string{"a:ok", "b:ok"}},
		{"rejected: stale, saying why", GateDecision{Reason: "no"}, []string{"a:rejected_by_user", "b:stale"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exists.Store(false)
			g := newDecidingGate("a", "b", "c")
			k, _ := newKernel(t, Config{Gate: g.gate, ReviewTogether: true}, w, e)
			done := make(chan BatchResult)
			go func() {
				done <- k.RunBatch(context.Background(), []ToolCall{call("a", "write", `{"path":"new.go"}`),
					call("b", "edit", `{"path":"new.go"}`), call("c", "write", `{"path":"other.go"}`)}, nil)
			}()
			// The other file's change is put up beside the first; the dependent one is not.
			if got := []string{g.next(t), g.next(t)}; !slices.Equal(got, []string{"a", "c"}) {
				t.Fatalf("gated %v, want a and c", got)
			}
			g.decide("c", GateDecision{Allow: true})
			g.decide("a", tc.first)
			if tc.first.Allow {
				if id := g.next(t); id != "b" {
					t.Fatalf("gated %q", id)
				}
				g.decide("b", GateDecision{Allow: true})
			}
			res := <-done
			var got []string
			for _, r := range res.Results[:2] {
				got = append(got, r.CallID+":"+string(r.Type))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("results %v, want %v", got, tc.want)
			}
			if !tc.first.Allow {
				text := res.Results[1].Text()
				for _, s := range []string{"earlier call a (write)", "rejected_by_user", "new.go does not exist", "Read the file"} {
					if !strings.Contains(text, s) {
						t.Errorf("the stale result does not say %q: %s", s, text)
					}
				}
				if n := k.ToolFailures("edit"); n != 0 {
					t.Errorf("the stale call counted against the tool: %d", n)
				}
			}
		})
	}
}

// The changes of a reply reviewed together start in the model's order (each editor adds a card
// per call as it starts), a change that waits for an earlier one of its file says which, and
// every gate request carries the run of changes, whose Up closes once the ones that wait for
// nothing are all up.
func TestChangesReviewedTogetherStartInOrderAndNameWhatTheyWaitFor(t *testing.T) {
	w := &changeTool{fakeTool{name: "write"}}
	reqs := make(chan GateRequest, 4)
	g := newDecidingGate("a", "b", "c")
	gate := func(ctx context.Context, r GateRequest) (GateDecision, error) {
		reqs <- r
		return g.gate(ctx, r)
	}
	k, rec := newKernel(t, Config{Gate: gate, ReviewTogether: true}, w)
	done := make(chan BatchResult)
	go func() {
		done <- k.RunBatch(context.Background(), []ToolCall{call("a", "write", `{"path":"cart.go"}`),
			call("b", "write", `{"path":"cart.go"}`), call("c", "write", `{"path":"greet.go"}`)}, nil)
	}()
	if got := []string{g.next(t), g.next(t)}; !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("gated %v, want a and c", got)
	}
	first, second := <-reqs, <-reqs
	if first.Reply == nil || first.Reply != second.Reply {
		t.Fatalf("the requests do not share the reply's changes: %v, %v", first.Reply, second.Reply)
	}
	var plan []string
	for _, c := range first.Reply.Changes {
		plan = append(plan, c.CallID+"<"+c.After)
	}
	if want := []string{"a<", "b<a", "c<"}; !slices.Equal(plan, want) {
		t.Errorf("reply changes %v, want %v", plan, want)
	}
	select {
	case <-first.Reply.Up:
	case <-time.After(30 * time.Second):
		t.Fatal("Up did not close once a and c were up")
	}
	// Before anything is decided: a, b and c have started, in that order, and b waits for a.
	var started []string
	waits := ""
	for _, e := range rec.all() {
		switch e := e.(type) {
		case ToolStart:
			started = append(started, e.CallID)
		case ToolUpdate:
			if e.WaitsFor != "" {
				waits = e.CallID + "<" + e.WaitsFor
			}
		}
	}
	if !slices.Equal(started, []string{"a", "b", "c"}) || waits != "b<a" {
		t.Errorf("started %v (want a, b, c), waits %q (want b<a)", started, waits)
	}
	g.decide("c", GateDecision{Allow: true})
	g.decide("a", GateDecision{Allow: true})
	if id := g.next(t); id != "b" {
		t.Fatalf("gated %q, want b", id)
	}
	if r := <-reqs; r.Reply != first.Reply || r.Posted != nil {
		t.Errorf("b's request: reply %p (want %p), posted set %v", r.Reply, first.Reply, r.Posted != nil)
	}
	g.decide("b", GateDecision{Allow: true})
	<-done
	if order := checkPairs(t, rec.all()); !slices.Equal(order, []string{"a", "b", "c"}) {
		t.Errorf("start order %v", order)
	}
}
