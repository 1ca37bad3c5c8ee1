package harness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/policy"
)

// toolServer is a loopback MCP server (the SDK's own, over streamable HTTP) with the given tools,
// each taking one string argument described by desc.
func toolServer(t *testing.T, desc string, names ...string) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "many", Version: "1.0"}, nil)
	for _, n := range names {
		srv.AddTool(&sdk.Tool{Name: n, Description: "Tool " + n + ". " + desc,
			InputSchema: map[string]any{"type": "object", "required": []string{"q"},
				"properties": map[string]any{"q": map[string]any{"type": "string", "description": desc}}}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
			})
	}
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// mcpRuntime is a runtime whose user mcp.json is the given text, with a fake Ollama.
func mcpRuntime(t *testing.T, mcpJSON string, opts Options) (*Runtime, *ollamatest.Server) {
	t.Helper()
	fake := ollamatest.NewServer(&ollamatest.Script{Models: []ollamatest.Model{
		{Name: "qwen3:8b", Capabilities: []string{"completion", "tools"}, ContextLength: 40960},
	}})
	t.Cleanup(fake.Close)
	home := t.TempDir()
	conf := filepath.Join(home, "config")
	if err := os.MkdirAll(conf, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "mcp.json"), []byte(mcpJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	opts.Version, opts.OllamaHost, opts.Model = "test", fake.URL, "qwen3:8b"
	opts.StateDir, opts.BuildCache = filepath.Join(home, "state"), filepath.Join(home, "cache")
	opts.Policy = policy.Locations{ConfigDir: conf, StateDir: filepath.Join(home, "state")}
	rt, err := NewRuntime(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, fake
}

// An MCP server's tools and disabledTools in mcp.json choose the tools the model is offered; a
// name the server does not have is a warning (a typo must not silently offer nothing).
func TestMCPToolsAndDisabledToolsChooseWhatIsOffered(t *testing.T) {
	url := toolServer(t, "A query.", "audit", "restock", "search", "stock")
	rt, _ := mcpRuntime(t, `{"mcpServers": {"inv": {"url": "`+url+`",
		"tools": ["stock", "search", "audit", "stokc"], "disabledTools": ["audit"]}}}`, Options{})
	h, err := rt.Open(SessionSpec{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	var offered []string
	for _, d := range h.Registry().Definitions() {
		if strings.HasPrefix(d.Name, "inv__") {
			offered = append(offered, d.Name)
		}
	}
	if !slices.Equal(offered, []string{"inv__search", "inv__stock"}) {
		t.Errorf("offered %v, want inv__search and inv__stock", offered)
	}
	st := h.MCPStatus()
	if len(st) != 1 || !slices.Equal(st[0].Filtered, []string{"audit", "restock"}) {
		t.Fatalf("status %+v", st)
	}
	if len(st[0].Skipped) != 1 || !strings.Contains(st[0].Skipped[0], `tools names "stokc", which the server does not have (its tools: audit, restock, search, stock)`) {
		t.Errorf("warnings %q", st[0].Skipped)
	}
}

// When the tool definitions take more than a quarter of the context window, the session says so,
// names the MCP servers' part and what to do; offering fewer tools with "tools" makes it go away.
func TestToolDefinitionsOverAShareOfTheWindowAreAWarning(t *testing.T) {
	long := strings.Repeat("A long description of what this tool does and when to use it. ", 5)
	names := []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9"}
	url := toolServer(t, long, names...)
	for _, tc := range []struct {
		name, extra string
		warn        bool
	}{
		{"all eighteen tools", ``, true},
		{"three of them", `, "tools": ["a1", "a2", "a3"]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, fake := mcpRuntime(t, `{"mcpServers": {"big": {"url": "`+url+`"`+tc.extra+`}}}`, Options{ContextCap: 8192})
			fake.Enqueue(ollamatest.Text("hi"))
			h, err := rt.Open(SessionSpec{Workspace: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			if w := h.ToolShare().Warning; w != "" {
				t.Fatalf("a warning before the window is chosen: %s", w)
			}
			sess, err := h.Start(context.Background(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(sess.Close)
			share := h.ToolShare()
			if share.Window != 8192 {
				t.Fatalf("window %d, want the cap 8192", share.Window)
			}
			if (share.Warning != "") != tc.warn {
				t.Fatalf("tokens %d of %d: warning %q", share.Tokens, share.Window, share.Warning)
			}
			if tc.warn {
				for _, want := range []string{"the definitions of the 25 tools take about", "of the 8192-token context window",
					"MCP servers: big 18 tools", `"tools" or "disabledTools"`, "context-length"} {
					if !strings.Contains(share.Warning, want) {
						t.Errorf("warning lacks %q: %s", want, share.Warning)
					}
				}
			}
		})
	}
}
