package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/tools"
)

func TestConfigAcceptsTheCommonShape(t *testing.T) {
	// As other MCP clients write it, plus agentd's keys.
	cfg, warnings, err := ParseConfig([]byte(`{"mcpServers": {
		"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."], "env": {"DEBUG": "1"}},
		"web": {"url": "http://127.0.0.1:8931/mcp", "trustReadOnly": true},
		"net": {"type": "stdio", "command": "srv", "network": true},
		"old": {"command": "x", "disabled": true}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 3 || cfg.Servers[0].Name != "fs" || cfg.Servers[1].Name != "net" || cfg.Servers[2].Name != "web" {
		t.Fatalf("servers %+v", cfg.Servers)
	}
	fs, web := cfg.Servers[0], cfg.Servers[2]
	if !fs.Stdio() || fs.Env["DEBUG"] != "1" || len(fs.Args) != 3 || web.Stdio() || !web.TrustReadOnly || !cfg.Servers[1].Network {
		t.Errorf("parsed %+v", cfg.Servers)
	}
	if fs.CallTimeout() != DefaultCallTimeout || fs.Restarts() != DefaultMaxRestarts {
		t.Errorf("defaults: %v %d", fs.CallTimeout(), fs.Restarts())
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "old is disabled") {
		t.Errorf("warnings %q", warnings)
	}
}

func TestConfigRefusals(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"mcpServers": {"a": {"command": "x", "trustTools": true}}}`, "unknown field"},
		{`{"mcpServers": {"a": {"url": "http://example.com/mcp"}}}`, "loopback"},
		{`{"mcpServers": {"a": {"url": "http://10.0.0.1:80/mcp"}}}`, "loopback"},
		{`{"mcpServers": {"a": {"url": "file:///x"}}}`, "only http"},
		{`{"mcpServers": {"a": {"command": "x", "url": "http://127.0.0.1/"}}}`, "not both"},
		{`{"mcpServers": {"a": {}}}`, "set command"},
		{`{"mcpServers": {"a_b": {"command": "x"}}}`, "server name"},
		{`{"mcpServers": {"a": {"type": "sse", "url": "http://127.0.0.1/"}}}`, "not supported"},
		{`{"mcpServers": {"a": {"url": "http://127.0.0.1/", "network": true}}}`, "stdio servers only"},
		{`{"mcpServers": {"a": {"command": "x", "writable": ["rel/dir"]}}}`, "absolute"},
	} {
		_, _, err := ParseConfig([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.json, err, c.want)
		}
	}
}

func TestWorkspaceProposedServersAreNotStarted(t *testing.T) {
	conf, ws := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".agentd"), 0o755)
	os.WriteFile(filepath.Join(ws, ".agentd", "mcp.json"), []byte(`{"mcpServers":{"evil":{"command":"sh"}}}`), 0o644)
	os.WriteFile(filepath.Join(conf, "mcp.json"), []byte(`{"mcpServers":{"mine":{"command":"srv"}}}`), 0o600)
	cfg, warnings, err := LoadConfig(conf, ws)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 1 || cfg.Servers[0].Name != "mine" {
		t.Errorf("servers %+v: only the user's own may start", cfg.Servers)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "does not start servers a workspace proposes") {
		t.Errorf("warnings %q", warnings)
	}
	// No file: no servers, no error.
	cfg, _, err = LoadConfig(t.TempDir(), "")
	if err != nil || len(cfg.Servers) != 0 {
		t.Errorf("no file: %+v, %v", cfg, err)
	}
}

func TestToolNames(t *testing.T) {
	for _, c := range []struct{ server, tool, want string }{
		{"fs", "read_file", "fs__read_file"},
		{"everything", "get-tiny-image", "everything__get-tiny-image"},
		{"x", "a.b/c d", "x__a_b_c_d"},
	} {
		if got, ok := ToolName(c.server, c.tool); !ok || got != c.want {
			t.Errorf("%s %s: %q %v", c.server, c.tool, got, ok)
		}
	}
	if _, ok := ToolName("s", strings.Repeat("x", 62)); ok {
		t.Error("a 65-character name was accepted")
	}
}

// An HTTP server on loopback, the SDK's own, with a tool whose schema is hostile, one that errs
// and one that returns structured content only.
func TestStreamableHTTPServer(t *testing.T) {
	var calls atomic.Int32
	srv := sdk.NewServer(&sdk.Implementation{Name: "local", Version: "0.1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "count", Description: "counts", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []string{"n"}}},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			calls.Add(1)
			return &sdk.CallToolResult{StructuredContent: map[string]any{"n": 2}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "fail", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk on fire"}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "bad-schema", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"x": map[string]any{"$ref": "#/nowhere"}}}},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return nil, nil })
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	set := Start(context.Background(), &Config{Servers: []ServerConfig{{Name: "local", URL: hs.URL}}}, Options{Workspace: t.TempDir()})
	t.Cleanup(set.Close)
	st := set.Status()
	if len(st) != 1 || st[0].State != StateReady || st[0].Transport != "http" {
		t.Fatalf("status %+v", st)
	}
	if len(set.Tools()) != 2 || len(st[0].Skipped) != 1 || !strings.Contains(st[0].Skipped[0], "bad-schema") {
		t.Fatalf("tools %v, skipped %q", st[0].Tools, st[0].Skipped)
	}
	count := lookup(t, set, "local__count")
	if _, err := count.Spec().Decode([]byte(`{}`), nil); err == nil {
		t.Error("a missing required argument passed validation")
	}
	out, err := run(context.Background(), t, count, `{"n":"1"}`) // coerced to 1, as for built-in tools
	if err != nil || textOf(out) != `{"n":2}` || calls.Load() != 1 {
		t.Fatalf("structured content: %q, %v (calls %d)", textOf(out), err, calls.Load())
	}
	_, err = run(context.Background(), t, lookup(t, set, "local__fail"), `{}`)
	if tools.TypeOf(err, "") != tools.ExecFailed || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("isError: %v", err)
	}
}
