// Package daemon is agentd's editor daemon: it serves editor connections over JSON-RPC (LSP base
// protocol), keeps sessions that outlive connections, holds the overlay of open documents, and
// turns tool previews into reviews the editors answer — the editor is the approval gate.
//
// Layout: server.go (connections, lifecycle, document sync), live.go (sessions and their update
// stream), reviews.go (the editor gate), writer.go (edits through workspace/applyEdit),
// runtime.go and gate.go (session building and policy, shared with `agentd run`).
package daemon

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"sync"

	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools"
	"go.lsp.dev/protocol"
)

// Server serves editor connections. Sessions live in the server, not in a connection: several
// editors may attach to one session, and a session outlives the editor that created it.
type Server struct {
	rt *Runtime

	mu       sync.Mutex
	clients  map[*client]bool
	sessions map[string]*liveSession // live (loaded) sessions by ID
	reviews  map[string]*review      // pending and recently resolved reviews by ID
	nextID   int
	closing  bool
}

// NewServer makes a server over a runtime.
func NewServer(rt *Runtime) *Server {
	return &Server{rt: rt, clients: map[*client]bool{}, sessions: map[string]*liveSession{}, reviews: map[string]*review{}}
}

// Runtime returns the server's runtime.
func (s *Server) Runtime() *Runtime { return s.rt }

// ServeConn serves one editor connection until it ends. The daemon survives a client that
// vanishes mid-request.
func (s *Server) ServeConn(rwc io.ReadWriteCloser) {
	c := &client{srv: s, attached: map[string]*liveSession{}}
	c.conn = rpc.NewConn(rwc)
	c.out = newOutbox(c)
	s.mu.Lock()
	s.clients[c] = true
	s.mu.Unlock()
	c.conn.Go(c)
	<-c.conn.Done()
	c.gone()
}

// Shutdown stops every session and closes the stores.
func (s *Server) Shutdown() {
	s.mu.Lock()
	s.closing = true
	sessions := make([]*liveSession, 0, len(s.sessions))
	for _, ls := range s.sessions {
		sessions = append(sessions, ls)
	}
	s.mu.Unlock()
	for _, ls := range sessions {
		ls.close()
	}
}

// Sessions counts the live sessions.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// client is one editor connection.
type client struct {
	srv  *Server
	conn *rpc.Conn
	out  *outbox

	mu          sync.Mutex
	init        rpc.InitializationOptions
	folders     []string // canonical absolute workspace roots
	initialized bool
	shutdown    bool
	attached    map[string]*liveSession
}

func (c *client) reviews() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.init.Reviews && !c.shutdown
}

// gone cleans up after the connection ended: the client detaches from its sessions (reviews that
// only it could answer are rejected) and its documents leave the overlay.
func (c *client) gone() {
	c.out.close()
	c.mu.Lock()
	attached := c.attached
	c.attached = map[string]*liveSession{}
	c.mu.Unlock()
	for _, ls := range attached {
		ls.detach(c)
	}
	c.srv.rt.overlay.dropClient(c)
	c.srv.mu.Lock()
	delete(c.srv.clients, c)
	c.srv.mu.Unlock()
}

// Notify handles notifications in wire order.
func (c *client) Notify(ctx context.Context, method string, params json.RawMessage) {
	var err error
	switch method {
	case "initialized", "$/setTrace", "workspace/didChangeConfiguration":
	case "exit":
		// Close waits for handlers, this one included: close from another goroutine.
		go c.conn.Close()
	case "textDocument/didOpen":
		err = c.didOpen(params)
	case "textDocument/didChange":
		err = c.didChange(params)
	case "textDocument/didClose":
		err = c.didClose(params)
	case "textDocument/didSave":
	case "workspace/didChangeWorkspaceFolders":
		err = c.didChangeFolders(params)
	case "window/workDoneProgress/cancel":
		c.cancelProgress(params)
	default:
		slog.Debug("ignored notification", "method", method)
	}
	if err != nil {
		slog.Warn("notification failed", "method", method, "err", err)
	}
}

// Call handles requests concurrently.
func (c *client) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == "initialize" {
		return c.initialize(params)
	}
	c.mu.Lock()
	initialized, shutdown := c.initialized, c.shutdown
	c.mu.Unlock()
	if !initialized {
		return nil, rpc.Errorf(rpc.CodeServerNotInitialized, "send initialize first")
	}
	if shutdown && method != "shutdown" {
		return nil, rpc.Errorf(rpc.CodeServerNotInitialized, "the connection is shutting down")
	}
	switch method {
	case "shutdown":
		c.mu.Lock()
		c.shutdown = true
		c.mu.Unlock()
		return nil, nil
	case rpc.MethodSessionNew:
		return c.sessionNew(ctx, params)
	case rpc.MethodSessionList:
		return c.sessionList(params)
	case rpc.MethodSessionAttach:
		return c.sessionAttach(params)
	case rpc.MethodSessionDetach:
		return c.sessionDetach(params)
	case rpc.MethodSessionPrompt:
		return c.sessionPrompt(ctx, params)
	case rpc.MethodSessionSteer:
		return c.sessionSteer(ctx, params)
	case rpc.MethodSessionCancel:
		return c.sessionCancel(params)
	case rpc.MethodSessionRevert:
		return c.sessionRevert(params)
	case rpc.MethodSessionSetMode:
		return c.sessionSetMode(params)
	case rpc.MethodModelList:
		return c.modelList(ctx)
	case rpc.MethodReviewDecide:
		return c.reviewDecide(params)
	case rpc.MethodReviewList:
		return c.reviewList(params)
	case rpc.MethodGrantList:
		return c.grantList(params)
	case rpc.MethodGrantRevoke:
		return c.grantRevoke(params)
	case rpc.MethodDaemonStatus:
		return c.daemonStatus(ctx)
	}
	return nil, rpc.ErrMethodNotFound
}

func (c *client) initialize(params json.RawMessage) (any, error) {
	var p struct {
		RootURI               string                     `json:"rootUri"`
		WorkspaceFolders      []protocol.WorkspaceFolder `json:"workspaceFolders"`
		InitializationOptions json.RawMessage            `json:"initializationOptions"`
	}
	if err := json.Unmarshal(orEmpty(params), &p); err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid initialize params: %v", err)
	}
	var opts rpc.InitializationOptions
	if len(p.InitializationOptions) > 0 && string(p.InitializationOptions) != "null" {
		if err := json.Unmarshal(p.InitializationOptions, &opts); err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid initializationOptions: %v", err)
		}
	}
	var folders []string
	for _, f := range p.WorkspaceFolders {
		if dir, ok := fileURIPath(string(f.URI)); ok {
			folders = append(folders, tools.Canonical(dir))
		}
	}
	if len(folders) == 0 && p.RootURI != "" {
		if dir, ok := fileURIPath(p.RootURI); ok {
			folders = append(folders, tools.Canonical(dir))
		}
	}
	c.mu.Lock()
	c.init, c.folders, c.initialized = opts, folders, true
	c.mu.Unlock()
	return map[string]any{
		"capabilities": map[string]any{
			"textDocumentSync": map[string]any{"openClose": true, "change": 2, "save": map[string]any{"includeText": false}},
			"workspace":        map[string]any{"workspaceFolders": map[string]any{"supported": true, "changeNotifications": true}},
			"experimental": map[string]any{"agentd": rpc.ServerInfo{
				ProtocolVersion: rpc.ProtocolVersion, Version: c.srv.rt.opts.Version, Sandbox: c.srv.rt.sandboxSummaryNow()}},
		},
		"serverInfo": map[string]any{"name": "agentd", "version": c.srv.rt.opts.Version},
	}, nil
}

func (c *client) didChangeFolders(params json.RawMessage) error {
	var p struct {
		Event struct {
			Added   []protocol.WorkspaceFolder `json:"added"`
			Removed []protocol.WorkspaceFolder `json:"removed"`
		} `json:"event"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range p.Event.Removed {
		if dir, ok := fileURIPath(string(f.URI)); ok {
			canon := tools.Canonical(dir)
			for i, have := range c.folders {
				if have == canon {
					c.folders = append(c.folders[:i], c.folders[i+1:]...)
					break
				}
			}
		}
	}
	for _, f := range p.Event.Added {
		if dir, ok := fileURIPath(string(f.URI)); ok {
			c.folders = append(c.folders, tools.Canonical(dir))
		}
	}
	return nil
}

// docPath maps a document URI to a canonical path inside one of the connection's folders.
// untitled: documents and documents outside every folder are not files agentd works on.
func (c *client) docPath(u string) (string, bool) {
	p, ok := fileURIPath(u)
	if !ok {
		return "", false
	}
	canon := tools.Canonical(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.folders {
		if within(f, canon) {
			return canon, true
		}
	}
	return "", false
}

func (c *client) didOpen(params json.RawMessage) error {
	var p protocol.DidOpenTextDocumentParams
	if err := protocol.Unmarshal(params, &p); err != nil {
		return err
	}
	path, ok := c.docPath(string(p.TextDocument.URI))
	if !ok {
		return nil
	}
	c.srv.rt.overlay.open(path, string(p.TextDocument.URI), p.TextDocument.Version, p.TextDocument.Text, c)
	return nil
}

func (c *client) didChange(params json.RawMessage) error {
	var p protocol.DidChangeTextDocumentParams
	if err := protocol.Unmarshal(params, &p); err != nil {
		return err
	}
	path, ok := c.docPath(string(p.TextDocument.URI))
	if !ok {
		return nil
	}
	return c.srv.rt.overlay.change(path, p.TextDocument.Version, p.ContentChanges)
}

func (c *client) didClose(params json.RawMessage) error {
	var p protocol.DidCloseTextDocumentParams
	if err := protocol.Unmarshal(params, &p); err != nil {
		return err
	}
	if path, ok := c.docPath(string(p.TextDocument.URI)); ok {
		c.srv.rt.overlay.close(path, c)
	}
	return nil
}

// cancelProgress cancels the turn whose progress token the user cancelled.
func (c *client) cancelProgress(params json.RawMessage) {
	var p struct {
		Token json.RawMessage `json:"token"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	var token string
	if json.Unmarshal(p.Token, &token) != nil {
		return
	}
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	for _, ls := range c.srv.sessions {
		if ls.progressToken() == token {
			go ls.cancel()
		}
	}
}

// fileURIPath returns the local path of a file: URI.
func fileURIPath(u string) (string, bool) {
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme != "file" || (parsed.Host != "" && parsed.Host != "localhost") {
		return "", false
	}
	if parsed.Path == "" || !filepath.IsAbs(parsed.Path) {
		return "", false
	}
	return filepath.Clean(parsed.Path), true
}

// fileURI makes a file: URI of an absolute path, encoded the way VS Code encodes it.
func fileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// within reports whether path is root or inside it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && (len(rel) < 3 || rel[:3] != "../")
}

func orEmpty(p json.RawMessage) json.RawMessage {
	if len(p) == 0 || string(p) == "null" {
		return json.RawMessage("{}")
	}
	return p
}

// canonical resolves symlinks and ".." in an absolute path.
func canonical(p string) string { return tools.Canonical(p) }

// Busy reports whether a turn is running in any session.
func (s *Server) Busy() bool {
	s.mu.Lock()
	sessions := make([]*liveSession, 0, len(s.sessions))
	for _, ls := range s.sessions {
		sessions = append(sessions, ls)
	}
	s.mu.Unlock()
	for _, ls := range sessions {
		if ls.running() != "" {
			return true
		}
	}
	return false
}
