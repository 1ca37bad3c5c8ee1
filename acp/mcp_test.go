package acp

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/tools/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.HelperMain() // the test binary is the sandbox helper, as the agentd binary is
	os.Exit(m.Run())
}

// everythingServer returns node and the entry point of @modelcontextprotocol/server-everything
// ($AGENTD_MCP_SERVERS, which .ci/run installs), and fails in CI or skips elsewhere when it or a
// sandbox is missing.
func everythingServer(t *testing.T) (string, string) {
	t.Helper()
	dir := os.Getenv("AGENTD_MCP_SERVERS")
	if dir == "" {
		dir = "/opt/agentd-e2e/mcp"
	}
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	_, err := os.Stat(entry)
	node, lerr := exec.LookPath("node")
	if err == nil {
		err = lerr
	}
	if err == nil {
		var sb *sandbox.Sandbox
		if sb, err = sandbox.New(sandbox.Options{}); err == nil && sb.Mode() == sandbox.ModeNone {
			err = os.ErrNotExist
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the everything MCP server (in %s), node or a sandbox is missing; .ci/run installs them: %v", dir, err)
		}
		t.Skipf("the everything MCP server (in %s), node or a sandbox is missing here (%v); .ci/run installs them (set AGENTD_MCP_SERVERS)", dir, err)
	}
	node, _ = filepath.Abs(node)
	return node, entry
}

// TestSessionNewStartsTheClientsMCPServers: session/new's mcpServers start for the session (the
// model is offered their namespaced tools, a call asks in ask mode, the server gets the given env),
// and entries that cannot start are reported as agent_message_chunk updates while the session starts.
func TestSessionNewStartsTheClientsMCPServers(t *testing.T) {
	node, entry := everythingServer(t)
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "xdg-cache"))
	fake := ollamatest.NewServer(&ollamatest.Script{Turns: []ollamatest.Turn{
		{When: &ollamatest.Match{LastRole: "user"}, Reply: ollamatest.Calls(ollamatest.Call("everything__get-env", `{}`))},
		{Repeat: true, Reply: ollamatest.Text("done")},
	}})
	t.Cleanup(fake.Close)
	rt := homeRuntime(t, home, fake.URL)
	p := newPeer(t, rt)
	t.Cleanup(func() { p.in.Close(); <-p.done; rt.Close() })
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	init := p.until("the initialize response", isResponse(1))
	caps, _ := json.Marshal(init["result"])
	if !strings.Contains(string(caps), `"mcpCapabilities":{"http":true,"sse":false}`) {
		t.Fatalf("initialize does not advertise http MCP servers (and not sse): %s", caps)
	}
	servers, _ := json.Marshal([]map[string]any{
		{"name": "everything", "command": node, "args": []string{entry}, "env": []map[string]string{{"name": "GREETING", "value": "from-the-acp-client"}}},
		{"name": "broken", "command": "/nonexistent/mcp-server", "args": []string{}, "env": []any{}},
		{"type": "http", "name": "remote", "url": "http://example.com/mcp", "headers": []any{}},
		{"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []any{}},
	})
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"` + ws + `","mcpServers":` + string(servers) + `}}`)
	m := p.until("the session/new response", isResponse(2))
	sid, _ := m["result"].(map[string]any)["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v", m)
	}
	// One note each for the three that give no tools, after the response.
	var notes []string
	for len(notes) < 3 {
		u := p.until("the notes about MCP servers that did not start", func(m map[string]any) bool { return m["method"] == "session/update" })
		upd, _ := u["params"].(map[string]any)["update"].(map[string]any)
		if upd["sessionUpdate"] != "agent_message_chunk" {
			t.Fatalf("unexpected update before the notes: %v", u)
		}
		text, _ := upd["content"].(map[string]any)["text"].(string)
		notes = append(notes, text)
	}
	all := strings.Join(notes, "|")
	for _, want := range []string{"broken did not start", `"remote"`, "loopback", `"old"`, "SSE"} {
		if !strings.Contains(all, want) {
			t.Errorf("the notes do not mention %s: %q", want, notes)
		}
	}
	p.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"show the env"}]}}`)
	perm := p.until("the permission request for the MCP call (ask mode)", func(m map[string]any) bool { return m["method"] == "session/request_permission" })
	if b, _ := json.Marshal(perm["params"]); !strings.Contains(string(b), "everything__get-env") {
		t.Fatalf("the permission request is not about the MCP tool: %s", b)
	}
	id, _ := json.Marshal(perm["id"])
	p.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`)
	end := p.until("the prompt's response", isResponse(3))
	if res, _ := end["result"].(map[string]any); res == nil || res["stopReason"] != "end_turn" {
		t.Fatalf("prompt response: %v", end)
	}
	chats := fake.Chats()
	if len(chats) < 2 {
		t.Fatalf("the fake model got %d chat requests, want 2", len(chats))
	}
	var names []string
	for _, tl := range chats[0].Request.Tools {
		names = append(names, tl.Function.Name)
	}
	if !slices.Contains(names, "everything__get-env") || !slices.Contains(names, "everything__echo") {
		t.Fatalf("the model's tools lack the client's server's namespaced tools: %v", names)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "broken__") || strings.HasPrefix(n, "remote__") || strings.HasPrefix(n, "old__") {
			t.Errorf("a server that did not start has a tool: %s", n)
		}
	}
	last := chats[1].Request.Messages[len(chats[1].Request.Messages)-1]
	if last.Role != "tool" || !strings.Contains(last.Content, "from-the-acp-client") {
		t.Fatalf("the MCP call's result lacks the env the client gave: %s %q", last.Role, last.Content)
	}
}

func TestClientMCPEntries(t *testing.T) {
	raw := []json.RawMessage{
		json.RawMessage(`{"name":"My Server!","command":"/bin/srv","args":["-x"],"env":[{"name":"K","value":"v"}]}`),
		json.RawMessage(`{"type":"http","name":"web","url":"http://127.0.0.1:8080/mcp","headers":[{"name":"Authorization","value":"Bearer t"}]}`),
		json.RawMessage(`{"type":"http","name":"far","url":"https://example.com/mcp","headers":[]}`),
		json.RawMessage(`{"name":"bad env","command":"/bin/srv","args":[],"env":[{"name":"A=B","value":"v"}]}`),
		json.RawMessage(`"not an object"`),
	}
	got, notes := clientMCP(raw)
	if len(got) != 2 || len(notes) != 3 {
		t.Fatalf("servers %+v, notes %q: want 2 servers and 3 notes", got, notes)
	}
	if s := got[0]; s.Name != "My-Server-" || s.Command != "/bin/srv" || s.Env["K"] != "v" || len(s.Args) != 1 || s.Network || s.TrustReadOnly {
		t.Errorf("stdio entry: %+v", s)
	}
	if s := got[1]; s.Name != "web" || s.URL != "http://127.0.0.1:8080/mcp" || s.Headers["Authorization"] != "Bearer t" {
		t.Errorf("http entry: %+v", s)
	}
	if !strings.Contains(notes[0], "loopback") || !strings.Contains(notes[1], "A=B") {
		t.Errorf("notes: %q", notes)
	}
}
