package acp

// This file is the only one that uses the session harness: the rest of the package sees the
// small interface below.

import (
	"context"
	"errors"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools/fsafe"
)

// Runtime is the process's session harness (harness.Runtime).
type Runtime = harness.Runtime

// opened is one session's harness as the ACP front end uses it.
type opened struct{ h *harness.Harness }

// openSpec describes a session to open: a new one in Workspace, or the stored one ID.
type openSpec struct {
	ID, Workspace string
	Overlay       *clientFiles // nil: no client file system
}

func openSession(rt *Runtime, spec openSpec) (*opened, error) {
	hs := harness.SessionSpec{ID: spec.ID, Workspace: spec.Workspace}
	if spec.Overlay != nil {
		hs.Overlay, hs.Writer = spec.Overlay, spec.Overlay
	}
	h, err := rt.Open(hs)
	if err != nil {
		return nil, err
	}
	return &opened{h: h}, nil
}

// notFound reports an error of openSession for a session the store does not have.
func notFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

func (o *opened) id() string                { return o.h.ID() }
func (o *opened) mode() string              { return o.h.Settings().ApprovalMode }
func (o *opened) numCtx() int               { return o.h.Settings().NumCtx }
func (o *opened) setMode(mode string) error { return o.h.SetMode(mode) }
func (o *opened) close() error              { return o.h.Close() }

// start builds the agent loop; ask receives every question the policy leaves to the user.
func (o *opened) start(ctx context.Context, ask func(context.Context, question) (answer, error), sink agent.Sink) (*agent.Session, error) {
	return o.h.Start(ctx, askerFunc(ask), sink)
}

// question is a call the policy wants the user to decide, as ACP shows it.
type question struct {
	Call   agent.GateRequest
	Kind   string // "edit", "command" or "tool"
	Reason string // the policy's reason for asking
	// Grants are the "allow for this session" scopes, narrowest first, as the user reads them.
	Grants []string
	grants []policy.Grant
}

// answer is the user's decision.
type answer struct {
	decision string // "accept", "acceptForSession", "reject", "cancelTurn"
	grant    int    // acceptForSession: the index in question.Grants
	reason   string
	by       string // "" : the user
}

type askerFunc func(context.Context, question) (answer, error)

func (f askerFunc) Ask(ctx context.Context, q harness.Question) (harness.Answer, error) {
	aq := question{Call: q.Call, Kind: q.Kind, Reason: q.Verdict.Reason, grants: q.Grants}
	for _, g := range q.Grants {
		aq.Grants = append(aq.Grants, g.String())
	}
	a, err := f(ctx, aq)
	if err != nil {
		return harness.Answer{}, err
	}
	out := harness.Answer{Reason: a.reason, By: a.by}
	switch a.decision {
	case "accept":
		out.Decision = harness.AnswerAccept
	case "acceptForSession":
		if a.grant < 0 || a.grant >= len(q.Grants) {
			return harness.Answer{Decision: harness.AnswerReject, Reason: "no such grant"}, nil
		}
		g := q.Grants[a.grant]
		out.Decision, out.Grant = harness.AnswerAcceptForSession, &g
	case "cancelTurn":
		out.Decision = harness.AnswerCancelTurn
	default:
		out.Decision = harness.AnswerReject
	}
	return out, nil
}

// byGrant is the audit log's "decided by" for a call a "reject always" answered.
const byGrant = store.ByGrant

// modes are the approval modes, as ACP session modes.
var modes = []struct{ id, name, description string }{
	{"ask", "Ask", "Reads are free; edits and commands ask."},
	{"auto-edit", "Auto-edit", "Edits apply (revertible); read-only commands run in the sandbox; other commands ask."},
	{"plan", "Plan", "Read-only: no edits, no commands that write."},
	{"yolo", "Yolo", "Everything runs, except protected paths, secrets, network access and sandbox escapes, which still ask."},
}

// validMode reports whether mode is an approval mode.
func validMode(mode string) bool { _, err := policy.ParseMode(mode); return err == nil }

var _ fsafe.Writer = (*clientFiles)(nil)

func (o *opened) workspace() string { return o.h.Workspace() }
