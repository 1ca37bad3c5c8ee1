package harness

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/tools"
)

// writeTool is a tool whose calls write the given paths.
type writeTool struct{ paths []string }

func (writeTool) Name() string        { return "write" }
func (writeTool) Description() string { return "" }
func (writeTool) Spec() *tools.Spec   { return nil }
func (writeTool) Execute(context.Context, *tools.Call) (tools.Output, error) {
	return tools.Output{}, nil
}
func (w writeTool) Permission(*tools.Call) tools.Permission {
	return tools.Permission{Access: tools.AccessWrite, Paths: w.paths}
}

// offeringEditor offers diagnostics for the paths in offers only, and records what it was asked.
type offeringEditor struct {
	offers map[string]bool
	after  []Diagnostic

	mu    sync.Mutex
	asked []string
}

func (e *offeringEditor) OffersDiagnostics(abs string) bool { return e.offers[abs] }

func (e *offeringEditor) Diagnostics(ctx context.Context, abs string, settle time.Duration) ([]Diagnostic, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, abs)
	if !e.offers[abs] {
		return nil, false, nil
	}
	if settle > 0 { // after the edit
		return e.after, true, nil
	}
	return nil, true, nil
}

func (e *offeringEditor) askedPaths() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.asked)
}

func runDiagnosticsMiddleware(t *testing.T, ed *offeringEditor, root string, paths ...string) tools.Output {
	t.Helper()
	h := &Harness{diags: ed, ws: &workspace{root: root}}
	ran := false
	exec := h.diagnosticsMiddleware(func(ctx context.Context, tl tools.Tool, call *tools.Call) (tools.Output, error) {
		ran = true
		return tools.Output{Text: "written"}, nil
	})
	out, err := exec(context.Background(), writeTool{paths}, &tools.Call{ID: "c1", Name: "write"})
	if err != nil || !ran {
		t.Fatalf("the write did not run through the middleware: ran %v, err %v", ran, err)
	}
	return out
}

// No editor offers diagnostics: the edit runs without asking anyone (no goroutine, no timer).
func TestDiagnosticsNotAskedWhenNoEditorOffersThem(t *testing.T) {
	root := t.TempDir()
	ed := &offeringEditor{}
	out := runDiagnosticsMiddleware(t, ed, root, filepath.Join(root, "a.go"), filepath.Join(root, "b.go"))
	if asked := ed.askedPaths(); len(asked) != 0 {
		t.Fatalf("asked for diagnostics nobody offers: %q", asked)
	}
	if out.Text != "written" {
		t.Fatalf("result changed: %q", out.Text)
	}
}

// Only the files an editor offers diagnostics for are asked about, before and after the edit, and
// their new problems reach the result.
func TestDiagnosticsAskedOnlyForOfferedFiles(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a.go"), filepath.Join(root, "b.go")
	ed := &offeringEditor{offers: map[string]bool{b: true},
		after: []Diagnostic{{Line: 2, Severity: SeverityError, Message: "undefined: x", Source: "compiler"}}}
	out := runDiagnosticsMiddleware(t, ed, root, a, b)
	if asked := ed.askedPaths(); !slices.Equal(asked, []string{b, b}) {
		t.Fatalf("asked about %q, want b.go before and after the edit", asked)
	}
	if !strings.Contains(out.Text, "b.go:3: undefined: x (compiler)") {
		t.Fatalf("the new problem is not in the result: %q", out.Text)
	}
}
