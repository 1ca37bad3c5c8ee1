package acp

// This file is the only one that uses the session harness: the rest of the package sees the
// small interface below.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/mcp"
)

// Runtime is the process's session harness (harness.Runtime).
type Runtime = harness.Runtime

// opened is one session's harness as the ACP front end uses it.
type opened struct{ h *harness.Harness }

// openSpec describes a session to open: a new one in Workspace, or the stored one ID.
type openSpec struct {
	ID, Workspace string
	Overlay       *clientFiles // nil: no client file system
	// MCPServers are the client's servers (session/new and session/load mcpServers), for this
	// session only.
	MCPServers []mcp.ServerConfig
}

func openSession(rt *Runtime, spec openSpec) (*opened, error) {
	hs := harness.SessionSpec{ID: spec.ID, Workspace: spec.Workspace, MCPServers: spec.MCPServers}
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

// mcpProblems says which of the client's servers (by their agentd names) give the session no tools,
// and why: left out before starting, or failed to start.
func (o *opened) mcpProblems(client []mcp.ServerConfig) []string {
	out := append([]string(nil), o.h.MCPNotes()...)
	mine := map[string]bool{}
	for _, sc := range client {
		mine[sc.Name] = true
	}
	for _, st := range o.h.MCPStatus() {
		if mine[st.Name] && st.State != mcp.StateReady {
			out = append(out, "MCP server "+st.Name+" did not start; its tools are not available in this session: "+st.Error)
		}
	}
	return out
}

// clientMCP converts the client's mcpServers entries. An entry that is not valid does not stop the
// session: it is left out, with a note for the user.
func clientMCP(raw []json.RawMessage) ([]mcp.ServerConfig, []string) {
	var out []mcp.ServerConfig
	var notes []string
	for _, r := range raw {
		var e struct {
			Type    string   `json:"type"`
			Name    string   `json:"name"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
			Env     []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"env"`
			URL     string `json:"url"`
			Headers []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"headers"`
		}
		if err := json.Unmarshal(r, &e); err != nil {
			notes = append(notes, fmt.Sprintf("an MCP server entry is not valid and was not started: %v", err))
			continue
		}
		cs := mcp.ClientServer{Type: e.Type, Name: e.Name, Command: e.Command, Args: e.Args, URL: e.URL}
		for _, v := range e.Env {
			if cs.Env == nil {
				cs.Env = map[string]string{}
			}
			cs.Env[v.Name] = v.Value
		}
		for _, h := range e.Headers {
			if cs.Headers == nil {
				cs.Headers = map[string]string{}
			}
			cs.Headers[h.Name] = h.Value
		}
		sc, err := cs.Config()
		if err != nil {
			notes = append(notes, err.Error()+"; it was not started")
			continue
		}
		out = append(out, sc)
	}
	return out, notes
}
