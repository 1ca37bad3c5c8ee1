package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// LSP message types (window/logMessage, window/showMessage).
const (
	msgError   = 1
	msgWarning = 2
	msgInfo    = 3
)

// LogHandler wraps a slog handler and also sends warnings and errors to every connected editor
// as window/logMessage, so they show in the editor's output panel.
type LogHandler struct {
	slog.Handler
	mu  *sync.Mutex
	srv **Server
}

// NewLogHandler wraps h. Attach a server with Attach once it exists.
func NewLogHandler(h slog.Handler) *LogHandler {
	return &LogHandler{Handler: h, mu: &sync.Mutex{}, srv: new(*Server)}
}

// Attach makes the handler forward to srv's editors.
func (l *LogHandler) Attach(srv *Server) {
	l.mu.Lock()
	*l.srv = srv
	l.mu.Unlock()
}

func (l *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	err := l.Handler.Handle(ctx, r)
	if r.Level < slog.LevelWarn {
		return err
	}
	l.mu.Lock()
	srv := *l.srv
	l.mu.Unlock()
	if srv == nil {
		return err
	}
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	typ := msgWarning
	if r.Level >= slog.LevelError {
		typ = msgError
	}
	srv.broadcastAll("window/logMessage", map[string]any{"type": typ, "message": b.String()})
	return err
}

func (l *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogHandler{Handler: l.Handler.WithAttrs(attrs), mu: l.mu, srv: l.srv}
}

func (l *LogHandler) WithGroup(name string) slog.Handler {
	return &LogHandler{Handler: l.Handler.WithGroup(name), mu: l.mu, srv: l.srv}
}

// connectedClients returns the connected editors, read under the server's lock.
func (s *Server) connectedClients() []*client {
	s.mu.Lock()
	defer s.mu.Unlock()
	clients := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		clients = append(clients, c)
	}
	return clients
}

// broadcastAll sends a notification to every connected editor.
func (s *Server) broadcastAll(method string, params any) {
	for _, c := range s.connectedClients() {
		c.out.pushRaw(method, params)
	}
}
