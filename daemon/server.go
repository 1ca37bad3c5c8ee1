// Package daemon is agentd's editor daemon: it serves editor connections over JSON-RPC (LSP base
// protocol), keeps sessions that outlive connections, holds the overlay of open documents, and
// turns tool previews into reviews the editors answer — the editor is the approval gate.
//
// Layout: server.go (connections, lifecycle, document sync), live.go (sessions and their update
// stream), reviews.go (the editor gate), writer.go (edits through workspace/applyEdit),
// completion.go and fim.go (inline completion), runtime.go and gate.go (session building and
// policy, shared with `agentd run`).
package daemon

import (
	"context"
	"encoding/json"
	"github.com/agentd/agentd/harness"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools"
	"go.lsp.dev/protocol"
)

// Server serves editor connections. Sessions live in the server, not in a connection: several
// editors may attach to one session, and a session outlives the editor that created it.
type Server struct {
	rt *harness.Runtime
	// overlay is the documents the editors have open; the sessions' tools read them.
	overlay *Overlay
	// reviewTimeout rejects a review nobody answered (rt's Options.ReviewTimeout; tests lower it).
	reviewTimeout time.Duration
	// completions are the inline completions running (completion.go).
	completions completions

	mu       sync.Mutex
	clients  map[*client]bool
	sessions map[string]*liveSession // live (loaded) sessions by ID
	reviews  map[string]*review      // pending and recently resolved reviews by ID
	nextID   int
	closing  bool
}

// NewServer makes a server over a runtime.
func NewServer(rt *harness.Runtime) *Server {
	return &Server{rt: rt, overlay: newOverlay(), reviewTimeout: rt.Options().ReviewTimeout, clients: map[*client]bool{}, sessions: map[string]*liveSession{}, reviews: map[string]*review{}}
}

// Runtime returns the server's runtime.
func (s *Server) Runtime() *harness.Runtime { return s.rt }

// ServeConn serves one editor connection until it ends: the peer goes away, or it sends the
// exit notification. The daemon survives a client that vanishes mid-request.
//
// After exit, ServeConn closes the transport and returns at once, without waiting for the read
// loop: a read blocked on stdin never ends while the editor keeps it open. exited reports that
// the connection ended with exit, and code is the process exit code the LSP asks for then: 0
// after shutdown, 1 without.
func (s *Server) ServeConn(rwc io.ReadWriteCloser) (code int, exited bool) {
	c := &client{srv: s, attached: map[string]*liveSession{}, exit: make(chan struct{})}
	c.conn = rpc.NewConn(rwc)
	c.out = newOutbox(c)
	s.mu.Lock()
	s.clients[c] = true
	s.mu.Unlock()
	c.conn.Go(c)
	select {
	case <-c.conn.Done():
	case <-c.exit:
	}
	// exit is handled in wire order, before the read loop can see the end of the stream: when
	// both happened, exit is already recorded here.
	select {
	case <-c.exit:
		rwc.Close()
		c.gone()
		// Handlers still running may attach again: clean up once they are done.
		go func() {
			<-c.conn.Done()
			c.gone()
		}()
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.exitCode, true
	default:
		c.gone()
		return 0, false
	}
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
	exit        chan struct{} // closed by the exit notification
	exitCode    int           // set before exit closes: 0 after shutdown, 1 without
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
	c.srv.overlay.dropClient(c)
	c.srv.mu.Lock()
	delete(c.srv.clients, c)
	c.srv.mu.Unlock()
}

// Notify handles notifications in wire order, through notificationHandlers.
func (c *client) Notify(ctx context.Context, method string, params json.RawMessage) {
	h, ok := notificationHandlers[method]
	if !ok {
		slog.Debug("ignored notification", "method", method)
		return
	}
	if err := h(c, ctx, params); err != nil {
		slog.Warn("notification failed", "method", method, "err", err)
	}
}

// exitNotification ends the connection (the exit notification).
func (c *client) exitNotification() {
	c.mu.Lock()
	select {
	case <-c.exit: // a second exit changes nothing
	default:
		c.exitCode = 1
		if c.shutdown {
			c.exitCode = 0
		}
		close(c.exit)
	}
	c.mu.Unlock()
	// Close waits for handlers, this one included: close from another goroutine.
	go c.conn.Close()
}

// Call handles requests concurrently, through requestHandlers.
func (c *client) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == rpc.MethodInitialize {
		return requestHandlers[method](c, ctx, params)
	}
	c.mu.Lock()
	initialized, shutdown := c.initialized, c.shutdown
	c.mu.Unlock()
	if !initialized {
		return nil, rpc.Errorf(rpc.CodeServerNotInitialized, "send initialize first")
	}
	if shutdown && method != rpc.MethodShutdown {
		return nil, rpc.Errorf(rpc.CodeServerNotInitialized, "the connection is shutting down")
	}
	if h, ok := requestHandlers[method]; ok {
		return h(c, ctx, params)
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
	completionModel, _, completionConfigured := c.completionModel()
	return map[string]any{
		"capabilities": map[string]any{
			"textDocumentSync":         map[string]any{"openClose": true, "change": 2, "save": map[string]any{"includeText": false}},
			"workspace":                map[string]any{"workspaceFolders": map[string]any{"supported": true, "changeNotifications": true}},
			"inlineCompletionProvider": true,
			"experimental": map[string]any{"agentd": rpc.ServerInfo{
				ProtocolVersion: rpc.ProtocolVersion, Version: c.srv.rt.Options().Version, Sandbox: c.srv.rt.SandboxSummaryNow(),
				CompletionModel: completionModel, CompletionConfigured: completionConfigured}},
		},
		"serverInfo": map[string]any{"name": "agentd", "version": c.srv.rt.Options().Version},
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
	c.srv.overlay.open(path, string(p.TextDocument.URI), p.TextDocument.Version, p.TextDocument.Text, c)
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
	return c.srv.overlay.change(path, c, p.TextDocument.Version, p.ContentChanges)
}

func (c *client) didClose(params json.RawMessage) error {
	var p protocol.DidCloseTextDocumentParams
	if err := protocol.Unmarshal(params, &p); err != nil {
		return err
	}
	if path, ok := c.docPath(string(p.TextDocument.URI)); ok {
		c.srv.overlay.close(path, c)
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
			go ls.h.Cancel()
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
		if ls.h.Running() != "" {
			return true
		}
	}
	return false
}
