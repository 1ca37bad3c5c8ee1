// Package tools defines the contract between the kernel (package agent) and the tools a model may
// call: the Tool interface, its optional capabilities, typed arguments with a derived JSON Schema,
// the Registry, and typed results.
//
// A tool never asks for approval and never knows who decides: the kernel's pipeline validates,
// previews, gates and then calls Execute. Built-in tools live in tools/builtin; the file-safety
// layer they share lives in tools/fsafe.
package tools

import (
	"context"
	"encoding/json"
)

// Tool is the one required interface. Everything else is an optional capability, discovered by
// type assertion, with the default documented beside it.
type Tool interface {
	// Name is the identifier the model calls. It must be unique in a Registry.
	Name() string
	// Description is the model-facing description (usually embedded from a .md file).
	Description() string
	// Spec describes the tool's typed arguments: the Go type and the JSON Schema derived from it.
	Spec() *Spec
	// Execute performs the call. Args are validated and decoded (call.Args). A returned *Error
	// becomes a result of its Type; any other error becomes exec_failed. Execute may block; it
	// must return promptly after ctx is cancelled when its InterruptBehavior is Cancel.
	Execute(ctx context.Context, call *Call) (Output, error)
}

// Call is one tool call as it travels through the pipeline.
type Call struct {
	// ID is the tool-call ID (the model's, or one the loop assigned). Start and End carry it.
	ID string
	// Name is the tool name as the model sent it.
	Name string
	// Raw is the argument object exactly as the model sent it.
	Raw json.RawMessage
	// Args is a pointer to the tool's argument struct (see Spec), decoded from the coerced
	// arguments. Nil until validation succeeded.
	Args any
	// Preview is the tool's preview, when it has one, computed before the gate.
	Preview *Preview
	// Approval is what the gate decided, visible to Execute (for instance the hunks the user
	// accepted). Nil when no gate ran or the gate approved without conditions.
	Approval *Approval
}

// Approval carries the conditions of a positive gate decision to the tool.
type Approval struct {
	// Hunks lists the accepted hunk IDs of a file change; nil means all of them.
	Hunks []string
	// Content is the user's own version of a changed file (they edited the proposal before
	// accepting): edit and write write it instead of the proposal and tell the model how it
	// differs. nil: the proposal (Hunks).
	Content *string
	// Note is free text from the approver, passed on to the model in the result.
	Note string
	// HunkReasons are the user's reasons for rejected hunks of a file change (hunk ID → reason),
	// each passed on to the model in the result (HunkReasonLines). Never for an accepted hunk.
	HunkReasons map[string]string
	// UnixSockets are the host Unix sockets (absolute paths) a command may connect to: named by
	// `socket` lines of the user's rules that decided it (policy.Classification.UnixSockets).
	// Only the bash tool reads it; nil: none, socket(AF_UNIX) stays denied.
	UnixSockets []string
	// ReadableSensitive are sensitive workspace files (absolute paths) the user approved this
	// one command reading: the paths its command line names, resolved against its working
	// directory. Its sandbox does not mask them; every other sensitive file stays masked. Only
	// the bash tool reads it, and only a user's own approval sets it.
	ReadableSensitive []string
}

// ArgsOf returns the decoded argument struct of a call whose tool declared A with NewSpec[A].
// It panics if the types disagree, which is a programming error in the tool.
func ArgsOf[A any](c *Call) *A { return c.Args.(*A) }

// Output is what Execute returns on success.
type Output struct {
	// Text is the model-facing text of the result. Content, when set, is used instead.
	Text string
	// Content carries rich blocks (images); see ContentTool.
	Content []Block
	// Details is structured data for the user interface (exit code, applied hunks, …). It is not
	// sent to the model.
	Details any
	// Terminate asks the loop to end after this batch (honoured only if every call in the batch
	// asks; see the scheduler).
	Terminate bool
	// Meta describes truncation and spills.
	Meta Meta
	// FollowUps are changes the call made that it may not apply on its own (a command's change
	// to a hook or a tool's configuration, held from its copy-on-write layer): the kernel puts
	// each to the gate as a file change before the result is final, applies what is accepted
	// and appends every outcome to the result's text.
	FollowUps []FollowUp
}

// FollowUp is a change a call proposes for review after it ran. The kernel gates it like a
// file change (Preview with its Diff, Permission for the policy) and calls Apply only when it
// is allowed; the tool never learns who decided.
type FollowUp struct {
	// Subject names the change for the model and the user ("the command's change to
	// .husky/pre-commit (created)").
	Subject string
	// Label is the question's title for the user (".husky/pre-commit, from the command `npm i`").
	Label string
	// Preview shows the change; its Diff is what the user reviews.
	Preview *Preview
	// Permission is what the change touches, for the policy: AccessWrite with the path, and
	// Protected with the Reason it needs a review, so that it asks in every mode.
	Permission Permission
	// Apply makes the change as approved (the accepted hunks, or the user's own version) and
	// returns what it wrote, for the model. It checks that the file is still what the diff was
	// computed from (a stale error otherwise) and keeps the change revertible
	// (ChangeRecorderFrom).
	Apply func(ctx context.Context, a *Approval) (string, error)
}

// Block is one piece of result content.
type Block struct {
	Type string `json:"type"` // "text" or "image"
	Text string `json:"text,omitzero"`
	// MIME and Data describe an image ("image/png", raw bytes).
	MIME string `json:"mime,omitzero"`
	Data []byte `json:"data,omitzero"`
}

// Meta describes how a result was shaped.
type Meta struct {
	OriginalSize int64  `json:"originalSize,omitzero"` // bytes before truncation
	Truncated    bool   `json:"truncated,omitzero"`
	SpillPath    string `json:"spillPath,omitzero"` // where the full output was written, if anywhere
}
