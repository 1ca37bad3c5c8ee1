package harness

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools"
)

// Diagnostic is one problem an editor's language server reports in a file.
type Diagnostic struct {
	Line      int // zero-based
	Character int // zero-based
	Severity  string
	Message   string
	Source    string
}

// Diagnostic severities: only errors and warnings reach the model.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Diagnostics is an editor's view of a file's problems (the editor front end supplies it).
type Diagnostics interface {
	// Diagnostics returns the problems the editor reports for the file at abs once its language
	// server has settled (waiting at most settle; 0: what it has now). ok is false when no
	// attached editor offers diagnostics for the file: then nothing was asked. It must return
	// when ctx ends.
	Diagnostics(ctx context.Context, abs string, settle time.Duration) (diags []Diagnostic, ok bool, err error)
}

// DiagnosticsOffer is what a Diagnostics may also implement: whether some attached editor offers
// diagnostics for the file at abs right now, answered at once (no I/O, no waiting). A file nobody
// offers them for is not asked about: the edit runs without the questions, their goroutines and
// their timers.
type DiagnosticsOffer interface {
	OffersDiagnostics(abs string) bool
}

// Bounds of the diagnostics asked around an edit: they never hold the turn longer than
// diagnosticsBeforeWait + diagnosticsAfterWait per edited file.
const (
	// diagnosticsBeforeWait bounds the question before the edit (the editor answers at once).
	diagnosticsBeforeWait = time.Second
	// diagnosticsSettle is how long the editor may wait for its language server after the edit.
	diagnosticsSettle = 2500 * time.Millisecond
	// diagnosticsAfterWait is the daemon's own bound on the answer after the edit.
	diagnosticsAfterWait = 3 * time.Second
	// maxDiagnosticLines caps the lines appended to one result.
	maxDiagnosticLines = 10
	// maxDiagnosticMessage caps one message, in runes.
	maxDiagnosticMessage = 200
)

// diagnosticsMiddleware asks the editor for the diagnostics of the files a successful write
// changes, before and after it runs, and appends the new errors and warnings to the result:
// small models fix a type error much sooner when they read it right after the edit. It fails
// open: no editor, an error or a timeout add nothing.
func (h *Harness) diagnosticsMiddleware(next agent.ExecFunc) agent.ExecFunc {
	return func(ctx context.Context, t tools.Tool, call *tools.Call) (tools.Output, error) {
		if h.diags == nil {
			return next(ctx, t, call)
		}
		pm, ok := t.(tools.PermissionMetadata)
		if !ok {
			return next(ctx, t, call)
		}
		perm := pm.Permission(call)
		if perm.Access != tools.AccessWrite || len(perm.Paths) == 0 {
			return next(ctx, t, call)
		}
		paths := perm.Paths
		if o, ok := h.diags.(DiagnosticsOffer); ok {
			paths = slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return !o.OffersDiagnostics(p) })
			if len(paths) == 0 {
				return next(ctx, t, call)
			}
		}
		before := make([][]Diagnostic, len(paths))
		asked := make([]bool, len(paths))
		for i, p := range paths {
			before[i], asked[i] = h.askDiagnostics(ctx, p, 0, diagnosticsBeforeWait)
		}
		out, err := next(ctx, t, call)
		if err != nil || ctx.Err() != nil {
			return out, err
		}
		var lines []string
		for i, p := range paths {
			if !asked[i] {
				continue
			}
			after, ok := h.askDiagnostics(ctx, p, diagnosticsSettle, diagnosticsAfterWait)
			if !ok {
				continue
			}
			rel, rerr := filepath.Rel(h.ws.root, p)
			if rerr != nil {
				rel = p
			}
			lines = append(lines, diagnosticLines(filepath.ToSlash(rel), newDiagnostics(before[i], after))...)
		}
		if len(lines) == 0 {
			return out, nil
		}
		note := "\nThe editor's language server reports new problems after this change:\n" + strings.Join(capLines(lines), "\n")
		if len(out.Content) == 0 {
			out.Text += note
		} else {
			out.Content = append(append([]tools.Block(nil), out.Content...), tools.Block{Type: "text", Text: note})
		}
		return out, nil
	}
}

// capLines keeps the first maxDiagnosticLines lines and says how many were left out.
func capLines(lines []string) []string {
	if len(lines) <= maxDiagnosticLines {
		return lines
	}
	more := len(lines) - maxDiagnosticLines
	return append(lines[:maxDiagnosticLines:maxDiagnosticLines], fmt.Sprintf("… and %d more", more))
}

// askDiagnostics asks the editor with its own deadline; ok is false when nothing usable came.
func (h *Harness) askDiagnostics(ctx context.Context, abs string, settle, wait time.Duration) ([]Diagnostic, bool) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	type answer struct {
		diags []Diagnostic
		ok    bool
		err   error
	}
	// The front end must return when ctx ends; the channel also bounds one that does not.
	done := make(chan answer, 1)
	go func() {
		d, ok, err := h.diags.Diagnostics(ctx, abs, settle)
		done <- answer{d, ok, err}
	}()
	select {
	case a := <-done:
		if a.err != nil {
			slog.Debug("editor diagnostics", "path", abs, "err", a.err)
			return nil, false
		}
		return a.diags, a.ok
	case <-ctx.Done():
		slog.Debug("editor diagnostics: no answer in time", "path", abs, "wait", wait)
		return nil, false
	}
}

// newDiagnostics returns the errors and warnings of after that before did not have. Lines move
// with an edit, so a problem is the same when its severity, message and source are; each one
// before cancels one alike after.
func newDiagnostics(before, after []Diagnostic) []Diagnostic {
	type key struct{ sev, msg, src string }
	seen := map[key]int{}
	for _, d := range before {
		seen[key{d.Severity, d.Message, d.Source}]++
	}
	var out []Diagnostic
	for _, d := range after {
		if d.Severity != SeverityError && d.Severity != SeverityWarning {
			continue
		}
		k := key{d.Severity, d.Message, d.Source}
		if seen[k] > 0 {
			seen[k]--
			continue
		}
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Severity == SeverityError) != (out[j].Severity == SeverityError) {
			return out[i].Severity == SeverityError
		}
		return out[i].Line < out[j].Line
	})
	return out
}

// diagnosticLines formats diagnostics as "path:line: message (source)", one line each, lines
// counted from 1. The text comes from a language server: one line, control characters removed,
// capped.
func diagnosticLines(rel string, ds []Diagnostic) []string {
	lines := make([]string, 0, len(ds))
	for _, d := range ds {
		msg := oneLine(d.Message, maxDiagnosticMessage)
		if d.Severity == SeverityWarning {
			msg = "warning: " + msg
		}
		s := fmt.Sprintf("%s:%d: %s", rel, d.Line+1, msg)
		if src := oneLine(d.Source, 40); src != "" {
			s += " (" + src + ")"
		}
		lines = append(lines, s)
	}
	return lines
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), " ")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}
