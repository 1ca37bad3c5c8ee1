package tools

import (
	"context"

	"github.com/agentd/agentd/preview"
)

// Labeler gives a short human label for a call ("Edit main.go"). Default: the tool name.
type Labeler interface {
	Label(args any) string
}

// Validator checks a call beyond its schema (read-before-write, path confinement, …). It is cheap,
// never prompts, and never changes persistent state. A returned *Error keeps its type; any other
// error is invalid_args. Default: no extra checks.
type Validator interface {
	Validate(ctx context.Context, call *Call) error
}

// Previewer computes what the call would do, for the gate to show. Default: no preview.
type Previewer interface {
	Preview(ctx context.Context, call *Call) (*Preview, error)
}

// ReadOnlyTool reports whether a call only reads. Default: false.
type ReadOnlyTool interface {
	ReadOnly(args any) bool
}

// ConcurrencySafeTool reports whether a call may run alongside others. It wins over ReadOnly.
// Default: the value of ReadOnly.
type ConcurrencySafeTool interface {
	ConcurrencySafe(args any) bool
}

// ContentTool is a tool whose results may hold rich blocks (images). When present, the kernel calls
// ExecuteContent instead of Execute. Default: text results only.
type ContentTool interface {
	ExecuteContent(ctx context.Context, call *Call) (Output, error)
}

// ActivityDescriber says what a running call is doing, for a status line ("running go test").
// Default: the label.
type ActivityDescriber interface {
	Activity(args any) string
}

// Interrupt says what happens to a running call when the user steers the turn.
type Interrupt int

const (
	// InterruptBlock lets the call finish. It is the default: abandoning a half-done action is
	// worse than waiting for it.
	InterruptBlock Interrupt = iota
	// InterruptCancel cancels the call's context.
	InterruptCancel
)

// Interruptible reports the interrupt behaviour of a call. Default: InterruptBlock.
type Interruptible interface {
	InterruptBehavior(args any) Interrupt
}

// Mode is a tool's execution mode.
type Mode int

const (
	// Parallel lets the scheduler decide per call (the default).
	Parallel Mode = iota
	// Sequential makes every batch that contains a call of this tool run serially.
	Sequential
)

// ModalTool declares an execution mode. Default: Parallel.
type ModalTool interface {
	ExecutionMode() Mode
}

// CompatTool reshapes known model mistakes in the raw argument object before validation (a renamed
// field, a scalar where a list is expected). It receives the decoded object and returns the object
// to validate. It must not guess: only fix shapes that have a single meaning. Default: none.
type CompatTool interface {
	CompatArgs(args map[string]any) map[string]any
}

// Access is the kind of access a call needs. The kernel never reads it: it is metadata for the
// harness's policy.
type Access string

const (
	AccessRead  Access = "read"
	AccessWrite Access = "write"
	AccessExec  Access = "exec"
)

// Permission describes a call for a policy: what it touches and why it may need to ask.
type Permission struct {
	Access Access
	// Paths are the canonical absolute paths the call touches (empty for commands).
	Paths []string
	// Command is the shell command line an exec call runs (bash -c), for the policy to classify;
	// empty for other calls.
	Command string
	// Network says the call asks for network access.
	Network bool
	// Protected is set when a write touches a protected path (.git/config, .vscode/, …): the gate
	// must ask whatever the approval mode.
	Protected bool
	// Sensitive is set when a read touches a secret-looking file (.env, keys, .netrc): ask.
	Sensitive bool
	// Reason says why Protected or Sensitive is set, for the approval prompt.
	Reason string
}

// PermissionMetadata is read by the harness (daemon, CLI), never by the kernel. Default for a tool
// without it: AccessExec with no paths (the most cautious reading).
type PermissionMetadata interface {
	Permission(call *Call) Permission
}

// Preview is what a call would do, shown before the gate decides.
type Preview struct {
	// Summary is one line ("edit main.go: 2 hunks, +3 −1").
	Summary string `json:"summary"`
	// Diff is set for file changes.
	Diff *preview.Diff `json:"-"`
	// Command is set for commands.
	Command *CommandPreview `json:"command,omitzero"`
	// Binding identifies the exact action (canonical path and content hashes, or argv, cwd,
	// sandbox and network). An approval is bound to it and re-checked at execution.
	Binding string `json:"binding"`
}

// CommandPreview is the exact command a call would run.
type CommandPreview struct {
	Argv      []string `json:"argv"`
	Cwd       string   `json:"cwd"`
	TimeoutMS int64    `json:"timeoutMs"`
	Sandbox   string   `json:"sandbox"` // which protection applies, in words ("bubblewrap+landlock+seccomp", "none")
	Network   bool     `json:"network"`
}

// ProgressFunc receives progress from a running call.
type ProgressFunc func(Progress)

// Progress is one update from a running call: streamed output or a status message.
type Progress struct {
	Text    string // a chunk of output or a status line
	Details any    // optional structured data
}

type progressKey struct{}

// WithProgress returns a context whose ReportProgress calls go to fn. The kernel sets it.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress sends an update from a running tool. It is a no-op outside the kernel.
func ReportProgress(ctx context.Context, p Progress) {
	if fn, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && fn != nil {
		fn(p)
	}
}
