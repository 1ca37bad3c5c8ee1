package builtin

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/changeset"
)

//go:embed bash.md
var bashDescription string

// BashArgs are the arguments of bash.
type BashArgs struct {
	Command     string `json:"command" jsonschema_description:"The command."`
	Timeout     int    `json:"timeout,omitempty" jsonschema:"minimum=1" jsonschema_description:"Seconds (default 120, at most 600)."`
	Description string `json:"description,omitempty" jsonschema_description:"A few words for the user."`
	Cwd         string `json:"cwd,omitempty" jsonschema_description:"Directory to run in (default: the root); better than cd."`
	Network     bool   `json:"network,omitempty" jsonschema_description:"Ask for network access (off by default)."`
}

var bashSpec = tools.NewSpec[BashArgs]()

// BashDetails describe a command's run for the user interface.
type BashDetails struct {
	// ExitCode is the exit status, -1 when the process was killed by a signal (Signal).
	ExitCode   int    `json:"exitCode"`
	Signal     string `json:"signal,omitzero"`
	TimedOut   bool   `json:"timedOut,omitzero"`
	Cancelled  bool   `json:"cancelled,omitzero"`
	DurationMS int64  `json:"durationMs"`
	Sandbox    string `json:"sandbox"`
	// Gaps are the protections the sandbox could not give this command.
	Gaps []string `json:"gaps,omitzero"`
	// OutputBytes is the size of the whole output (escape sequences stripped).
	OutputBytes int64  `json:"outputBytes"`
	Truncated   bool   `json:"truncated,omitzero"`
	SpillPath   string `json:"spillPath,omitzero"`
	// Changes is what the command changed in the workspace (its copy-on-write layer): applied,
	// offered for review (the result's text says what the user decided) or held; nil when it wrote straight to the workspace (no layer: Landlock
	// only, or unsandboxed).
	Changes *changeset.ChangeSet `json:"changes,omitzero"`
}

// Defaults of BashConfig.
const (
	defaultBashTimeout  = 2 * time.Minute
	defaultBashMax      = 10 * time.Minute
	defaultBashGrace    = 2 * time.Second
	defaultOutputHead   = 16 << 10
	defaultOutputTail   = 16 << 10
	defaultSpillMax     = 64 << 20
	defaultProgressTick = 100 * time.Millisecond
	// drainTimeout is how long output is still read after the command's process group is gone:
	// only a process that escaped the group (setsid, unsandboxed) can still hold the pipe.
	drainTimeout = time.Second
)

type bashTool struct {
	*env
	runner Runner
	cfg    BashConfig
}

var (
	_ tools.Validator          = (*bashTool)(nil)
	_ tools.Previewer          = (*bashTool)(nil)
	_ tools.PermissionMetadata = (*bashTool)(nil)
	_ tools.ActivityDescriber  = (*bashTool)(nil)
	_ tools.Interruptible      = (*bashTool)(nil)
)

func newBash(e *env, cfg BashConfig) (*bashTool, error) {
	setDur := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	setDur(&cfg.DefaultTimeout, defaultBashTimeout)
	setDur(&cfg.MaxTimeout, defaultBashMax)
	setDur(&cfg.Grace, defaultBashGrace)
	setDur(&cfg.ProgressInterval, defaultProgressTick)
	cfg.DefaultTimeout = min(cfg.DefaultTimeout, cfg.MaxTimeout)
	if cfg.HeadBytes <= 0 {
		cfg.HeadBytes = defaultOutputHead
	}
	if cfg.TailBytes <= 0 {
		cfg.TailBytes = defaultOutputTail
	}
	if cfg.SpillMaxBytes <= 0 {
		cfg.SpillMaxBytes = defaultSpillMax
	}
	r := cfg.Runner
	if r == nil {
		if cfg.Sandbox == nil {
			return nil, errors.New("builtin: Config.Bash needs a Sandbox or a Runner (commands never run unsandboxed by default)")
		}
		r = NewSandboxRunner(cfg.Sandbox, cfg.Policy, e.fs.Workspace())
	}
	return &bashTool{env: e, runner: r, cfg: cfg}, nil
}

func (t *bashTool) Name() string        { return "bash" }
func (t *bashTool) Description() string { return bashDescription }
func (t *bashTool) Spec() *tools.Spec   { return bashSpec }

// Label is the call's description, or the command's first line.
func (t *bashTool) Label(args any) string {
	a := args.(*BashArgs)
	if d := firstLine(a.Description, 80); d != "" {
		return d
	}
	return firstLine(a.Command, 80)
}

func (t *bashTool) Activity(args any) string {
	return "running " + firstLine(args.(*BashArgs).Command, 60)
}

func (t *bashTool) InterruptBehavior(any) tools.Interrupt { return tools.InterruptCancel }

// Permission is exec of the command line: what the command may touch is the sandbox's business.
func (t *bashTool) Permission(call *tools.Call) tools.Permission {
	p := tools.Permission{Access: tools.AccessExec}
	if a, ok := call.Args.(*BashArgs); ok {
		p.Command, p.Network = a.Command, a.Network
	}
	return p
}

var bashRenames = renamer{
	"cmd": "command", "script": "command",
	"workdir": "cwd", "working_directory": "cwd", "workingDirectory": "cwd", "dir": "cwd", "directory": "cwd",
	"timeout_seconds": "timeout", "timeoutSeconds": "timeout",
}

func (t *bashTool) CompatArgs(args map[string]any) map[string]any { return bashRenames.apply(args) }

// bashPlan is the exact action a call asks for.
type bashPlan struct {
	argv     []string
	dir      string // canonical absolute working directory
	shownDir string
	timeout  time.Duration
	capped   bool // the call asked for more than MaxTimeout
	sandbox  string
	network  bool
}

func (t *bashTool) plan(a *BashArgs) (*bashPlan, error) {
	if strings.TrimSpace(a.Command) == "" {
		return nil, tools.Errorf(tools.InvalidArgs, "command is empty; give the shell command to run")
	}
	if strings.IndexByte(a.Command, 0) >= 0 {
		return nil, tools.Errorf(tools.InvalidArgs, "command contains a NUL byte, which a shell command cannot hold")
	}
	dir, err := t.requireDir(a.Cwd, "bash (cwd)")
	if err != nil {
		return nil, err
	}
	pl := &bashPlan{argv: []string{"bash", "-c", a.Command}, dir: dir.Abs(), shownDir: t.show(dir),
		timeout: t.cfg.DefaultTimeout, network: a.Network}
	if a.Timeout > 0 {
		pl.timeout = time.Duration(a.Timeout) * time.Second
		if pl.timeout > t.cfg.MaxTimeout {
			pl.timeout, pl.capped = t.cfg.MaxTimeout, true
		}
	}
	if pl.sandbox, err = t.runner.Describe(a.Network); err != nil {
		return nil, tools.Errorf(tools.ExecFailed, "bash cannot run commands here: %v. Do not retry; use the other tools or tell the user.", err)
	}
	return pl, nil
}

// binding identifies the exact command: argv, working directory, sandbox and network.
func (p *bashPlan) binding() string {
	b, _ := json.Marshal(struct {
		Argv    []string `json:"argv"`
		Cwd     string   `json:"cwd"`
		Sandbox string   `json:"sandbox"`
		Network bool     `json:"network"`
	}{p.argv, p.dir, p.sandbox, p.network})
	h := sha256.Sum256(b)
	return "exec:" + hex.EncodeToString(h[:])
}

func (t *bashTool) Validate(_ context.Context, call *tools.Call) error {
	_, err := t.plan(tools.ArgsOf[BashArgs](call))
	return err
}

func (t *bashTool) Preview(_ context.Context, call *tools.Call) (*tools.Preview, error) {
	a := tools.ArgsOf[BashArgs](call)
	pl, err := t.plan(a)
	if err != nil {
		return nil, err
	}
	summary := fmt.Sprintf("run %s in %s", firstLine(a.Command, 80), pl.shownDir)
	if pl.network {
		summary += " with network access"
	}
	return &tools.Preview{Summary: summary, Binding: pl.binding(), Command: &tools.CommandPreview{
		Argv: pl.argv, Cwd: pl.dir, TimeoutMS: pl.timeout.Milliseconds(), Sandbox: pl.sandbox, Network: pl.network}}, nil
}

// Execute runs the command.
//
// A non-zero exit status is an ok result that says "exit status N", not an error. The model
// must read failing test or build output to fix it, and it does whichever way the result is
// typed; but error results count towards the circuit breaker, which disables a tool after three
// consecutive errors — and "run the tests, fix, run again" fails several times in a row by
// design, as does grep finding nothing. The breaker is for calls that cannot work (bad
// arguments, no sandbox, a timeout), and those are errors here: invalid_args, exec_failed
// (the command could not start), timeout, cancelled.
func (t *bashTool) Execute(ctx context.Context, call *tools.Call) (tools.Output, error) {
	a := tools.ArgsOf[BashArgs](call)
	pl, err := t.plan(a)
	if err != nil {
		return tools.Output{}, err
	}
	if call.Preview != nil && call.Preview.Binding != "" && call.Preview.Binding != pl.binding() {
		return tools.Output{}, tools.Errorf(tools.Stale,
			"the working directory or the sandbox changed after the command was approved; it was not run. Call bash again.")
	}
	return t.run(ctx, call, pl)
}

func (t *bashTool) run(ctx context.Context, call *tools.Call, pl *bashPlan) (tools.Output, error) {
	start := time.Now()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	// The approval's opt-ins (unix sockets, sensitive files the user approved reading) hold for
	// this run only; the binding above is the plan's, which they do not change.
	cmd, confined, err := commandWith(runCtx, t.runner, pl, optInsOf(call.Approval, t.fs.Workspace().Roots()))
	if err != nil {
		return tools.Output{}, tools.Errorf(tools.ExecFailed, "the command could not be started: %v", err)
	}
	if confined != "" {
		pl.sandbox = confined
	}
	defer cmd.Release()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = scrubEnv(cmd.Env)
	cmd.Stdin = nil // /dev/null
	pr, pw, err := os.Pipe()
	if err != nil {
		return tools.Output{}, fmt.Errorf("bash: output pipe: %w", err)
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw // one pipe: stdout and stderr interleave as written
	k := &killer{grace: t.cfg.Grace}
	cmd.Cancel = func() error { return k.terminate(cmd.Process.Pid) }
	if err := cmd.Start(); err != nil {
		pw.Close()
		return tools.Output{}, tools.Errorf(tools.ExecFailed, "the command could not be started: %v", err)
	}
	pw.Close()
	pid := cmd.Process.Pid

	prog := startProgress(ctx, t.cfg.ProgressInterval)
	out := newCapture(t.cfg.HeadBytes, t.cfg.TailBytes, t.cfg.SpillDir, t.cfg.SpillMaxBytes, prog)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		out.readFrom(pr)
	}()
	var timedOut atomic.Bool
	timer := time.AfterFunc(pl.timeout, func() {
		timedOut.Store(true)
		stopRun()
	})

	// The command's first process has exited (or waitExit cannot tell without reaping it):
	// kill whatever it left running in its group, then reap it.
	reaped := !waitExit(pid)
	if reaped {
		_ = cmd.Wait()
	}
	timer.Stop()
	sent := k.finish(pid)
	cmd.Kill() // and what left the group (setsid), through the command's cgroup
	if !reaped {
		_ = cmd.Wait()
	}
	select {
	case <-readDone:
	case <-time.After(drainTimeout):
		_ = pr.SetReadDeadline(time.Now())
		<-readDone
	}
	prog.close()
	out.close()
	// What the command changed is in its copy-on-write layer; the allowlisted part reaches
	// the workspace now, the rest is held. A cancelled turn applies nothing.
	var changes changeset.ChangeSet
	var changeErr error
	if ctx.Err() == nil {
		changes, changeErr = changeset.Apply(ctx, t.fs, cmd)
	}
	elapsed := time.Since(start)

	d := BashDetails{ExitCode: -1, DurationMS: elapsed.Milliseconds(), Sandbox: pl.sandbox, Gaps: cmd.Gaps,
		OutputBytes: out.total, Truncated: out.truncated(), SpillPath: out.spillPath}
	status := t.status(cmd.ProcessState, &d)
	killedByUs := sent != 0
	if cmd.Layered() {
		d.Changes = &changes
	}
	switch {
	case killedByUs && ctx.Err() == nil && timedOut.Load():
		d.TimedOut = true
		how := "stopped with SIGTERM"
		if sent == syscall.SIGKILL {
			how = fmt.Sprintf("killed by SIGKILL (it did not exit within %s of SIGTERM)", seconds(t.cfg.Grace))
		}
		status = fmt.Sprintf("timed out after %s: %s", seconds(pl.timeout), how)
	case killedByUs:
		d.Cancelled = true
		status = fmt.Sprintf("cancelled after %s; the command was stopped", seconds(elapsed))
	}

	var b strings.Builder
	text := out.text()
	if text == "" {
		text = "(no output)"
	}
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[%s]\n", status)
	if ev := cmd.Events().String(); ev != "" {
		fmt.Fprintf(&b, "(%s)\n", ev)
	}
	if note := t.truncationNote(out); note != "" {
		b.WriteString(note + "\n")
	}
	if pl.capped {
		fmt.Fprintf(&b, "(The timeout was capped at %s, the most a command may take.)\n", seconds(t.cfg.MaxTimeout))
	}
	if d.TimedOut {
		fmt.Fprintf(&b, "If the command needs more time, pass a larger timeout (at most %d seconds), or run a smaller part of it.\n",
			int(t.cfg.MaxTimeout/time.Second))
	}
	b.WriteString(changes.Text())
	switch {
	case changeErr != nil:
		fmt.Fprintf(&b, "[None of the command's changes were applied: agentd could not read them (%v).]\n", changeErr)
	case cmd.Layered() && ctx.Err() != nil:
		b.WriteString("[The turn was cancelled: none of the command's changes were applied.]\n")
	}
	if note := noteOf(call); note != "" {
		b.WriteString(note + "\n")
	}
	// What needs the user's review and can be shown as a file change goes to the gate now,
	// through the kernel (tools never ask): the layer's content was read already.
	fus := changes.FollowUps(t.fs, "the command `"+firstLine(tools.ArgsOf[BashArgs](call).Command, 40)+"`")
	switch {
	case d.TimedOut:
		return tools.Output{}, &tools.Error{Type: tools.Timeout, Message: b.String(), Details: d, FollowUps: fus}
	case d.Cancelled:
		return tools.Output{}, &tools.Error{Type: tools.Cancelled, Message: b.String(), Details: d, FollowUps: fus}
	case changeErr != nil:
		return tools.Output{}, &tools.Error{Type: tools.IOError, Message: b.String(), Details: d}
	}
	return tools.Output{Text: b.String(), Details: d, FollowUps: fus,
		Meta: tools.Meta{OriginalSize: out.total, Truncated: out.truncated(), SpillPath: out.spillPath}}, nil
}

// status describes how the command ended and fills the exit fields of d.
func (t *bashTool) status(ps *os.ProcessState, d *BashDetails) string {
	if ps == nil {
		return "the command's exit status is unknown"
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		d.Signal = signalName(ws.Signal())
		return "killed by " + d.Signal
	}
	d.ExitCode = ps.ExitCode()
	s := "exit status " + strconv.Itoa(d.ExitCode)
	// Shells and the sandbox report a command killed by signal N as 128+N.
	if n := d.ExitCode - 128; n > 0 && n < 65 {
		s += " (killed by " + signalName(syscall.Signal(n)) + ")"
	}
	return s
}

// truncationNote says how the output was cut and where the rest is.
func (t *bashTool) truncationNote(out *capture) string {
	if !out.truncated() {
		return ""
	}
	s := fmt.Sprintf("[The output was %d bytes; only the first %d and the last %d are shown.", out.total, len(out.head), out.tail.n)
	switch {
	case out.spillPath != "":
		shown, hint := out.spillPath, fmt.Sprintf("use bash, e.g. grep -n PATTERN %s or sed -n '100,200p' %s", out.spillPath, out.spillPath)
		if p, err := t.resolve(out.spillPath); err == nil {
			shown = t.show(p)
			hint = "use grep on it or read it with offset and limit"
		}
		s += fmt.Sprintf(" The full output is saved in %s; to see more of it, %s.", shown, hint)
		if out.spilled < out.total {
			s += fmt.Sprintf(" (That file holds only the first %d bytes.)", out.spilled)
		}
	case out.spillErr != nil:
		s += fmt.Sprintf(" The full output could not be saved (%v).", out.spillErr)
	}
	if out.spillPath == "" {
		s += " To see the rest, run the command again with its output filtered (grep, head, tail)."
	}
	return s + "]"
}

// killer stops a command's process group: SIGTERM, then SIGKILL after a grace period. Once the
// group's leader has exited (finish), nothing more is sent through it.
type killer struct {
	grace time.Duration

	mu    sync.Mutex
	sent  syscall.Signal // the last signal terminate sent (0: none)
	done  bool
	timer *time.Timer
}

// terminate is the command's Cancel: the context ended (timeout or cancellation).
func (k *killer) terminate(pid int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done || k.sent != 0 {
		return nil
	}
	k.signal(pid, syscall.SIGTERM)
	k.timer = time.AfterFunc(k.grace, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if !k.done {
			k.signal(pid, syscall.SIGKILL)
		}
	})
	return nil
}

func (k *killer) signal(pid int, sig syscall.Signal) {
	k.sent = sig
	_ = syscall.Kill(-pid, sig)
}

// finish kills what is left of the group after its leader exited and returns the last signal
// terminate sent (0: the command ended on its own).
func (k *killer) finish(pid int) syscall.Signal {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.done = true
	if k.timer != nil {
		k.timer.Stop()
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return k.sent
}

// seconds formats a duration for the model: "120s", "1.5s".
func seconds(d time.Duration) string {
	s := strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + "s"
}
