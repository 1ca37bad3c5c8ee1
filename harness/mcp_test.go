package harness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools"
)

// mcpFixture: a loopback MCP server (the SDK's own, over streamable HTTP) configured in the user's
// mcp.json, a fake Ollama, and a runtime.
type mcpFixture struct {
	fake  *ollamatest.Server
	rt    *Runtime
	calls atomic.Int32
}

func newMCPFixture(t *testing.T) *mcpFixture {
	f := &mcpFixture{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "inventory", Version: "1.0"}, nil)
	srv.AddTool(&sdk.Tool{Name: "stock", Description: "How many items of a product are in stock.",
		InputSchema: map[string]any{"type": "object", "required": []string{"sku"},
			"properties": map[string]any{"sku": map[string]any{"type": "string"}}}},
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			f.calls.Add(1)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "17 in stock for " + string(r.Params.Arguments)}}}, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	f.fake = ollamatest.NewServer(&ollamatest.Script{Models: []ollamatest.Model{
		{Name: "qwen3:8b", Capabilities: []string{"completion", "tools"}, ContextLength: 40960},
	}})
	t.Cleanup(f.fake.Close)
	home := t.TempDir()
	conf := filepath.Join(home, "config")
	if err := os.MkdirAll(conf, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "mcp.json"), []byte(`{"mcpServers":{"inventory":{"url":"`+hs.URL+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := NewRuntime(Options{
		Version: "test", OllamaHost: f.fake.URL, Model: "qwen3:8b",
		StateDir: filepath.Join(home, "state"), BuildCache: filepath.Join(home, "cache"),
		Policy: policy.Locations{ConfigDir: conf, StateDir: filepath.Join(home, "state")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	f.rt = rt
	return f
}

// turn runs one prompt in a new session with the given mode and asker and returns the MCP call's
// result and how the turn ended.
func (f *mcpFixture) turn(t *testing.T, mode string, ask Asker) (tools.Result, agent.TurnEnd, *Harness) {
	t.Helper()
	h, err := f.rt.Open(SessionSpec{Workspace: t.TempDir(), Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	var mu sync.Mutex
	var res *tools.Result
	ends := make(chan agent.TurnEnd, 1)
	sess, err := h.Start(context.Background(), ask, func(e agent.Event) {
		switch e := e.(type) {
		case agent.ToolEnd:
			mu.Lock()
			r := e.Result
			res = &r
			mu.Unlock()
		case agent.TurnEnd:
			ends <- e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	if _, err := sess.Prompt("how many X-1 are in stock?"); err != nil {
		t.Fatal(err)
	}
	var end agent.TurnEnd
	select {
	case end = <-ends:
	case <-time.After(60 * time.Second):
		t.Fatal("timed out waiting for the turn's end")
	}
	mu.Lock()
	defer mu.Unlock()
	if res == nil {
		t.Fatalf("no ToolEnd for the MCP call; turn ended %q (%v)", end.Reason, end.Err)
	}
	return *res, end, h
}

func TestMCPToolCallReachesTheModel(t *testing.T) {
	f := newMCPFixture(t)
	f.fake.Enqueue(ollamatest.Calls(ollamatest.Call("inventory__stock", `{"sku":"X-1"}`)))
	f.fake.Enqueue(ollamatest.Text("17 are in stock."))
	res, end, h := f.turn(t, "yolo", nil)
	if res.IsError || !strings.Contains(res.Text(), "17 in stock") || f.calls.Load() != 1 {
		t.Fatalf("result %+v (server calls %d), turn %q", res, f.calls.Load(), end.Reason)
	}
	chats := f.fake.Chats()
	if len(chats) < 2 {
		t.Fatalf("%d chat requests, want 2", len(chats))
	}
	var offered bool
	for _, tl := range chats[0].Request.Tools {
		if tl.Function.Name == "inventory__stock" && strings.Contains(tl.Function.Description, "MCP server inventory") {
			offered = true
		}
	}
	if !offered {
		t.Errorf("inventory__stock was not offered to the model: %s", chats[0].Body)
	}
	last := chats[1].Request.Messages[len(chats[1].Request.Messages)-1]
	if last.Role != "tool" || !strings.Contains(last.Content, `17 in stock for {"sku":"X-1"}`) {
		t.Errorf("the model did not get the result: %+v", last)
	}
	st := h.MCPStatus()
	if len(st) != 1 || st[0].State != "ready" || len(st[0].Tools) != 1 {
		t.Errorf("status %+v", st)
	}
}

func TestMCPToolAsksAndWithoutATerminalNothingRuns(t *testing.T) {
	f := newMCPFixture(t)
	f.fake.Enqueue(ollamatest.Calls(ollamatest.Call("inventory__stock", `{"sku":"X-1"}`)))
	f.fake.Enqueue(ollamatest.Text("unreachable"))
	res, end, _ := f.turn(t, "auto-edit", nil)
	if f.calls.Load() != 0 {
		t.Fatalf("the MCP server ran the call %d time(s) with no one to approve it", f.calls.Load())
	}
	if res.Type != tools.ApprovalUnavailable || !strings.Contains(res.Text(), "MCP tools ask in auto-edit mode (tool stock of server inventory)") ||
		!strings.Contains(res.Text(), "no one can approve it here") || !strings.Contains(res.Text(), "trustReadOnly") {
		t.Fatalf("result %s: %q", res.Type, res.Text())
	}
	if end.Reason != "blocked" {
		t.Errorf("turn ended %q, want blocked", end.Reason)
	}
}

// recordingAsker answers every question and keeps them.
type recordingAsker struct {
	mu  sync.Mutex
	qs  []Question
	ans Answer
}

func (a *recordingAsker) Ask(_ context.Context, q Question) (Answer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.qs = append(a.qs, q)
	return a.ans, nil
}

func TestMCPReviewShowsServerToolAndArguments(t *testing.T) {
	f := newMCPFixture(t)
	f.fake.Enqueue(ollamatest.Calls(ollamatest.Call("inventory__stock", `{"sku":"X-1"}`)))
	f.fake.Enqueue(ollamatest.Text("17."))
	ask := &recordingAsker{ans: Answer{Decision: AnswerReject, Reason: "not now"}}
	res, _, _ := f.turn(t, "ask", ask)
	if len(ask.qs) != 1 {
		t.Fatalf("%d questions", len(ask.qs))
	}
	q := ask.qs[0]
	if q.Kind != "tool" || q.Call.Label != `MCP server inventory, tool stock, arguments {"sku":"X-1"}` {
		t.Errorf("kind %q, label %q", q.Kind, q.Call.Label)
	}
	if len(q.Grants) != 1 || q.Grants[0].Scope != policy.ScopeTool || q.Grants[0].Tool != "inventory__stock" {
		t.Errorf("grants offered %v, want the tool", q.Grants)
	}
	if f.calls.Load() != 0 || res.Type != tools.RejectedByUser {
		t.Errorf("rejected, yet: calls %d, result %s", f.calls.Load(), res.Type)
	}
}
