package agent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentd/agentd/tools"
)

// errSteered is the cancellation cause when a queued user message interrupts a batch.
var errSteered = errors.New("a user message was queued")

// BatchResult is the outcome of one batch of tool calls.
type BatchResult struct {
	// Results are in the order the model emitted the calls.
	Results []tools.Result
	// Terminate is set when every call that ran asked to end the loop.
	Terminate bool
	// Steered is set when a queued user message interrupted the batch.
	Steered bool
	// Halt is set when a call's result says the turn must end (tools.Result.Halt).
	Halt bool
}

// RunBatch runs the tool calls of one model reply.
//
// Calls are prepared and gated one at a time in the model's order, so gates see them in order.
// Before a call is prepared, every earlier call that may write has finished, so its validation and
// preview see the world those calls left (an edit after an edit of the same file previews against
// the edited file). Approved calls run concurrently: concurrency-safe calls fan out up to
// MaxToolConcurrency; an unsafe call starts only when nothing runs, and nothing starts while it
// runs; a batch containing a tool in Sequential mode runs serially.
//
// steer fires when the user queues a message: no new call starts (the rest end as skipped),
// running calls whose InterruptBehavior is Cancel are cancelled, Block calls finish. Cancelling ctx
// cancels everything; calls not yet started end as cancelled. Every call gets exactly one
// ToolStart and one ToolEnd, in every path.
func (k *Kernel) RunBatch(ctx context.Context, calls []ToolCall, steer <-chan struct{}) BatchResult {
	b := &batch{k: k, ctx: ctx, prepCtx: ctx, calls: k.uniqueIDs(calls), limit: k.cfg.MaxToolConcurrency}
	n := len(b.calls)
	b.results = make([]tools.Result, n)
	b.done = make(chan int, n)
	for _, c := range b.calls {
		if t, ok := k.cfg.Registry.Lookup(c.Name); ok {
			if m, ok := t.(tools.ModalTool); ok && m.ExecutionMode() == tools.Sequential {
				b.limit = 1
			}
		}
	}
	b.limit = max(b.limit, 1)
	if steer != nil {
		var stop context.CancelCauseFunc
		b.prepCtx, stop = context.WithCancelCause(ctx)
		defer stop(nil)
		b.steered = make(chan struct{})
		batchDone := make(chan struct{})
		defer close(batchDone)
		go b.watch(steer, batchDone, stop)
	}

	for i := range n {
		if paths := b.changes(b.calls[i]); paths != nil {
			// A file change: it waits only for earlier calls that are not file changes; then it is
			// prepared and gated beside the others.
			for !b.stopped() && b.blocks() {
				b.wait()
			}
			if b.stopped() {
				c := &tools.Call{ID: b.calls[i].ID, Name: b.calls[i].Name, Raw: b.calls[i].Arguments}
				b.results[i] = k.startEnd(c, time.Now(), exit{res: tools.ErrorResult(c.ID, c.Name, tools.Cancelled, b.stopText())})
				continue
			}
			b.startTogether(i, paths)
			continue
		}
		b.run = nil
		// Earlier calls that may write must finish before this one is prepared.
		for !b.stopped() {
			if _, writing, _ := b.snapshot(); !writing {
				break
			}
			b.wait()
		}
		if b.stopped() {
			c := &tools.Call{ID: b.calls[i].ID, Name: b.calls[i].Name, Raw: b.calls[i].Arguments}
			b.results[i] = k.startEnd(c, time.Now(), exit{res: tools.ErrorResult(c.ID, c.Name, tools.Cancelled, b.stopText())})
			continue
		}
		p, early := k.prepare(b.prepCtx, b.calls[i])
		if early != nil {
			b.results[i] = *early
			continue
		}
		safe := p.safe && b.limit > 1
		// Wait for a slot: an unsafe call needs an empty field; a safe one needs a free slot and
		// no unsafe call running.
		for !b.stopped() {
			count, _, unsafe := b.snapshot()
			if count == 0 || (safe && count < b.limit && !unsafe) {
				break
			}
			b.wait()
		}
		if b.stopped() {
			b.results[i] = k.end(p.call, p.start, exit{res: tools.ErrorResult(p.call.ID, p.call.Name, tools.Cancelled, b.stopText())})
			continue
		}
		b.start(i, p, safe)
	}
	// Drain: running calls finish (or are cancelled by steering or ctx through their contexts).
	for b.running > 0 {
		b.finished(<-b.done)
	}
	// The loop ends only if every call asked to (an error or a skipped call never asks).
	term, halt := n > 0, false
	for i := range b.results {
		term = term && b.results[i].Terminate && !b.results[i].IsError
		halt = halt || b.results[i].Halt
	}
	return BatchResult{Results: b.results, Terminate: term, Steered: b.isSteered(), Halt: halt}
}

// batch is the state of one RunBatch. Its goroutine owns everything but the fields under mu,
// which the steering watcher also reads.
type batch struct {
	k       *Kernel
	ctx     context.Context
	prepCtx context.Context // governs preparation and gating; steering cancels it
	calls   []ToolCall
	results []tools.Result
	limit   int
	done    chan int      // indices of finished calls
	steered chan struct{} // closed by the watcher; nil when the batch cannot be steered
	running int           // calls started and not yet collected from done

	// together are the file changes started with startTogether (ReviewTogether), in order.
	together []*change
	// posted is closed when the last file change without a predecessor has been put up (or
	// decided): the next one is put to its gate after it, so questions appear in the model's order.
	posted chan struct{}
	// run is the run of consecutive file changes being started (nil between runs); up closes
	// its Up.
	run *ReplyChanges
	up  func()

	mu       sync.Mutex
	inflight []inflight
}

type inflight struct {
	i      int
	cancel context.CancelCauseFunc // nil when the call cannot be steered
	safe   bool
	ro     bool
	paths  []string // a file change reviewed together with others (ReviewTogether); nil otherwise
}

// changes returns the canonical paths a call writes when it may be reviewed together with the
// other file changes of the batch (Config.ReviewTogether), nil otherwise: the tool says it writes
// exactly these paths (tools.PermissionMetadata) and shows a preview. Nothing is emitted here; a
// call whose arguments do not decode is prepared the usual way, which reports it.
func (b *batch) changes(tc ToolCall) []string {
	if !b.k.cfg.ReviewTogether {
		return nil
	}
	t, ok := b.k.cfg.Registry.Lookup(tc.Name)
	if !ok {
		return nil
	}
	pm, ok := t.(tools.PermissionMetadata)
	if _, previews := t.(tools.Previewer); !ok || !previews {
		return nil
	}
	var compat func(map[string]any) map[string]any
	if c, ok := t.(tools.CompatTool); ok {
		compat = c.CompatArgs
	}
	args, err := t.Spec().Decode(tc.Arguments, compat)
	if err != nil {
		return nil
	}
	perm := pm.Permission(&tools.Call{ID: tc.ID, Name: tc.Name, Raw: tc.Arguments, Args: args})
	if perm.Access != tools.AccessWrite || len(perm.Paths) == 0 {
		return nil
	}
	return perm.Paths
}

// blocks says whether a file change must wait before it starts: a call that is not a file change
// is in flight. (A change of a path an earlier change writes starts, and waits for that one.)
func (b *batch) blocks() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.inflight {
		if r.paths == nil {
			return true
		}
	}
	return false
}

func overlaps(a, b []string) bool {
	for _, p := range a {
		if slices.Contains(b, p) {
			return true
		}
	}
	return false
}

// change is a file change started with startTogether.
type change struct {
	i     int
	paths []string
	done  chan struct{} // closed once results[i] is set
}

// startTogether prepares, gates and runs a file change in its own goroutine, so that the loop can
// put the next file change to its gate while this one waits for its decision. A change of a path
// an earlier change of the batch writes waits for that one to end, is prepared against what it
// left, and is stale if it no longer fits without it. The others are put to their gates in the
// model's order, each once the previous one is up (GateRequest.Posted) or decided.
//
// Its Start is emitted here, so that the calls start in the model's order (each editor shows a
// card per call in the order the calls start); one that waits for an earlier change says so
// (ToolUpdate.WaitsFor).
func (b *batch) startTogether(i int, paths []string) {
	if b.run == nil {
		b.planRun(i)
	}
	c := &change{i: i, paths: paths, done: make(chan struct{})}
	var pred *change
	for _, e := range slices.Backward(b.together) {
		if overlaps(e.paths, paths) {
			pred = e
			break
		}
	}
	b.together = append(b.together, c)
	tc, run := b.calls[i], b.run
	b.k.emit.send(ToolStart{CallID: tc.ID, Tool: tc.Name, Label: tc.Name, Args: tc.Arguments})
	if pred != nil {
		b.k.emit.send(ToolUpdate{CallID: tc.ID, Tool: tc.Name, WaitsFor: b.calls[pred.i].ID})
	}
	var turn <-chan struct{}
	var posted func()
	if pred == nil {
		turn = b.posted
		ch := make(chan struct{})
		b.posted = ch
		last := run.lastFree() == tc.ID
		up := b.up
		posted = sync.OnceFunc(func() {
			close(ch)
			if last {
				up()
			}
		})
	}
	b.mu.Lock()
	b.inflight = append(b.inflight, inflight{i: i, paths: paths})
	b.mu.Unlock()
	b.running++
	go func() {
		defer func() {
			close(c.done)
			b.done <- i
		}()
		var dep *unapplied
		if pred != nil {
			<-pred.done
			if r := b.results[pred.i]; r.IsError {
				dep = &unapplied{id: r.CallID, tool: r.Tool, typ: r.Type}
			}
		}
		p, early := b.k.prepareAfter(b.prepCtx, b.calls[i], gateOrder{dep: dep, turn: turn, posted: posted, reply: run, started: true})
		if posted != nil {
			posted()
		}
		if early != nil {
			b.results[i] = *early
			return
		}
		execCtx := b.ctx
		if b.steered != nil && p.intr == tools.InterruptCancel {
			var cancel context.CancelCauseFunc
			execCtx, cancel = context.WithCancelCause(b.ctx)
			defer cancel(nil)
			b.mu.Lock()
			for j := range b.inflight {
				if b.inflight[j].i == i {
					b.inflight[j].cancel = cancel
				}
			}
			if b.isSteered() {
				cancel(errSteered)
			}
			b.mu.Unlock()
		}
		b.results[i] = b.k.execute(execCtx, p)
	}()
}

// ReplyChanges is a run of consecutive file changes of one reply, put to their gates together
// (Config.ReviewTogether): what a front end that asks one question at a time lists before it
// asks about each.
type ReplyChanges struct {
	// Changes are the run's file changes in the model's order.
	Changes []ReplyChange
	// Up is closed once every change of the run that waits for no earlier one has been put up
	// (GateRequest.Posted) or has ended without a question (invalid arguments, allowed by the
	// policy). The others are put up once the change they wait for has ended. Up stays open when
	// the batch stops first (steering, cancellation): the gates' context ends then.
	Up <-chan struct{}
}

// ReplyChange is one file change of a ReplyChanges.
type ReplyChange struct {
	CallID, Tool string
	Args         json.RawMessage // as the model sent them
	// Paths are the canonical paths it writes.
	Paths []string
	// After is the call ID of the earlier change of the batch that writes one of Paths: this one
	// waits for it to end, and is previewed against what it left. Empty: none.
	After string
}

// lastFree returns the call ID of the last change of the run that waits for no earlier one.
func (r *ReplyChanges) lastFree() string {
	for _, c := range slices.Backward(r.Changes) {
		if c.After == "" {
			return c.CallID
		}
	}
	return ""
}

// planRun describes the run of file changes that starts at call i (b.run, b.up): the calls up to
// the next one that is not a file change, each with the earlier change it waits for, as
// startTogether will find it.
func (b *batch) planRun(i int) {
	r := &ReplyChanges{}
	type prior struct {
		id    string
		paths []string
	}
	var before []prior
	for _, e := range b.together {
		before = append(before, prior{b.calls[e.i].ID, e.paths})
	}
	for j := i; j < len(b.calls); j++ {
		paths := b.changes(b.calls[j])
		if paths == nil {
			break
		}
		rc := ReplyChange{CallID: b.calls[j].ID, Tool: b.calls[j].Name, Args: b.calls[j].Arguments, Paths: paths}
		for _, p := range slices.Backward(before) {
			if overlaps(p.paths, paths) {
				rc.After = p.id
				break
			}
		}
		before = append(before, prior{rc.CallID, paths})
		r.Changes = append(r.Changes, rc)
	}
	up := make(chan struct{})
	r.Up = up
	b.run, b.up = r, sync.OnceFunc(func() { close(up) })
	if r.lastFree() == "" {
		b.up()
	}
}

// watch waits for a steer: it stops preparation and cancels running calls that declared Cancel.
func (b *batch) watch(steer <-chan struct{}, batchDone <-chan struct{}, stopPrep context.CancelCauseFunc) {
	select {
	case <-steer:
	case <-batchDone:
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.steered)
	stopPrep(errSteered)
	for _, r := range b.inflight {
		if r.cancel != nil {
			r.cancel(errSteered)
		}
	}
}

func (b *batch) start(i int, p *prepared, safe bool) {
	execCtx := b.ctx
	var cancel context.CancelCauseFunc
	if b.steered != nil && p.intr == tools.InterruptCancel {
		execCtx, cancel = context.WithCancelCause(b.ctx)
	}
	b.mu.Lock()
	b.inflight = append(b.inflight, inflight{i: i, cancel: cancel, safe: safe, ro: p.ro})
	if cancel != nil && b.isSteered() {
		cancel(errSteered)
	}
	b.mu.Unlock()
	b.running++
	go func() {
		b.results[i] = b.k.execute(execCtx, p)
		if cancel != nil {
			cancel(nil)
		}
		b.done <- i
	}()
}

func (b *batch) finished(i int) {
	b.running--
	b.mu.Lock()
	defer b.mu.Unlock()
	for j, r := range b.inflight {
		if r.i == i {
			b.inflight = append(b.inflight[:j], b.inflight[j+1:]...)
			return
		}
	}
}

// snapshot reports how many calls run, and whether any of them may write or is unsafe.
func (b *batch) snapshot() (count int, writing, unsafe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.inflight {
		writing = writing || !r.ro
		unsafe = unsafe || !r.safe
	}
	return len(b.inflight), writing, unsafe
}

// wait blocks until one running call finishes, or steering or cancellation happens.
func (b *batch) wait() {
	select {
	case i := <-b.done:
		b.finished(i)
	case <-b.steered:
	case <-b.ctx.Done():
	}
}

func (b *batch) isSteered() bool {
	if b.steered == nil {
		return false
	}
	select {
	case <-b.steered:
		return true
	default:
		return false
	}
}

func (b *batch) stopped() bool { return b.isSteered() || b.ctx.Err() != nil }

func (b *batch) stopText() string {
	if b.isSteered() {
		return msgSkippedSteer
	}
	return cancelText(b.ctx)
}

// VoidCalls answers every call of a reply cut by the length limit without running any of them:
// their arguments may be incomplete. Each gets a Start/End pair and an error asking the model to
// resend the call. Not counted against the tools.
func (k *Kernel) VoidCalls(calls []ToolCall) []tools.Result {
	calls = k.uniqueIDs(calls)
	out := make([]tools.Result, len(calls))
	for i, c := range calls {
		call := &tools.Call{ID: c.ID, Name: c.Name, Raw: c.Arguments}
		out[i] = k.startEnd(call, time.Now(), exit{res: tools.ErrorResult(c.ID, c.Name, tools.InvalidArgs, msgLengthVoided)})
	}
	return out
}

// uniqueIDs gives every call a non-empty ID unique within the batch (models sometimes omit or
// repeat them); assigned IDs are unique for the kernel's lifetime. The input is not modified.
func (k *Kernel) uniqueIDs(calls []ToolCall) []ToolCall {
	seen := make(map[string]bool, len(calls))
	var out []ToolCall
	for i, c := range calls {
		id := c.ID
		for id == "" || seen[id] {
			if out == nil {
				out = append([]ToolCall(nil), calls...)
			}
			id = "call_k" + strconv.FormatInt(k.ids.Add(1), 10)
			out[i].ID = id
		}
		seen[id] = true
	}
	if out == nil {
		return calls
	}
	return out
}
