package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentd/agentd/harness"
	"sort"
	"strings"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/rpc"
)

// attachedSession finds a session this connection is attached to.
func (c *client) attachedSession(id string) (*liveSession, error) {
	c.mu.Lock()
	ls := c.attached[id]
	c.mu.Unlock()
	if ls == nil {
		return nil, rpc.Errorf(rpc.CodeUnknownSession, "not attached to session %q (session/new or session/attach first)", id)
	}
	return ls, nil
}

func (c *client) sessionNew(ctx context.Context, params []byte) (any, error) {
	var p rpc.SessionNewParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	c.mu.Lock()
	folders, init := append([]string(nil), c.folders...), c.init
	c.mu.Unlock()
	root := ""
	switch {
	case p.WorkspaceFolder != "":
		dir, ok := fileURIPath(p.WorkspaceFolder)
		if !ok {
			return nil, rpc.Errorf(rpc.CodeWorkspace, "workspaceFolder must be a file: URI, got %q", p.WorkspaceFolder)
		}
		for _, f := range folders {
			if within(f, canonical(dir)) {
				root = canonical(dir)
			}
		}
		if root == "" {
			return nil, rpc.Errorf(rpc.CodeWorkspace, "%s is not inside a workspace folder of this connection", p.WorkspaceFolder)
		}
	case len(folders) > 0:
		root = folders[0]
	default:
		return nil, rpc.Errorf(rpc.CodeWorkspace, "no workspace folder: open a folder in the editor first")
	}
	model, mode := p.Model, p.ApprovalMode
	if model == "" {
		model = init.Model
	}
	if mode == "" {
		mode = init.ApprovalMode
	}
	if mode != "" {
		if _, err := policy.ParseMode(mode); err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
		}
	}
	h, err := c.srv.rt.Open(harness.SessionSpec{Workspace: root, Model: model, Mode: mode, Title: p.Title, Overlay: c.srv.overlay, Writer: editorWriter{c.srv}, Diagnostics: editorDiagnostics{c.srv},
		OllamaHost: init.OllamaHost, ContextCap: init.ContextLength})
	if err != nil {
		return nil, fmt.Errorf("creating the session: %w", err)
	}
	ls := c.srv.newLive(h)
	ls.attach(c)
	// The window the first turn will choose, so that the info can warn about the session's setup
	// now; a slow or absent server only leaves the warning for later.
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	h.PlanWindow(pctx)
	cancel()
	return rpc.SessionNewResult{Session: ls.info()}, nil
}

func (c *client) sessionList(params []byte) (any, error) {
	var p rpc.SessionListParams
	if err := rpc.Decode(params, &p); err != nil {
		return nil, err
	}
	filter := ""
	if p.WorkspaceFolder != "" {
		dir, ok := fileURIPath(p.WorkspaceFolder)
		if !ok {
			return nil, rpc.Errorf(rpc.CodeWorkspace, "workspaceFolder must be a file: URI")
		}
		filter = canonical(dir)
	}
	stored, err := c.srv.rt.Sessions()
	if err != nil {
		return nil, err
	}
	out := []rpc.SessionInfo{}
	seen := map[string]bool{}
	c.srv.mu.Lock()
	live := make([]*liveSession, 0, len(c.srv.sessions))
	for _, ls := range c.srv.sessions {
		live = append(live, ls)
	}
	c.srv.mu.Unlock()
	for _, ls := range live {
		if filter == "" || ls.h.Workspace() == filter {
			out = append(out, ls.info())
			seen[ls.h.ID()] = true
		}
	}
	for _, s := range stored {
		if seen[s.ID] || (filter != "" && s.Workspace != filter) {
			continue
		}
		out = append(out, rpc.SessionInfo{SessionID: s.ID, Title: s.Title, WorkspaceFolder: fileURI(s.Workspace),
			Model: s.Model, ApprovalMode: s.Mode, CreatedAt: s.Created.UTC().Format(time.RFC3339),
			UpdatedAt: s.Updated.UTC().Format(time.RFC3339), Turns: s.Turns})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].UpdatedAt > out[j].UpdatedAt })
	return rpc.SessionListResult{Sessions: out}, nil
}

func (c *client) sessionAttach(params []byte) (any, error) {
	var p rpc.SessionAttachParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.srv.session(p.SessionID, c)
	if err != nil {
		return nil, err
	}
	snap := ls.attach(c)
	return rpc.SessionAttachResult{Session: ls.info(), History: ls.history(snap), PendingReviews: ls.pendingReviews()}, nil
}

func (c *client) sessionDetach(params []byte) (any, error) {
	var p rpc.SessionDetachParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	delete(c.attached, p.SessionID)
	c.mu.Unlock()
	ls.detach(c)
	return rpc.SessionDetachResult{}, nil
}

func (c *client) sessionPrompt(ctx context.Context, params []byte) (any, error) {
	var p rpc.SessionPromptParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Text) == "" {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "the prompt is empty")
	}
	editor, err := editorContext(ctx, p.Context, ls.h.Workspace(), c.srv.overlay)
	if err != nil {
		return nil, err
	}
	// After an undo (turn/undo), the turn starts with a note of its own (harness turnNote).
	id, err := ls.h.PromptWithContext(ctx, p.Text, editor)
	if errors.Is(err, agent.ErrTurnRunning) {
		return nil, rpc.Errorf(rpc.CodeTurnRunning, "a turn is already running in this session: use session/steer or session/cancel")
	}
	if err != nil {
		return nil, modelFailure(err)
	}
	return rpc.SessionPromptResult{TurnID: id}, nil
}

// modelFailure turns a model error into a JSON-RPC error whose message carries the fix.
func modelFailure(err error) error {
	var me *agent.ModelError
	if errors.As(err, &me) {
		msg := me.Message
		if me.Fix != "" {
			msg += " — " + me.Fix
		}
		return rpc.Errorf(-32001, "%s", msg)
	}
	return err
}

func (c *client) sessionSteer(ctx context.Context, params []byte) (any, error) {
	var p rpc.SessionSteerParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	id, err := ls.h.Steer(ctx, p.Text)
	if err != nil {
		return nil, modelFailure(err)
	}
	return rpc.SessionSteerResult{TurnID: id}, nil
}

func (c *client) sessionCancel(params []byte) (any, error) {
	var p rpc.SessionCancelParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	return rpc.SessionCancelResult{Cancelled: ls.h.Cancel()}, nil
}

func (c *client) sessionRevert(params []byte) (any, error) {
	var p rpc.SessionRevertParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	if ls.h.Running() != "" {
		return nil, rpc.Errorf(rpc.CodeTurnRunning, "a turn is running: cancel it before reverting")
	}
	turn, res, err := ls.h.Revert(p.TurnID)
	if err != nil {
		return nil, err
	}
	out := rpc.SessionRevertResult{TurnID: turn, Restored: res.Restored, Skipped: []rpc.RevertSkip{}}
	if out.Restored == nil {
		out.Restored = []string{}
	}
	for _, s := range res.Skipped {
		out.Skipped = append(out.Skipped, rpc.RevertSkip{Path: s.Path, Reason: s.Reason})
	}
	return out, nil
}

func (c *client) sessionSetMode(params []byte) (any, error) {
	var p rpc.SessionSetModeParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	if err := ls.h.SetMode(p.ApprovalMode); err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
	}
	return rpc.SessionSetModeResult{ApprovalMode: ls.h.Settings().ApprovalMode}, nil
}

func (c *client) modelList(ctx context.Context) (any, error) {
	c.mu.Lock()
	model, host := c.init.Model, c.init.OllamaHost
	c.mu.Unlock()
	if model == "" {
		model = c.srv.rt.Options().Model
	}
	if host == "" {
		host = c.srv.rt.Options().OllamaHost
	}
	mc, err := c.srv.rt.Options().Models(host, model)
	if err != nil {
		return nil, err
	}
	models, err := mc.ListModels(ctx)
	if err != nil {
		return nil, modelFailure(err)
	}
	out := rpc.ModelListResult{Models: []rpc.ModelInfo{}, Default: model}
	for _, m := range models {
		out.Models = append(out.Models, rpc.ModelInfo{Name: m.Name, SizeBytes: m.Size, ParameterSize: m.ParameterSize})
	}
	return out, nil
}

func (c *client) grantList(params []byte) (any, error) {
	var p rpc.GrantListParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	out := rpc.GrantListResult{Grants: []rpc.Grant{}}
	for _, g := range ls.h.Policy.Grants().List() {
		out.Grants = append(out.Grants, rpc.Grant{ID: g.ID, Scope: ls.scopeOf(g)})
	}
	return out, nil
}

func (c *client) grantRevoke(params []byte) (any, error) {
	var p rpc.GrantRevokeParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	return rpc.GrantRevokeResult{Revoked: ls.h.Policy.Grants().Revoke(p.GrantID)}, nil
}

func (c *client) daemonStatus(ctx context.Context, params []byte) (any, error) {
	var p rpc.DaemonStatusParams
	if len(params) > 0 && string(params) != "null" {
		if err := rpc.DecodeStrict(params, &p); err != nil {
			return nil, err
		}
	}
	rt := c.srv.rt
	completionModel, _, _ := c.completionModel()
	res := rpc.DaemonStatusResult{Version: rt.Options().Version, Sandbox: rt.SandboxSummary(), Sessions: c.srv.Sessions(), Ollama: "ok",
		CompletionModel: completionModel, Engine: rt.Options().EngineSummary()}
	c.mu.Lock()
	host, model := c.init.OllamaHost, c.init.Model
	c.mu.Unlock()
	if host == "" {
		host = rt.Options().OllamaHost
	}
	if p.Model != "" {
		model = p.Model
	}
	if model == "" {
		model = rt.Options().Model
	}
	mc, err := rt.Options().Models(host, model)
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if _, err = mc.Version(ctx); err == nil {
			res.Model = modelStatus(ctx, mc, model)
		}
	}
	if err != nil {
		res.Ollama = modelFailure(err).Error()
	}
	return res, nil
}

// modelStatus is daemon/status's model field: "ok" when Ollama has the model, else that it is
// not pulled, the fix and the models there are, so an editor can say so before the first prompt.
func modelStatus(ctx context.Context, mc harness.ModelClient, model string) string {
	list, err := mc.ListModels(ctx)
	if err != nil {
		return fmt.Sprintf("could not list Ollama's models: %v", err)
	}
	names := make([]string, 0, len(list))
	for _, m := range list {
		if m.Name == model || m.Name == model+":latest" {
			return "ok"
		}
		names = append(names, m.Name)
	}
	have := "Ollama has no models yet"
	if len(names) > 0 {
		have = "Ollama has: " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("model %s is not pulled — run `ollama pull %s`, or pick another model (%s)", model, model, have)
}

// requestHandler serves a client→server request of rpc.Methods.
type requestHandler func(c *client, ctx context.Context, params json.RawMessage) (any, error)

// notificationHandler serves a client→server notification of rpc.Methods. It must not block for
// long: notifications are handled one at a time, in wire order.
type notificationHandler func(c *client, ctx context.Context, params json.RawMessage) error

// requestHandlers and notificationHandlers are the daemon's dispatch: Call and Notify serve
// exactly these methods. daemon/dispatch_test.go checks them against rpc.Methods both ways.
var requestHandlers = map[string]requestHandler{
	rpc.MethodInitialize: func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.initialize(p) },
	rpc.MethodShutdown: func(c *client, _ context.Context, _ json.RawMessage) (any, error) {
		c.mu.Lock()
		c.shutdown = true
		c.mu.Unlock()
		return nil, nil
	},
	rpc.MethodSessionNew:     func(c *client, ctx context.Context, p json.RawMessage) (any, error) { return c.sessionNew(ctx, p) },
	rpc.MethodSessionList:    func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.sessionList(p) },
	rpc.MethodSessionAttach:  func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.sessionAttach(p) },
	rpc.MethodSessionDetach:  func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.sessionDetach(p) },
	rpc.MethodSessionPrompt:  func(c *client, ctx context.Context, p json.RawMessage) (any, error) { return c.sessionPrompt(ctx, p) },
	rpc.MethodSessionSteer:   func(c *client, ctx context.Context, p json.RawMessage) (any, error) { return c.sessionSteer(ctx, p) },
	rpc.MethodSessionCancel:  func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.sessionCancel(p) },
	rpc.MethodSessionRevert:  func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.sessionRevert(p) },
	rpc.MethodSessionFork:    func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.sessionFork(p) },
	rpc.MethodSessionRewind:  func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.sessionRewind(p) },
	rpc.MethodSessionSetMode: func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.sessionSetMode(p) },
	rpc.MethodModelList:      func(c *client, ctx context.Context, _ json.RawMessage) (any, error) { return c.modelList(ctx) },
	rpc.MethodReviewDecide:   func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.reviewDecide(p) },
	rpc.MethodReviewList:     func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.reviewList(p) },
	rpc.MethodGrantList:      func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.grantList(p) },
	rpc.MethodGrantRevoke:    func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.grantRevoke(p) },
	rpc.MethodDaemonStatus:   func(c *client, ctx context.Context, p json.RawMessage) (any, error) { return c.daemonStatus(ctx, p) },
	rpc.MethodTurnList:       func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.turnList(p) },
	rpc.MethodTurnChanges:    func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.turnChanges(p) },
	rpc.MethodTurnUndo:       func(c *client, ctx context.Context, p json.RawMessage) (any, error) { return c.turnUndo(ctx, p) },
	rpc.MethodMCPProposals:   func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.mcpProposals(p) },
	rpc.MethodMCPApprove:     func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.mcpApprove(p) },

	// Inline completion from the completion model (completion.go).
	rpc.MethodInlineCompletion: func(c *client, ctx context.Context, p json.RawMessage) (any, error) {
		return c.inlineCompletion(ctx, p)
	},

	// Per-hunk decisions before a file review is settled (reviews.go).
	rpc.MethodReviewHunkState: func(c *client, _ context.Context, p json.RawMessage) (any, error) { return c.reviewHunkState(p) },
}

// ignore serves a notification agentd has nothing to do for.
func ignore(*client, context.Context, json.RawMessage) error { return nil }

var notificationHandlers = map[string]notificationHandler{
	rpc.MethodInitialized:            ignore,
	rpc.MethodSetTrace:               ignore,
	rpc.MethodDidChangeConfiguration: ignore,
	rpc.MethodDidSave:                ignore,
	rpc.MethodExit: func(c *client, _ context.Context, _ json.RawMessage) error {
		c.exitNotification()
		return nil
	},
	rpc.MethodDidOpen:                   func(c *client, _ context.Context, p json.RawMessage) error { return c.didOpen(p) },
	rpc.MethodDidChange:                 func(c *client, _ context.Context, p json.RawMessage) error { return c.didChange(p) },
	rpc.MethodDidClose:                  func(c *client, _ context.Context, p json.RawMessage) error { return c.didClose(p) },
	rpc.MethodDidChangeWorkspaceFolders: func(c *client, _ context.Context, p json.RawMessage) error { return c.didChangeFolders(p) },
	rpc.MethodWorkDoneProgressCancel: func(c *client, _ context.Context, p json.RawMessage) error {
		c.cancelProgress(p)
		return nil
	},
}
