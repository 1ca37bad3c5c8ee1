package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/internal/bug"
	"github.com/agentd/agentd/tools"
)

// Gate decides whether an approved-looking call may run. It is the harness's policy and the user's
// voice; the kernel only calls it. It may block (a user deciding in an editor) and must return when
// ctx is cancelled. A nil Gate allows everything.
type Gate func(ctx context.Context, req GateRequest) (GateDecision, error)

// GateRequest is what a gate sees: the tool, the validated call and its preview.
type GateRequest struct {
	Tool    tools.Tool
	Call    *tools.Call
	Label   string
	Preview *tools.Preview
	// Posted, when set, is called by a gate that puts the question up and waits for the user (an
	// editor's review) once the question is visible: the kernel then puts up the next file change
	// of the reply beside it (Config.ReviewTogether). A gate that never calls it gets the next
	// question after this one is decided.
	Posted func()
	// FollowUp is set when the question is a change the call made and could not apply on its
	// own (tools.FollowUp), asked after the call ran: Call is that call, already decided once,
	// and Tool, Label and Preview describe the change.
	FollowUp bool
	// Subject, with FollowUp, is the change's tools.FollowUp.Subject, which its FollowUpEnd
	// carries too (with the call's ID, it names one follow-up: the audit log pairs the two).
	Subject string
	// Reply, set with Posted and for a change that waits for an earlier one of the same file, is
	// the run of file changes of the reply reviewed together (Config.ReviewTogether).
	Reply *ReplyChanges
}

// GateDecision is a gate's answer.
type GateDecision struct {
	Allow bool
	// Approval carries conditions of an Allow (accepted hunks, a note) to the tool.
	Approval *tools.Approval
	// Type is the result type of a refusal: RejectedByUser (the default) or PermissionDenied
	// (a policy said no).
	Type tools.ResultType
	// Reason is told to the model with a refusal (the user's words, or the policy's).
	Reason string
	// EndTurn makes a refusal end the turn after this batch instead of returning to the model:
	// nothing the model can do changes it (no one can give the approval the call needs). The
	// result is marked Halt.
	EndTurn bool
	// By says who decided, for the audit log: "policy", "grant", "user", or the word an asker gave
	// ("timeout", "unavailable"…). Empty: the audit log infers it (an allow by a gate it cannot
	// name, a refusal by the user unless Type is PermissionDenied).
	By string
}

// ExecFunc runs a prepared call. Middleware wraps it.
type ExecFunc func(ctx context.Context, t tools.Tool, call *tools.Call) (tools.Output, error)

// Middleware wraps execution, outermost first.
type Middleware func(next ExecFunc) ExecFunc

// ResultPatch replaces fields of a result. A nil field keeps the original; there is no deep merge.
type ResultPatch struct {
	Content   []tools.Block
	Details   any
	IsError   *bool
	Terminate *bool
}

// AfterHook may patch a finished result. Its error becomes an error result.
type AfterHook func(ctx context.Context, call *tools.Call, res *tools.Result) (*ResultPatch, error)

// Config is the kernel's configuration.
type Config struct {
	Registry   *tools.Registry
	Gate       Gate
	Middleware []Middleware
	After      AfterHook
	// MaxToolErrors consecutive failures of one tool disable it for the session. Default 3.
	MaxToolErrors int
	// MaxToolConcurrency caps concurrently running concurrency-safe calls. ≤ 1 means serial.
	// Default 4.
	MaxToolConcurrency int
	// ReviewTogether puts the file changes of one reply to their gates together: a call that
	// writes named paths (tools.PermissionMetadata: AccessWrite with Paths) is prepared and gated
	// while earlier changes to other paths still wait for their decisions, so a user sees every
	// file of the reply at once and decides them in any order. A change to a path an earlier call
	// of the batch writes waits for that call, and is previewed against what it left; any other
	// call waits for every earlier change. Off: calls are gated one at a time, in order.
	ReviewTogether bool
}

// Kernel runs tool calls through the pipeline. One Kernel serves one session: it holds the
// session's circuit breaker.
type Kernel struct {
	cfg     Config
	exec    ExecFunc
	breaker breaker
	emit    *emitter
	ids     atomic.Int64 // for calls that came without a usable ID
}

// NewKernel builds a kernel that reports events to sink.
func NewKernel(cfg Config, sink Sink) *Kernel {
	if cfg.MaxToolErrors <= 0 {
		cfg.MaxToolErrors = 3
	}
	if cfg.MaxToolConcurrency == 0 {
		cfg.MaxToolConcurrency = 4
	}
	k := &Kernel{cfg: cfg, emit: &emitter{sink: sink}}
	exec := ExecFunc(k.callTool)
	for i := len(cfg.Middleware) - 1; i >= 0; i-- {
		exec = cfg.Middleware[i](exec)
	}
	k.exec = exec
	return k
}

// Registry returns the kernel's tool registry.
func (k *Kernel) Registry() *tools.Registry { return k.cfg.Registry }

// Emit sends an event through the kernel's sink (serialized with tool events).
func (k *Kernel) Emit(e Event) { k.emit.send(e) }

// ToolFailures returns the consecutive failure count of a tool (for tests and status displays).
func (k *Kernel) ToolFailures(name string) int { return k.breaker.count(name) }

// Messages a model reads for early exits.
const (
	msgCancelled     = "Tool execution cancelled."
	msgSkippedSteer  = "Skipped due to queued user message."
	msgLengthVoided  = "Your previous reply was cut off by the output length limit, so this tool call was not run: its arguments may be incomplete. Resend the call with complete arguments (keep each call small: split big changes into several edits)."
	msgUnknownTool   = "tool %q not found. Available tools: %v."
	msgBreakerFormat = "tool %q is disabled after %d consecutive errors in this session. Do not call it again; continue with other tools or answer the user."
	// msgDependsOn explains a change checked again after an earlier change of the same file in the
	// reply was not applied: the earlier call's ID and tool, its result type, this call's error.
	msgDependsOn = "Not applied: this call changes the same file as your earlier call %s (%s), which was not applied (%s), and it does not fit the file without it: %v. Read the file as it is now and propose the change again if it is still wanted."
)

// prepared is a call that passed every stage up to the gate and may execute.
type prepared struct {
	tool  tools.Tool
	call  *tools.Call
	start time.Time
	safe  bool // may run concurrently
	ro    bool // only reads
	intr  tools.Interrupt
}

// counted says whether an early exit counts towards the tool's circuit breaker.
type counted bool

// exit is an early result from a stage.
type exit struct {
	res   tools.Result
	count counted
}

// prepare runs stages a–i for one call. Exactly one of the returns is non-nil. When prepare returns
// an exit, it has already emitted Start and End for the call.
func (k *Kernel) prepare(ctx context.Context, tc ToolCall) (*prepared, *tools.Result) {
	return k.prepareAfter(ctx, tc, gateOrder{})
}

// gateOrder places a file change among the others of its batch (Config.ReviewTogether).
type gateOrder struct {
	// dep is the earlier change of the same file, when it was not applied.
	dep *unapplied
	// turn is closed when the call may be put to its gate (nil: at once).
	turn <-chan struct{}
	// posted is GateRequest.Posted.
	posted func()
	// reply is GateRequest.Reply.
	reply *ReplyChanges
	// started: the scheduler emitted the call's Start already (in the model's order).
	started bool
}

// unapplied is an earlier call of the batch that changes the same file and was not applied.
type unapplied struct {
	id, tool string
	typ      tools.ResultType
}

// prepareAfter is prepare for a call that follows dep: when dep is set and the call no longer
// validates or previews against the file as dep left it, the call fails as stale, saying why.
func (k *Kernel) prepareAfter(ctx context.Context, tc ToolCall, o gateOrder) (*prepared, *tools.Result) {
	dep := o.dep
	start := time.Now()
	call := &tools.Call{ID: tc.ID, Name: tc.Name, Raw: tc.Arguments}
	startStop := k.startStop
	if o.started {
		startStop = k.stop
	}

	// a. cancelled before anything happened.
	if ctx.Err() != nil {
		return nil, startStop(call, start, exit{res: tools.ErrorResult(call.ID, call.Name, tools.Cancelled, msgCancelled)})
	}
	// b. circuit breaker.
	if n := k.breaker.count(tc.Name); n >= k.cfg.MaxToolErrors {
		return nil, startStop(call, start, exit{res: tools.ErrorResult(call.ID, call.Name, tools.ExecFailed,
			fmt.Sprintf(msgBreakerFormat, tc.Name, n))})
	}
	// c. Start, with the arguments as the model sent them.
	t, found := k.cfg.Registry.Lookup(tc.Name)
	label := tc.Name
	if !o.started {
		k.emit.send(ToolStart{CallID: call.ID, Tool: call.Name, Label: label, Args: call.Raw})
	}
	// d. find.
	if !found {
		return nil, k.stop(call, start, exit{count: true, res: tools.ErrorResult(call.ID, call.Name, tools.NotFound,
			fmt.Sprintf(msgUnknownTool, tc.Name, k.cfg.Registry.Names()))})
	}
	// e. compat hook, coercion and validation.
	var compat func(map[string]any) map[string]any
	if c, ok := t.(tools.CompatTool); ok {
		compat = c.CompatArgs
	}
	args, err := t.Spec().Decode(call.Raw, compat)
	if err != nil {
		return nil, k.stop(call, start, exit{count: true, res: tools.ErrorResult(call.ID, call.Name, tools.InvalidArgs,
			fmt.Sprintf("%s: %v", call.Name, err))})
	}
	call.Args = args
	// f. the tool's own validation.
	if v, ok := t.(tools.Validator); ok {
		if err := v.Validate(ctx, call); err != nil {
			return nil, k.stop(call, start, exit{count: dep == nil, res: dependentError(call, tools.InvalidArgs, err, dep)})
		}
	}
	// g. preview (with the label, now that the arguments are known).
	if l, ok := t.(tools.Labeler); ok {
		label = l.Label(args)
	}
	if p, ok := t.(tools.Previewer); ok {
		pv, err := p.Preview(ctx, call)
		if err != nil {
			return nil, k.stop(call, start, exit{count: dep == nil, res: dependentError(call, tools.InvalidArgs, err, dep)})
		}
		call.Preview = pv
		if pv != nil {
			k.emit.send(ToolUpdate{CallID: call.ID, Tool: call.Name, Label: label, Preview: pv})
		}
	}
	if call.Preview == nil && label != call.Name {
		k.emit.send(ToolUpdate{CallID: call.ID, Tool: call.Name, Label: label})
	}
	// h. gate. A refusal or a gate failure is not the tool's fault: not counted.
	if k.cfg.Gate != nil {
		if o.turn != nil {
			select {
			case <-o.turn:
			case <-ctx.Done():
			}
		}
		d, err := k.cfg.Gate(ctx, GateRequest{Tool: t, Call: call, Label: label, Preview: call.Preview, Posted: o.posted, Reply: o.reply})
		switch {
		case ctx.Err() != nil:
			return nil, k.stop(call, start, exit{res: tools.ErrorResult(call.ID, call.Name, tools.Cancelled, cancelText(ctx))})
		case err != nil:
			return nil, k.stop(call, start, exit{res: tools.ErrorResult(call.ID, call.Name, tools.RejectedByUser,
				"Not run: the approval could not be obtained ("+err.Error()+"). Nothing was changed.")})
		case !d.Allow:
			return nil, k.stop(call, start, exit{res: refusal(call, d)})
		}
		call.Approval = d.Approval
	}
	// i. The world may have changed while the user decided: each tool checks, next to its write,
	// that what it is about to do still binds to the approved preview (Preview.Binding), and
	// answers stale otherwise. That is the only post-gate check: no second planning here.
	ro := false
	if r, ok := t.(tools.ReadOnlyTool); ok {
		ro = r.ReadOnly(args)
	}
	safe := ro
	if c, ok := t.(tools.ConcurrencySafeTool); ok {
		safe = c.ConcurrencySafe(args)
	}
	intr := tools.InterruptBlock
	if i, ok := t.(tools.Interruptible); ok {
		intr = i.InterruptBehavior(args)
	}
	return &prepared{tool: t, call: call, start: start, safe: safe, ro: ro, intr: intr}, nil
}

// execute runs stages j–l for a prepared call and returns its result after emitting End.
func (k *Kernel) execute(ctx context.Context, p *prepared) tools.Result {
	call := p.call
	// j. progress reporting through the context; middleware; Execute.
	pr := &progressGate{k: k, call: call}
	if a, ok := p.tool.(tools.ActivityDescriber); ok {
		k.emit.send(ToolUpdate{CallID: call.ID, Tool: call.Name, Activity: a.Activity(call.Args)})
	}
	out, err := k.safeExec(tools.WithProgress(ctx, pr.report), p.tool, call)
	pr.close()

	var res tools.Result
	if err != nil {
		res = errorResult(call, tools.ExecFailed, err)
		if ctx.Err() != nil && res.Type == tools.ExecFailed {
			// The call failed because it was cancelled: say so in the kernel's words.
			res.Type, res.Content = tools.Cancelled, textBlock(cancelText(ctx))
		}
	} else {
		res = tools.Result{CallID: call.ID, Tool: call.Name, Type: tools.OK, Content: out.Content,
			Details: out.Details, Terminate: out.Terminate, Meta: out.Meta}
		if res.Content == nil {
			res.Content = textBlock(out.Text)
		}
	}
	// k. after-hook.
	if k.cfg.After != nil {
		patch, err := k.cfg.After(ctx, call, &res)
		switch {
		case err != nil:
			res = errorResult(call, tools.ExecFailed, fmt.Errorf("after-hook failed: %w", err))
		case patch != nil:
			applyPatch(&res, patch)
		}
	}
	// l. End, counted: an error +1, a success resets. A cancellation is not the tool's fault.
	return k.end(call, p.start, exit{res: res, count: res.Type != tools.Cancelled})
}

// safeExec calls the middleware chain and turns a panic into an error result.
func (k *Kernel) safeExec(ctx context.Context, t tools.Tool, call *tools.Call) (out tools.Output, err error) {
	defer func() {
		if r := recover(); r != nil {
			bug.Reportf("tool %s panicked: %v\n%s", call.Name, r, debug.Stack())
			out, err = tools.Output{}, fmt.Errorf("the tool crashed (%v); this is a bug in agentd, not in your call", r)
		}
	}()
	return k.exec(ctx, t, call)
}

// callTool is the innermost ExecFunc. The changes the call proposes after it ran
// (tools.FollowUp) are gated and applied here, inside the middleware, so that what is applied
// joins the call's checkpoint.
func (k *Kernel) callTool(ctx context.Context, t tools.Tool, call *tools.Call) (tools.Output, error) {
	var out tools.Output
	var err error
	if c, ok := t.(tools.ContentTool); ok {
		out, err = c.ExecuteContent(ctx, call)
	} else {
		out, err = t.Execute(ctx, call)
	}
	var te *tools.Error
	switch {
	case err == nil && len(out.FollowUps) > 0:
		text := k.followUps(ctx, call, out.FollowUps)
		out.FollowUps = nil
		if out.Content != nil {
			out.Content = append(out.Content, tools.Block{Type: "text", Text: text})
		} else {
			out.Text = joinText(out.Text, text)
		}
	case errors.As(err, &te) && len(te.FollowUps) > 0:
		te.Message = joinText(te.Message, k.followUps(ctx, call, te.FollowUps))
		te.FollowUps = nil
	}
	return out, err
}

func joinText(a, b string) string {
	if a != "" && !strings.HasSuffix(a, "\n") {
		a += "\n"
	}
	return a + b
}

// startEnd emits a Start/End pair for a call that exits before Start would normally be sent.
func (k *Kernel) startEnd(call *tools.Call, start time.Time, e exit) tools.Result {
	k.emit.send(ToolStart{CallID: call.ID, Tool: call.Name, Label: call.Name, Args: call.Raw})
	return k.end(call, start, e)
}

// stop and startStop are end and startEnd for prepare's early exits.
func (k *Kernel) stop(call *tools.Call, start time.Time, e exit) *tools.Result {
	r := k.end(call, start, e)
	return &r
}

func (k *Kernel) startStop(call *tools.Call, start time.Time, e exit) *tools.Result {
	r := k.startEnd(call, start, e)
	return &r
}

// end stamps, accounts and emits the End of a call.
func (k *Kernel) end(call *tools.Call, start time.Time, e exit) tools.Result {
	res := e.res
	res.CallID, res.Tool = call.ID, call.Name
	res.IsError = res.Type != tools.OK
	res.Elapsed = time.Since(start)
	if e.count {
		k.breaker.record(call.Name, res.IsError)
	}
	k.emit.send(ToolEnd{CallID: call.ID, Tool: call.Name, Result: res})
	return res
}

func refusal(call *tools.Call, d GateDecision) tools.Result {
	t := d.Type
	if t == "" {
		t = tools.RejectedByUser
	}
	msg := "The user rejected this call; nothing was changed."
	switch t {
	case tools.PermissionDenied:
		msg = "This call is not permitted; nothing was changed."
	case tools.ApprovalUnavailable:
		msg = "Not run: this call needs an approval that no one can give here; nothing was changed."
	}
	if d.EndTurn {
		msg += " The turn ends here."
	}
	if d.Reason != "" {
		msg += " Reason: " + d.Reason
	}
	r := tools.ErrorResult(call.ID, call.Name, t, msg)
	r.Halt = d.EndTurn
	return r
}

// dependentError is errorResult, but for a call whose earlier change of the same file was not
// applied: stale, naming that call (not counted against the tool: the model did nothing wrong).
func dependentError(call *tools.Call, fallback tools.ResultType, err error, dep *unapplied) tools.Result {
	if dep == nil {
		return errorResult(call, fallback, err)
	}
	res := errorResult(call, fallback, err)
	res.Type = tools.Stale
	res.Content = textBlock(fmt.Sprintf(msgDependsOn, dep.id, dep.tool, dep.typ, res.Text()))
	return res
}

func errorResult(call *tools.Call, fallback tools.ResultType, err error) tools.Result {
	res := tools.ErrorResult(call.ID, call.Name, tools.TypeOf(err, fallback), err.Error())
	var te *tools.Error
	if errors.As(err, &te) {
		res.Content = textBlock(te.Message)
		res.Details = te.Details
	}
	return res
}

func applyPatch(res *tools.Result, p *ResultPatch) {
	if p.Content != nil {
		res.Content = p.Content
	}
	if p.Details != nil {
		res.Details = p.Details
	}
	if p.IsError != nil {
		switch {
		case *p.IsError && res.Type == tools.OK:
			res.Type = tools.ExecFailed
		case !*p.IsError:
			res.Type = tools.OK
		}
	}
	if p.Terminate != nil {
		res.Terminate = *p.Terminate
	}
}

func textBlock(s string) []tools.Block { return []tools.Block{{Type: "text", Text: s}} }

// cancelText explains a cancellation, naming steering when that was the cause.
func cancelText(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), errSteered) {
		return msgSkippedSteer
	}
	return msgCancelled
}

// emitter serializes events to the sink.
type emitter struct {
	mu   sync.Mutex
	sink Sink
}

func (e *emitter) send(ev Event) {
	if e.sink == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sink(ev)
}

// progressGate forwards a running call's progress as ToolUpdate events until the call returns;
// later updates are dropped.
type progressGate struct {
	k      *Kernel
	call   *tools.Call
	mu     sync.Mutex
	closed bool
}

func (g *progressGate) report(p tools.Progress) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.k.emit.send(ToolUpdate{CallID: g.call.ID, Tool: g.call.Name, Progress: &p})
}

func (g *progressGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// breaker counts consecutive failures per tool name.
type breaker struct {
	mu    sync.Mutex
	fails map[string]int
}

func (b *breaker) count(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fails[name]
}

func (b *breaker) record(name string, failed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !failed {
		delete(b.fails, name)
		return
	}
	if b.fails == nil {
		b.fails = make(map[string]int)
	}
	b.fails[name]++
}
