package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools/mcp"
)

// ProtocolVersion is the ACP version agentd speaks.
const ProtocolVersion = 1

// Options configure the ACP agent.
type Options struct {
	// Version is agentd's version, for agentInfo.
	Version string
	// ClientTimeout bounds each fs/* request to the client (0: 30 s). Permission requests wait
	// as long as the turn lives.
	ClientTimeout time.Duration
}

// Serve runs the ACP agent on r and w until r ends (the client closed stdin) or ctx ends. Every
// running turn is then cancelled and every session closed, so the journals are complete.
func Serve(ctx context.Context, rt *Runtime, r io.Reader, w io.Writer, opts Options) error {
	if opts.ClientTimeout == 0 {
		opts.ClientTimeout = 30 * time.Second
	}
	s := &server{rt: rt, c: newConn(w), opts: opts, sessions: map[string]*session{}}
	done := make(chan error, 1)
	go func() {
		done <- readLines(r, s.handleLine, func() {
			s.c.replyError(nil, errorf(codeParse, "a message longer than %d bytes", maxLine))
		})
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
	}
	s.shutdown()
	return err
}

type server struct {
	rt   *Runtime
	c    *conn
	opts Options

	mu          sync.Mutex
	initialized bool
	fsRead      bool
	fsWrite     bool
	sessions    map[string]*session
	down        bool
	wg          sync.WaitGroup // prompts waiting for their turn's end
}

// shutdown cancels every turn, closes every session (the journal is synced) and fails the
// requests to the client.
func (s *server) shutdown() {
	s.mu.Lock()
	s.down = true
	list := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		list = append(list, ss)
	}
	s.mu.Unlock()
	s.c.close()
	for _, ss := range list {
		ss.close()
	}
	s.wg.Wait()
}

func (s *server) handleLine(line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
		msg := "not a JSON-RPC 2.0 message"
		if err != nil {
			msg = "the line is not JSON: " + err.Error()
		}
		var id json.RawMessage
		if err == nil && len(m.ID) > 0 {
			id = m.ID
			s.c.replyError(id, errorf(codeInvalidRequest, "%s", msg))
			return
		}
		s.c.replyError(nil, errorf(codeParse, "%s", msg))
		return
	}
	switch {
	case m.Method == "" && len(m.ID) > 0:
		s.c.deliver(m) // a response to one of our requests
	case m.Method == "":
		s.c.replyError(nil, errorf(codeInvalidRequest, "a message with neither a method nor an id"))
	case len(m.ID) == 0 || string(m.ID) == "null":
		s.notification(m)
	default:
		res, rerr := s.request(m)
		if rerr != nil {
			s.c.replyError(m.ID, rerr)
		} else if a, ok := res.(afterReply); ok {
			s.c.reply(m.ID, a.result)
			a.then()
		} else if res != deferred {
			s.c.reply(m.ID, res)
		}
	}
}

// afterReply is a result with something to send once the client has it (notes about a session
// the client cannot name before the session/new response).
type afterReply struct {
	result any
	then   func()
}

// deferred is the result of a request answered later (session/prompt, at turn end).
var deferred = &struct{ deferred bool }{}

func (s *server) request(m message) (any, *rpcError) {
	if m.Method == "initialize" {
		return s.initialize(m.Params)
	}
	s.mu.Lock()
	ok := s.initialized
	s.mu.Unlock()
	if !ok {
		if _, known := methods[m.Method]; known {
			return nil, errorf(codeInvalidRequest, "%s before initialize: send initialize first", m.Method)
		}
	}
	switch m.Method {
	case "session/new":
		return s.newSession(m.Params)
	case "session/load":
		return s.resumeSession(m.Params, m.Method, true)
	case "session/resume":
		return s.resumeSession(m.Params, m.Method, false)
	case "session/list":
		return s.listSessions(m.Params)
	case "session/fork":
		return s.forkSession(m.Params)
	case "session/close":
		return s.closeSession(m.Params)
	case "session/set_config_option":
		return s.setConfigOption(m.Params)
	case "session/prompt":
		return s.prompt(m.ID, m.Params)
	case "session/set_mode":
		return s.setMode(m.Params)
	case "authenticate":
		return struct{}{}, nil // no authentication: a local model
	}
	return nil, errorf(codeMethodNotFound, "method not found: %s", m.Method)
}

// methods are the requests and notifications agentd answers.
var methods = map[string]struct{}{"session/new": {}, "session/load": {}, "session/prompt": {},
	"session/set_mode": {}, "session/cancel": {}, "authenticate": {}, "session/resume": {}, "session/list": {},
	"session/fork": {}, "session/close": {}, "session/set_config_option": {}}

func (s *server) notification(m message) {
	switch m.Method {
	case "session/cancel":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			slog.Warn("acp: session/cancel with bad params", "err", err)
			return
		}
		if ss := s.session(p.SessionID); ss != nil {
			ss.cancel()
		}
	default:
		slog.Debug("acp: ignoring notification", "method", m.Method)
	}
}

func decode(params json.RawMessage, v any) *rpcError {
	if len(params) == 0 {
		return errorf(codeInvalidParams, "missing params")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return errorf(codeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

func (s *server) initialize(params json.RawMessage) (any, *rpcError) {
	var p struct {
		ProtocolVersion    *int `json:"protocolVersion"`
		ClientCapabilities struct {
			FS struct {
				ReadTextFile  bool `json:"readTextFile"`
				WriteTextFile bool `json:"writeTextFile"`
			} `json:"fs"`
		} `json:"clientCapabilities"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.ProtocolVersion == nil {
		return nil, errorf(codeInvalidParams, "initialize needs protocolVersion")
	}
	s.mu.Lock()
	s.initialized = true
	s.fsRead, s.fsWrite = p.ClientCapabilities.FS.ReadTextFile, p.ClientCapabilities.FS.WriteTextFile
	s.mu.Unlock()
	// A client of another version gets ours; it disconnects if it cannot speak it.
	return map[string]any{
		"protocolVersion": ProtocolVersion,
		"agentCapabilities": map[string]any{
			"loadSession":        true,
			"promptCapabilities": map[string]any{"image": false, "audio": false, "embeddedContext": true},
			"mcpCapabilities":    map[string]any{"http": true, "sse": false},
			// fork is unstable in schema 1.21; list, resume and close are stable.
			"sessionCapabilities": map[string]any{"list": map[string]any{}, "resume": map[string]any{},
				"close": map[string]any{}, "fork": map[string]any{}},
		},
		"authMethods": []any{},
		"agentInfo":   map[string]any{"name": "agentd", "title": "agentd", "version": s.opts.Version},
	}, nil
}

func (s *server) session(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

func (s *server) files() *clientFiles {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.fsRead && !s.fsWrite {
		return nil
	}
	return &clientFiles{c: s.c, read: s.fsRead, write: s.fsWrite, requestLimit: s.opts.ClientTimeout}
}

func modeState(current string) map[string]any {
	avail := make([]map[string]any, 0, len(modes))
	for _, m := range modes {
		avail = append(avail, map[string]any{"id": m.id, "name": m.name, "description": m.description})
	}
	return map[string]any{"currentModeId": current, "availableModes": avail}
}

func (s *server) newSession(params json.RawMessage) (any, *rpcError) {
	var p struct {
		Cwd        string            `json:"cwd"`
		McpServers []json.RawMessage `json:"mcpServers"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(p.Cwd) {
		return nil, errorf(codeInvalidParams, "cwd must be an absolute path, got %q", p.Cwd)
	}
	servers, notes := clientMCP(p.McpServers)
	ss, err := s.open(openSpec{Workspace: p.Cwd, MCPServers: servers})
	if err != nil {
		return nil, err
	}
	return ss.withMCPNotes(ss.state(map[string]any{"sessionId": ss.id}), servers, notes), nil
}

// withMCPNotes sends, after the result, one agent_message_chunk per client MCP server that gives the
// session no tools (also logged): the session starts without them.
func (ss *session) withMCPNotes(result any, servers []mcp.ServerConfig, notes []string) any {
	if len(servers) == 0 && len(notes) == 0 {
		return result
	}
	notes = append(notes, ss.o.mcpProblems(servers)...)
	if len(notes) == 0 {
		return result
	}
	return afterReply{result: result, then: func() {
		for _, n := range notes {
			slog.Warn("acp: "+n, "session", ss.id)
			ss.update(chunk("agent_message_chunk", n+"\n"))
		}
	}}
}

// open opens a session's harness and starts its loop.
func (s *server) open(spec openSpec) (*session, *rpcError) {
	files := s.files()
	spec.Overlay = files
	ss := &session{srv: s}
	o, err := openSession(s.rt, spec, ss.ask)
	if err != nil {
		if notFound(err) {
			return nil, errorf(codeInvalidParams, "unknown session %s", spec.ID)
		}
		return nil, errorf(codeInternal, "%v", err)
	}
	ss.o, ss.id = o, o.id()
	if files != nil {
		files.setSession(ss.id)
	}
	// The loop starts now, so a model server that is down fails the request that opens the
	// session, with the fix.
	if err := o.start(context.Background()); err != nil {
		o.close()
		return nil, setupError(err)
	}
	ss.detach = o.watch(ss.event)
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		ss.close()
		return nil, errorf(codeInternal, "shutting down")
	}
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	return ss, nil
}

func (s *server) setMode(params json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModeID    string `json:"modeId"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	ss := s.session(p.SessionID)
	if ss == nil {
		return nil, errorf(codeInvalidParams, "unknown session %s", p.SessionID)
	}
	if rerr := ss.setMode(p.ModeID); rerr != nil {
		return nil, rerr
	}
	return struct{}{}, nil
}

func (s *server) prompt(id json.RawMessage, params json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID string            `json:"sessionId"`
		Prompt    []json.RawMessage `json:"prompt"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	ss := s.session(p.SessionID)
	if ss == nil {
		return nil, errorf(codeInvalidParams, "unknown session %s", p.SessionID)
	}
	text, rerr := promptText(p.Prompt)
	if rerr != nil {
		return nil, rerr
	}
	t, rerr := ss.begin(text)
	if rerr != nil {
		return nil, rerr
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		end := <-t.end
		if end.err != nil {
			s.c.replyError(id, end.err)
			return
		}
		s.c.reply(id, map[string]any{"stopReason": end.stop})
	}()
	return deferred, nil
}

// promptText turns ACP content blocks into the user's message: text as is, resource links as
// mentions of the file, embedded resources as the file's text in a fenced block.
func promptText(blocks []json.RawMessage) (string, *rpcError) {
	var parts []string
	for i, raw := range blocks {
		var b struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			URI      string `json:"uri"`
			Name     string `json:"name"`
			Resource *struct {
				URI  string  `json:"uri"`
				Text *string `json:"text"`
				Blob *string `json:"blob"`
			} `json:"resource"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", errorf(codeInvalidParams, "prompt[%d]: %v", i, err)
		}
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "resource_link":
			if b.URI == "" {
				return "", errorf(codeInvalidParams, "prompt[%d]: a resource_link needs a uri", i)
			}
			parts = append(parts, "@"+displayURI(b.URI))
		case "resource":
			if b.Resource == nil || b.Resource.URI == "" {
				return "", errorf(codeInvalidParams, "prompt[%d]: a resource needs resource.uri", i)
			}
			if b.Resource.Text == nil {
				return "", errorf(codeInvalidParams, "prompt[%d]: binary resources are not supported (only text)", i)
			}
			body := *b.Resource.Text
			fence := "```"
			for strings.Contains(body, fence) {
				fence += "`"
			}
			parts = append(parts, fmt.Sprintf("Context from %s (as the editor has it):\n%s\n%s\n%s", displayURI(b.Resource.URI), fence, strings.TrimRight(body, "\n"), fence))
		case "image", "audio":
			return "", errorf(codeInvalidParams, "prompt[%d]: %s content is not supported (promptCapabilities.%s is false)", i, b.Type, b.Type)
		default:
			return "", errorf(codeInvalidParams, "prompt[%d]: unknown content type %q", i, b.Type)
		}
	}
	text := strings.TrimSpace(strings.Join(parts, "\n\n"))
	if text == "" {
		return "", errorf(codeInvalidParams, "the prompt is empty")
	}
	return text, nil
}

// displayURI is a file URI's path, other URIs as they are.
func displayURI(u string) string {
	if pu, err := url.Parse(u); err == nil && pu.Scheme == "file" {
		return pu.Path
	}
	return u
}

func describeErr(err error) string {
	var me *agent.ModelError
	if errors.As(err, &me) {
		if me.Fix != "" {
			return me.Message + " (fix: " + me.Fix + ")"
		}
		return me.Message
	}
	return err.Error()
}
