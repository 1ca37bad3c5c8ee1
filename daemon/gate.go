package daemon

import (
	"context"
	"errors"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
)

// Asker asks the user about one call the policy cannot decide alone. The editor daemon asks
// through reviews; `agentd run` asks in the terminal. Ask must return when ctx is cancelled.
type Asker interface {
	Ask(ctx context.Context, q Question) (Answer, error)
}

// Question is one call to decide.
type Question struct {
	Call    agent.GateRequest
	Request policy.Request
	Verdict policy.Verdict
	// Kind is "edit" (a file change with a diff), "command" or "tool".
	Kind string
	// Grants are the "allow for this session" choices the user may be offered, narrowest first.
	Grants []policy.Grant
}

// Answer kinds.
const (
	AnswerAccept           = "accept"
	AnswerAcceptForSession = "acceptForSession"
	AnswerReject           = "reject"
	AnswerCancelTurn       = "cancelTurn"
)

// Answer is the user's decision.
type Answer struct {
	Decision string
	// Hunks are the accepted hunks of an edit (nil: all).
	Hunks []string
	// Grant is the scope of an acceptForSession.
	Grant *policy.Grant
	// Reason is the user's reason for a reject, told to the model.
	Reason string
	// By says who decided, for the audit log: "user" (default), "grant", "timeout", …
	By string
}

// ErrCancelTurn is returned by a gate when the user cancelled the whole turn.
var ErrCancelTurn = errors.New("the user cancelled the turn")

// gate turns policy verdicts and the user's answers into the kernel's gate decisions.
type gate struct {
	h   *Harness
	ask Asker
	// cancelTurn stops the running turn (set by the frontend once the agent session exists).
	cancelTurn func()
}

func newGate(h *Harness, ask Asker) *gate { return &gate{h: h, ask: ask} }

func (g *gate) decide(ctx context.Context, req agent.GateRequest) (agent.GateDecision, error) {
	preq := g.h.policyRequest(req)
	v := g.h.Policy.Decide(preq)
	switch v.Decision {
	case policy.Allow:
		by := store.ByPolicy
		if g.h.Policy.Grants().Covers(preq) {
			by = store.ByGrant
		}
		store.SetDecidedBy(ctx, by)
		return agent.GateDecision{Allow: true}, nil
	case policy.Deny:
		store.SetDecidedBy(ctx, store.ByPolicy)
		return agent.GateDecision{Type: tools.PermissionDenied, Reason: v.Reason}, nil
	}
	if g.ask == nil {
		store.SetDecidedBy(ctx, store.ByPolicy)
		return agent.GateDecision{Reason: "no one can approve it here (" + v.Reason + ")"}, nil
	}
	q := Question{Call: req, Request: preq, Verdict: v, Kind: kindOf(req)}
	if v.Grantable {
		q.Grants = g.h.Policy.Suggest(preq, v)
	}
	ans, err := g.ask.Ask(ctx, q)
	if err != nil {
		return agent.GateDecision{}, err
	}
	by := ans.By
	if by == "" {
		by = store.ByUser
	}
	store.SetDecidedBy(ctx, by)
	switch ans.Decision {
	case AnswerAccept:
		return agent.GateDecision{Allow: true, Approval: &tools.Approval{Hunks: ans.Hunks, Note: ans.Reason}}, nil
	case AnswerAcceptForSession:
		if ans.Grant != nil {
			if _, err := g.h.Policy.Grants().Add(*ans.Grant); err != nil {
				return agent.GateDecision{}, err
			}
		}
		return agent.GateDecision{Allow: true}, nil
	case AnswerCancelTurn:
		if g.cancelTurn != nil {
			g.cancelTurn()
		}
		return agent.GateDecision{Reason: "the user cancelled the turn"}, nil
	default:
		return agent.GateDecision{Reason: ans.Reason}, nil
	}
}

func kindOf(req agent.GateRequest) string {
	switch {
	case req.Preview != nil && req.Preview.Diff != nil:
		return "edit"
	case req.Preview != nil && req.Preview.Command != nil:
		return "command"
	}
	return "tool"
}

// policyRequest describes a call for the policy.
func (h *Harness) policyRequest(req agent.GateRequest) policy.Request {
	pr := policy.Request{
		Tool:             req.Call.Name,
		Preview:          req.Preview,
		SandboxAvailable: h.rt.sandbox != nil && h.rt.features.LandlockABI > 0,
	}
	if pm, ok := req.Tool.(tools.PermissionMetadata); ok {
		pr.Permission = pm.Permission(req.Call)
	} else {
		pr.Permission = tools.Permission{Access: tools.AccessExec}
	}
	if a, ok := req.Call.Args.(*builtin.BashArgs); ok {
		pr.Command = a.Command
		pr.Network = a.Network
	}
	return pr
}
