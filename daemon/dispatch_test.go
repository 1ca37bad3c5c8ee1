package daemon

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools"
	"go.lsp.dev/jsonrpc2"
)

// TestEveryClientMethodHasAHandler checks the dispatch against the protocol table both ways:
// every client→server method of rpc.Methods has a handler of its kind, and every handler serves
// a method of the table.
func TestEveryClientMethodHasAHandler(t *testing.T) {
	n := 0
	for _, m := range rpc.Methods {
		if m.Direction != rpc.ClientToServer {
			continue
		}
		n++
		_, isReq := requestHandlers[m.Name]
		_, isNote := notificationHandlers[m.Name]
		switch {
		case m.Kind == rpc.Request && !isReq:
			t.Errorf("request %s has no handler in requestHandlers", m.Name)
		case m.Kind == rpc.Notification && !isNote:
			t.Errorf("notification %s has no handler in notificationHandlers", m.Name)
		case isReq && isNote:
			t.Errorf("%s is handled both as a request and as a notification", m.Name)
		}
	}
	if n < 20 {
		t.Fatalf("only %d client→server methods in rpc.Methods", n)
	}
	for name := range requestHandlers {
		if m, ok := rpc.Method(name); !ok || m.Direction != rpc.ClientToServer || m.Kind != rpc.Request {
			t.Errorf("requestHandlers serves %s, which rpc.Methods does not list as a client→server request", name)
		}
	}
	for name := range notificationHandlers {
		if m, ok := rpc.Method(name); !ok || m.Direction != rpc.ClientToServer || m.Kind != rpc.Notification {
			t.Errorf("notificationHandlers serves %s, which rpc.Methods does not list as a client→server notification", name)
		}
	}
}

// TestCallServesEveryRequestOfTheTable sends every client→server request of the table over a
// real connection: none may answer "method not found" (Call dispatches through the table's
// handlers), while a method outside the table does.
func TestCallServesEveryRequestOfTheTable(t *testing.T) {
	env := newEnv(t, nil)
	ed := env.editor(true)
	var last []string
	for _, m := range rpc.Methods {
		if m.Direction != rpc.ClientToServer || m.Kind != rpc.Request {
			continue
		}
		if m.Name == rpc.MethodShutdown {
			last = append(last, m.Name) // shutdown ends the connection's service: last
			continue
		}
		checkServed(t, ed, m.Name)
	}
	var rpcErr *jsonrpc2.Error
	err := ed.call("session/nope", map[string]any{}, nil)
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc2.MethodNotFound {
		t.Errorf("a method outside the table: %v, want method not found", err)
	}
	for _, name := range last {
		checkServed(t, ed, name)
	}
}

func checkServed(t *testing.T, ed *fakeEditor, method string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := ed.conn.Call(ctx, method, map[string]any{}, nil)
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc2.MethodNotFound {
		t.Errorf("%s: method not found, but rpc.Methods lists it", method)
	}
}

// TestWireEnumsMatchTheKernel: the protocol's result types and approval modes are the kernel's
// and the policy's, so an editor switching on them sees every value.
func TestWireEnumsMatchTheKernel(t *testing.T) {
	enum := func(name string) []string {
		for _, e := range rpc.Enums {
			if e.Name == name {
				var out []string
				for _, v := range e.Values {
					out = append(out, v.Value.(string))
				}
				return out
			}
		}
		t.Fatalf("no enum %s", name)
		return nil
	}
	var results []string
	for _, r := range tools.ResultTypes {
		results = append(results, string(r))
	}
	if got := enum("Result"); !slices.Equal(got, results) {
		t.Errorf("rpc Result enum %v, tools.ResultTypes %v", got, results)
	}
	var modes []string
	for _, m := range policy.Modes {
		modes = append(modes, m.String())
	}
	got := enum("Mode")
	slices.Sort(got)
	slices.Sort(modes)
	if !slices.Equal(got, modes) {
		t.Errorf("rpc Mode enum %v, policy.Modes %v", got, modes)
	}
}
