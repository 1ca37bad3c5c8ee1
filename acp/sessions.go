package acp

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sort"
	"time"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/tools/mcp"
)

// The session methods clients call besides new, load and prompt: list, resume, fork, close, and
// the session's configuration (approval mode and model) as config options.

// listSessions answers session/list: every stored session (made by `agentd run`, the editors or
// ACP), newest first, optionally of one working directory.
func (s *server) listSessions(params json.RawMessage) (any, *rpcError) {
	var p struct {
		Cwd *string `json:"cwd"`
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, errorf(codeInvalidParams, "invalid params: %v", err)
		}
	}
	filter := ""
	if p.Cwd != nil && *p.Cwd != "" {
		if !filepath.IsAbs(*p.Cwd) {
			return nil, errorf(codeInvalidParams, "cwd must be an absolute path, got %q", *p.Cwd)
		}
		filter = harness.CanonicalDir(*p.Cwd)
	}
	list, err := s.rt.Sessions()
	if err != nil {
		return nil, errorf(codeInternal, "%v", err)
	}
	out := []map[string]any{}
	for _, l := range list {
		if filter != "" && l.Workspace != filter {
			continue
		}
		out = append(out, map[string]any{"sessionId": l.ID, "cwd": l.Workspace, "title": l.Title,
			"updatedAt": l.Updated.UTC().Format(time.RFC3339)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i]["updatedAt"].(string) > out[j]["updatedAt"].(string) })
	return map[string]any{"sessions": out}, nil
}

// sessionParams are the params of session/load, session/resume and session/fork.
type sessionParams struct {
	SessionID  string            `json:"sessionId"`
	Cwd        string            `json:"cwd"`
	McpServers []json.RawMessage `json:"mcpServers"`
}

// resumeSession answers session/load (replay: the history is sent as session/update before the
// answer) and session/resume (no replay).
func (s *server) resumeSession(params json.RawMessage, method string, replay bool) (any, *rpcError) {
	var p sessionParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, errorf(codeInvalidParams, "%s needs a sessionId", method)
	}
	var notes []string
	var servers []mcp.ServerConfig
	ss := s.session(p.SessionID)
	if ss == nil {
		servers, notes = clientMCP(p.McpServers)
		var rerr *rpcError
		if ss, rerr = s.open(openSpec{ID: p.SessionID, MCPServers: servers}); rerr != nil {
			return nil, rerr
		}
	} else if len(p.McpServers) > 0 {
		// Open here already: it keeps the servers it started with.
		slog.Debug("acp: an open session keeps its MCP servers; the client's are not started again", "session", p.SessionID, "method", method)
	}
	if ss.running() {
		return nil, errorf(codeInvalidRequest, "a turn is running in session %s", p.SessionID)
	}
	if replay {
		ss.replay()
	}
	return ss.withMCPNotes(ss.state(nil), servers, notes), nil
}

// forkSession answers session/fork (unstable in schema 1.21): a copy of the session under a new
// ID, opened; the original is left as it is.
func (s *server) forkSession(params json.RawMessage) (any, *rpcError) {
	var p sessionParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, errorf(codeInvalidParams, "session/fork needs a sessionId")
	}
	if ss := s.session(p.SessionID); ss != nil && ss.running() {
		return nil, errorf(codeInvalidRequest, "a turn is running in session %s", p.SessionID)
	}
	id, err := s.rt.Fork(p.SessionID)
	if err != nil {
		if notFound(err) {
			return nil, errorf(codeResourceNotFound, "unknown session %s", p.SessionID)
		}
		return nil, errorf(codeInternal, "%v", err)
	}
	servers, notes := clientMCP(p.McpServers)
	ss, rerr := s.open(openSpec{ID: id, MCPServers: servers})
	if rerr != nil {
		return nil, rerr
	}
	return ss.withMCPNotes(ss.state(map[string]any{"sessionId": ss.id}), servers, notes), nil
}

// closeSession answers session/close: the session's turn is cancelled and its resources freed.
func (s *server) closeSession(params json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	ss := s.sessions[p.SessionID]
	delete(s.sessions, p.SessionID)
	s.mu.Unlock()
	if ss == nil {
		return nil, errorf(codeResourceNotFound, "unknown session %s", p.SessionID)
	}
	ss.close()
	return struct{}{}, nil
}

// state adds the session's modes and config options to a result.
func (ss *session) state(result map[string]any) map[string]any {
	if result == nil {
		result = map[string]any{}
	}
	result["modes"] = modeState(ss.o.mode())
	result["configOptions"] = ss.configOptions()
	return result
}

// configOptions are the session's settings as ACP config options: the approval mode (category
// "mode", the same values as the session modes) and the model (category "model": the models the
// model server has, and the session's).
func (ss *session) configOptions() []map[string]any {
	modeOpts := make([]map[string]any, 0, len(modes))
	for _, m := range modes {
		modeOpts = append(modeOpts, map[string]any{"value": m.id, "name": m.name, "description": m.description})
	}
	current := ss.o.model()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	names := ss.o.models(ctx)
	modelOpts := []map[string]any{{"value": current, "name": current}}
	for _, n := range names {
		if n != current {
			modelOpts = append(modelOpts, map[string]any{"value": n, "name": n})
		}
	}
	return []map[string]any{
		{"id": "mode", "name": "Approval mode", "category": "mode", "type": "select", "currentValue": ss.o.mode(), "options": modeOpts},
		{"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": current, "options": modelOpts},
	}
}

// setConfigOption answers session/set_config_option with the options as they are after it.
func (s *server) setConfigOption(params json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID string          `json:"sessionId"`
		ConfigID  string          `json:"configId"`
		Value     json.RawMessage `json:"value"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	ss := s.session(p.SessionID)
	if ss == nil {
		return nil, errorf(codeResourceNotFound, "unknown session %s", p.SessionID)
	}
	var value string
	if err := json.Unmarshal(p.Value, &value); err != nil {
		return nil, errorf(codeInvalidParams, "the value of %s must be a string", p.ConfigID)
	}
	switch p.ConfigID {
	case "mode":
		if rerr := ss.setMode(value); rerr != nil {
			return nil, rerr
		}
	case "model":
		if ss.running() {
			return nil, errorf(codeInvalidRequest, "a turn is running in session %s: the model changes between turns", ss.id)
		}
		if err := ss.o.setModel(value); err != nil {
			return nil, errorf(codeInvalidParams, "%v", err)
		}
	default:
		return nil, errorf(codeInvalidParams, "unknown config option %q: mode or model", p.ConfigID)
	}
	return map[string]any{"configOptions": ss.configOptions()}, nil
}

// setMode changes the approval mode (session/set_mode, or the "mode" config option) and tells
// the client.
func (ss *session) setMode(mode string) *rpcError {
	if !validMode(mode) {
		return errorf(codeInvalidParams, "unknown mode %q: ask, auto-edit, plan or yolo", mode)
	}
	if err := ss.o.setMode(mode); err != nil {
		return errorf(codeInternal, "%v", err)
	}
	return nil
}
