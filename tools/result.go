package tools

import (
	"errors"
	"fmt"
	"time"
)

// ResultType classifies a result. The model reads it; the user interface shows it.
type ResultType string

const (
	OK               ResultType = "ok"
	NotFound         ResultType = "not_found"
	InvalidArgs      ResultType = "invalid_args"
	ReadFirst        ResultType = "read_first"
	Stale            ResultType = "stale"
	PermissionDenied ResultType = "permission_denied"
	RejectedByUser   ResultType = "rejected_by_user"
	Timeout          ResultType = "timeout"
	Cancelled        ResultType = "cancelled"
	Oversized        ResultType = "oversized"
	ExecFailed       ResultType = "exec_failed"
	IOError          ResultType = "io_error"
)

// ApprovalUnavailable: the call needs an approval that no one can give here (agentd run without a
// terminal). It did not run, and the turn ends after its batch (Result.Halt).
const ApprovalUnavailable ResultType = "approval_unavailable"

// ResultTypes lists every result type, in a stable order.
var ResultTypes = []ResultType{OK, NotFound, InvalidArgs, ReadFirst, Stale, PermissionDenied,
	RejectedByUser, ApprovalUnavailable, Timeout, Cancelled, Oversized, ExecFailed, IOError}

// Result is the typed outcome of one call, in every path (success or early exit).
type Result struct {
	CallID string
	// Tool is the tool name as the model sent it.
	Tool    string
	Type    ResultType
	IsError bool
	// Content is what the model reads.
	Content   []Block
	Details   any
	Terminate bool
	Elapsed   time.Duration
	Meta      Meta

	// Halt ends the turn after the call's batch: the gate refused the call in a way the model
	// cannot resolve (agent.GateDecision.EndTurn). Unlike Terminate, one halted call is enough.
	Halt bool
}

// Text returns the concatenated text blocks of the result.
func (r *Result) Text() string {
	if len(r.Content) == 1 && r.Content[0].Type == "text" {
		return r.Content[0].Text
	}
	var s string
	for _, b := range r.Content {
		if b.Type == "text" {
			s += b.Text
		}
	}
	return s
}

// Error is a mistake the model can fix, or a refusal it should understand. Tools return it from
// Validate, Preview and Execute; the pipeline turns it into a result of the same Type.
type Error struct {
	Type    ResultType
	Message string
	// Details is optional structured data for the user interface.
	Details any
	// FollowUps are changes the failed call made that need review (Output.FollowUps): a command
	// that timed out still proposes what it changed.
	FollowUps []FollowUp
}

func (e *Error) Error() string { return string(e.Type) + ": " + e.Message }

// Errorf makes an *Error.
func Errorf(t ResultType, format string, args ...any) *Error {
	return &Error{Type: t, Message: fmt.Sprintf(format, args...)}
}

// TypeOf returns the result type of err: its *Error type if it wraps one, otherwise fallback.
func TypeOf(err error, fallback ResultType) ResultType {
	var te *Error
	if errors.As(err, &te) {
		return te.Type
	}
	return fallback
}

// ErrorResult builds an error result for a call.
func ErrorResult(callID, tool string, t ResultType, msg string) Result {
	return Result{CallID: callID, Tool: tool, Type: t, IsError: true,
		Content: []Block{{Type: "text", Text: msg}}}
}
