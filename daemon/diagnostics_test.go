package daemon

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

// diagEditor is a fakeEditor that also answers document/diagnostics with answer, and records
// every document/diagnostics request it receives.
type diagEditor struct {
	*fakeEditor
	answer func(ctx context.Context, p rpc.DocumentDiagnosticsParams) (rpc.DocumentDiagnosticsResult, error)

	dmu   sync.Mutex
	asked []rpc.DocumentDiagnosticsParams
}

func (e *testEnv) diagEditor(diagnostics bool, answer func(context.Context, rpc.DocumentDiagnosticsParams) (rpc.DocumentDiagnosticsResult, error)) *diagEditor {
	a, b := net.Pipe()
	go e.srv.ServeConn(a)
	fe := &fakeEditor{t: e.t, env: e, reviews: true, docs: map[string]*editorDoc{}, wake: make(chan struct{}, 1)}
	fe.conn = rpc.NewConn(b)
	de := &diagEditor{fakeEditor: fe, answer: answer}
	fe.conn.Go(de)
	e.t.Cleanup(func() { fe.conn.Close() })
	var res json.RawMessage
	fe.mustCall("initialize", map[string]any{
		"processId": nil, "rootUri": fileURI(e.ws), "capabilities": map[string]any{},
		"workspaceFolders": []map[string]any{{"uri": fileURI(e.ws), "name": "ws"}},
		"initializationOptions": rpc.InitializationOptions{ProtocolVersion: 1, Reviews: true, DocumentSave: true,
			Diagnostics: diagnostics},
	}, &res)
	fe.conn.Notify(context.Background(), "initialized", map[string]any{})
	return de
}

func (d *diagEditor) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != rpc.MethodDocumentDiagnostics {
		return d.fakeEditor.Call(ctx, method, params)
	}
	var p rpc.DocumentDiagnosticsParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	d.dmu.Lock()
	d.asked = append(d.asked, p)
	d.dmu.Unlock()
	if d.answer == nil {
		return nil, rpc.ErrMethodNotFound
	}
	return d.answer(ctx, p)
}

func (d *diagEditor) requests() []rpc.DocumentDiagnosticsParams {
	d.dmu.Lock()
	defer d.dmu.Unlock()
	return append([]rpc.DocumentDiagnosticsParams(nil), d.asked...)
}

const diagGo = `package shop

func Total(c *Cart) int {
	unused := 1
	return c.Sum()
}
`

// autoEditEnv is a workspace with diagGo where edits apply without a review, and a model that
// reads the file, edits it (calling an undefined function), then answers.
func autoEditEnv(t *testing.T) *testEnv {
	env := newEnvWith(t, map[string]string{"cart.go": diagGo}, func(o *harness.Options) { o.ApprovalMode = "auto-edit" })
	env.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"cart.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"cart.go","old_string":"return c.Sum()","new_string":"return c.Sum() + Bonus(c)"}`)),
		ollamatest.Text("Done."),
	)
	return env
}

var preexisting = rpc.DocumentDiagnostic{Line: 3, Character: 1, Severity: rpc.SeverityError,
	Message: "declared and not used: unused", Source: "compiler"}

func TestDiagnosticsAfterAnEditReachTheModel(t *testing.T) {
	env := autoEditEnv(t)
	ed := env.diagEditor(true, func(ctx context.Context, p rpc.DocumentDiagnosticsParams) (rpc.DocumentDiagnosticsResult, error) {
		if p.SettleMs == 0 { // before the edit
			return rpc.DocumentDiagnosticsResult{Diagnostics: []rpc.DocumentDiagnostic{preexisting}}, nil
		}
		return rpc.DocumentDiagnosticsResult{Diagnostics: []rpc.DocumentDiagnostic{
			{Line: 3, Character: 1, Severity: rpc.SeverityError, Message: "declared and not used: unused", Source: "compiler"},
			{Line: 4, Character: 18, Severity: rpc.SeverityError, Message: "undefined: Bonus\n(and more)", Source: "compiler"},
			{Line: 0, Character: 0, Severity: rpc.SeverityWarning, Message: "package comment missing", Source: "stylecheck"},
			{Line: 4, Character: 1, Severity: rpc.SeverityHint, Message: "a hint the model does not need", Source: "gopls"},
		}}, nil
	})
	uri := ed.open("cart.go", diagGo)
	s := ed.newSession()
	ed.prompt(s, "add the bonus")
	if end := ed.turnEnd(); end.Type != rpc.UpdateTurnCompleted {
		t.Fatalf("turn end = %+v", end)
	}
	tr := env.lastToolResult()
	for _, want := range []string{"cart.go:5: undefined: Bonus (and more) (compiler)", "cart.go:1: warning: package comment missing (stylecheck)"} {
		if !strings.Contains(tr, want) {
			t.Errorf("the tool result lacks %q:\n%s", want, tr)
		}
	}
	for _, not := range []string{"declared and not used", "a hint"} {
		if strings.Contains(tr, not) {
			t.Errorf("the tool result has %q (not new, or not an error or warning):\n%s", not, tr)
		}
	}
	if i, j := strings.Index(tr, "undefined: Bonus"), strings.Index(tr, "package comment"); i > j {
		t.Errorf("errors should come before warnings:\n%s", tr)
	}
	asked := ed.requests()
	if len(asked) != 2 {
		t.Fatalf("document/diagnostics requests = %+v, want one before and one after the edit", asked)
	}
	if asked[0].URI != uri || asked[0].Version != 1 || asked[0].SettleMs != 0 {
		t.Errorf("request before the edit = %+v, want %s v1 at once", asked[0], uri)
	}
	if asked[1].URI != uri || asked[1].Version != 2 || asked[1].SettleMs <= 0 {
		t.Errorf("request after the edit = %+v, want %s v2 with a settle time", asked[1], uri)
	}
}

func TestDiagnosticsOfAClosedFileComeFromAnEditorOfItsFolder(t *testing.T) {
	env := autoEditEnv(t)
	ed := env.diagEditor(true, func(ctx context.Context, p rpc.DocumentDiagnosticsParams) (rpc.DocumentDiagnosticsResult, error) {
		if p.SettleMs == 0 {
			return rpc.DocumentDiagnosticsResult{}, nil
		}
		return rpc.DocumentDiagnosticsResult{Diagnostics: []rpc.DocumentDiagnostic{
			{Line: 4, Character: 18, Severity: rpc.SeverityError, Message: "undefined: Bonus", Source: "compiler"}}}, nil
	})
	s := ed.newSession()
	ed.prompt(s, "add the bonus")
	ed.turnEnd()
	if tr := env.lastToolResult(); !strings.Contains(tr, "cart.go:5: undefined: Bonus (compiler)") {
		t.Errorf("the tool result lacks the new error:\n%s", tr)
	}
	if asked := ed.requests(); len(asked) != 2 || asked[1].URI != fileURI(env.ws+"/cart.go") || asked[1].Version != 0 {
		t.Errorf("document/diagnostics requests = %+v, want two for the closed file, without a version", asked)
	}
}

func TestASlowEditorDoesNotHoldTheTurn(t *testing.T) {
	for _, tc := range []struct {
		name string
		slow func(p rpc.DocumentDiagnosticsParams) bool
		// asked: a question before the edit that got no answer leaves nothing to compare with,
		// so nothing is asked after it.
		asked int
	}{
		{"before the edit", func(p rpc.DocumentDiagnosticsParams) bool { return p.SettleMs == 0 }, 1},
		{"after the edit", func(p rpc.DocumentDiagnosticsParams) bool { return p.SettleMs > 0 }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := autoEditEnv(t)
			release := make(chan struct{})
			ed := env.diagEditor(true, func(ctx context.Context, p rpc.DocumentDiagnosticsParams) (rpc.DocumentDiagnosticsResult, error) {
				if tc.slow(p) {
					<-release // never answers while the test runs
				}
				return rpc.DocumentDiagnosticsResult{Diagnostics: []rpc.DocumentDiagnostic{
					{Line: 4, Character: 18, Severity: rpc.SeverityError, Message: "undefined: Bonus", Source: "compiler"}}}, nil
			})
			t.Cleanup(func() { close(release) })
			ed.open("cart.go", diagGo)
			s := ed.newSession()
			ed.prompt(s, "add the bonus")
			// Without the daemon's own bound, the turn would wait for the editor forever and
			// turnEnd would fail at its deadline.
			if end := ed.turnEnd(); end.Type != rpc.UpdateTurnCompleted || end.Reason != rpc.ReasonDone {
				t.Fatalf("turn end = %+v", end)
			}
			tr := env.lastToolResult()
			if !strings.Contains(tr, "cart.go") || strings.Contains(tr, "language server") {
				t.Errorf("tool result = %q, want the edit's result without diagnostics", tr)
			}
			if n := len(ed.requests()); n != tc.asked {
				t.Errorf("document/diagnostics requests = %d, want %d", n, tc.asked)
			}
		})
	}
}

func TestAnEditorWithoutTheCapabilityIsNotAsked(t *testing.T) {
	env := autoEditEnv(t)
	ed := env.diagEditor(false, func(ctx context.Context, p rpc.DocumentDiagnosticsParams) (rpc.DocumentDiagnosticsResult, error) {
		return rpc.DocumentDiagnosticsResult{Diagnostics: []rpc.DocumentDiagnostic{
			{Line: 4, Character: 18, Severity: rpc.SeverityError, Message: "undefined: Bonus", Source: "compiler"}}}, nil
	})
	ed.open("cart.go", diagGo)
	s := ed.newSession()
	ed.prompt(s, "add the bonus")
	if end := ed.turnEnd(); end.Type != rpc.UpdateTurnCompleted {
		t.Fatalf("turn end = %+v", end)
	}
	if asked := ed.requests(); len(asked) != 0 {
		t.Errorf("an editor that did not declare diagnostics was asked: %+v", asked)
	}
	if tr := env.lastToolResult(); strings.Contains(tr, "undefined") {
		t.Errorf("tool result = %q", tr)
	}
}
