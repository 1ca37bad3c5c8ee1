package acp

// This file is the only one that uses the session harness: the rest of the package sees the
// small interface below.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/mcp"
)

// Runtime is the process's session harness (harness.Runtime).
type Runtime = harness.Runtime

// opened is one session's harness as the ACP front end uses it.
type opened struct{ s *harness.Session }

// Transcript types, as the harness builds them.
type (
	update   = harness.Update
	toolCall = harness.ToolCall
)

const (
	itemUser       = harness.ItemUser
	itemAgent      = harness.ItemAgent
	itemTool       = harness.ItemTool
	itemCompaction = harness.ItemCompaction
	statusRunning  = harness.ToolRunning
)

// openSpec describes a session to open: a new one in Workspace, or the stored one ID.
type openSpec struct {
	ID, Workspace string
	Overlay       *clientFiles // nil: no client file system
	// MCPServers are the client's servers (session/new and session/load mcpServers), for this
	// session only.
	MCPServers []mcp.ServerConfig
}

// openSession opens a session; ask receives every question the policy leaves to the user.
func openSession(rt *Runtime, spec openSpec, ask func(context.Context, question) (answer, error)) (*opened, error) {
	hs := harness.SessionSpec{ID: spec.ID, Workspace: spec.Workspace, MCPServers: spec.MCPServers}
	if spec.Overlay != nil {
		hs.Overlay, hs.Writer = spec.Overlay, spec.Overlay
	}
	h, err := rt.Open(hs)
	if err != nil {
		return nil, err
	}
	return &opened{s: harness.NewSession(h, askerFunc(ask))}, nil
}

// notFound reports an error of openSession for a session the store does not have.
func notFound(err error) bool { return errors.Is(err, harness.ErrUnknownSession) }

func (o *opened) id() string                { return o.s.ID() }
func (o *opened) mode() string              { return o.s.Settings().ApprovalMode }
func (o *opened) numCtx() int               { return o.s.Settings().NumCtx }
func (o *opened) setMode(mode string) error { return o.s.SetMode(mode) }
func (o *opened) close() error              { return o.s.Close() }
func (o *opened) cancel()                   { o.s.Cancel() }
func (o *opened) transcript() []harness.Turn {
	return o.s.Transcript()
}

func (o *opened) model() string { return o.s.Settings().Model }

// setModel switches the session's model between turns.
func (o *opened) setModel(model string) error { return o.s.SetModel(model) }

// models are the names of the models the model server has ("" : it did not answer).
func (o *opened) models(ctx context.Context) []string {
	list, err := o.s.Model().ListModels(ctx)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(list))
	for _, m := range list {
		names = append(names, m.Name)
	}
	return names
}

// start starts the agent loop (the model server is asked for the model's capabilities).
func (o *opened) start(ctx context.Context) error { return o.s.Start(ctx) }

func (o *opened) prompt(text string) error {
	_, err := o.s.Prompt(context.Background(), text)
	return err
}

// watch calls fn with every update of the session until the returned func is called.
func (o *opened) watch(fn func(update)) func() {
	_, detach := o.s.Attach(fn)
	return detach
}

// question is a call the policy wants the user to decide, as ACP shows it.
type question struct {
	Call   agent.GateRequest
	Kind   string // "edit", "command" or "tool"
	Reason string // the policy's reason for asking
	// Scope is the narrowest "for this session" scope the policy offers, as the user reads it
	// ("" : none, the call cannot be allowed or rejected for the session).
	Scope string
}

// answer is the user's decision.
type answer struct {
	decision string // "accept", "acceptForSession", "reject", "rejectForSession", "cancelTurn"
	reason   string
}

type askerFunc func(context.Context, question) (answer, error)

func (f askerFunc) Ask(ctx context.Context, q harness.Question) (harness.Answer, error) {
	aq := question{Call: q.Call, Kind: q.Kind, Reason: q.Verdict.Reason}
	if len(q.Grants) > 0 {
		aq.Scope = q.Grants[0].String()
	}
	a, err := f(ctx, aq)
	if err != nil {
		return harness.Answer{}, err
	}
	out := harness.Answer{Reason: a.reason}
	switch a.decision {
	case "accept":
		out.Decision = harness.AnswerAccept
	case "acceptForSession", "rejectForSession":
		if len(q.Grants) == 0 {
			return harness.Answer{Decision: harness.AnswerReject, Reason: "no such scope"}, nil
		}
		g := q.Grants[0]
		out.Decision, out.Grant = harness.AnswerAcceptForSession, &g
		if a.decision == "rejectForSession" {
			out.Decision = harness.AnswerRejectForSession
		}
	case "cancelTurn":
		out.Decision = harness.AnswerCancelTurn
	default:
		out.Decision = harness.AnswerReject
	}
	return out, nil
}

// codeModelUnavailable answers a request that needs the model when the model server cannot serve
// it (not running, model not pulled): the message says what failed and how to fix it, for the
// client to show. agentd's daemon uses the same code.
const codeModelUnavailable = -32001

// setupError is a failure to start a session's loop as a JSON-RPC error the client displays.
func setupError(err error) *rpcError {
	var me *agent.ModelError
	if errors.As(err, &me) {
		e := errorf(codeModelUnavailable, "%s", describeErr(err))
		e.Data = map[string]any{"kind": string(me.Kind), "fix": me.Fix}
		return e
	}
	return errorf(codeInternal, "%v", err)
}

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

func (o *opened) workspace() string { return o.s.Workspace() }

// mcpProblems says which of the client's servers (by their agentd names) give the session no tools,
// and why: left out before starting, or failed to start.
func (o *opened) mcpProblems(client []mcp.ServerConfig) []string {
	out := append([]string(nil), o.s.MCPNotes()...)
	mine := map[string]bool{}
	for _, sc := range client {
		mine[sc.Name] = true
	}
	for _, st := range o.s.MCPStatus() {
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
