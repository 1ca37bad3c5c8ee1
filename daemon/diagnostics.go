package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools"
)

// editorDiagnostics asks an editor that declared `diagnostics` for a file's problems
// (document/diagnostics): the editor that has the file open, else one whose workspace folders
// hold it. Editors that did not declare it are never asked.
type editorDiagnostics struct{ srv *Server }

// maxDiagnostics caps how many diagnostics of one answer are read (the rest are dropped).
const maxDiagnostics = 200

func (e editorDiagnostics) Diagnostics(ctx context.Context, abs string, settle time.Duration) ([]harness.Diagnostic, bool, error) {
	key := tools.Canonical(abs)
	params := rpc.DocumentDiagnosticsParams{URI: fileURI(key), SettleMs: int(settle / time.Millisecond)}
	var c *client
	if doc, open := e.srv.overlay.get(key); open {
		params.URI, params.Version = doc.uri, doc.version
		if doc.owner.offersDiagnostics() {
			c = doc.owner
		}
	}
	if c == nil {
		c = e.srv.diagnosticsClientFor(key)
	}
	if c == nil {
		return nil, false, nil
	}
	var res rpc.DocumentDiagnosticsResult
	if err := c.conn.Call(ctx, rpc.MethodDocumentDiagnostics, params, &res); err != nil {
		return nil, false, err
	}
	ds := res.Diagnostics
	if len(ds) > maxDiagnostics {
		ds = ds[:maxDiagnostics]
	}
	out := make([]harness.Diagnostic, 0, len(ds))
	for _, d := range ds {
		out = append(out, harness.Diagnostic{Line: max(d.Line, 0), Character: max(d.Character, 0),
			Severity: d.Severity, Message: d.Message, Source: d.Source})
	}
	return out, true, nil
}

var _ harness.DiagnosticsOffer = editorDiagnostics{}

// OffersDiagnostics says whether Diagnostics would ask an editor about the file at abs (no I/O):
// when none would, the harness does not ask.
func (e editorDiagnostics) OffersDiagnostics(abs string) bool {
	key := tools.Canonical(abs)
	if doc, open := e.srv.overlay.get(key); open && doc.owner.offersDiagnostics() {
		return true
	}
	return e.srv.diagnosticsClientFor(key) != nil
}

func (c *client) offersDiagnostics() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.init.Diagnostics && !c.shutdown
}

// diagnosticsClientFor returns an editor offering diagnostics whose workspace folders hold the
// file at path (canonical), or nil.
func (s *Server) diagnosticsClientFor(path string) *client {
	for _, c := range s.connectedClients() {
		if !c.offersDiagnostics() {
			continue
		}
		c.mu.Lock()
		folders := c.folders
		c.mu.Unlock()
		for _, f := range folders {
			if rel, err := filepath.Rel(f, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return c
			}
		}
	}
	return nil
}
