package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
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
		{`{"mcpServers": {"a": {"command": "x", "tools": ["read", " "]}}}`, "an empty name"},
		{`{"mcpServers": {"a": {"command": "x", "disabledTools": "write"}}}`, "cannot unmarshal string"},
	} {
		_, _, err := ParseConfig([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.json, err, c.want)
		}
	}
}

func TestWorkspaceProposalsNeedTrustAndApproval(t *testing.T) {
	conf, ws, state := t.TempDir(), t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".agentd"), 0o755)
	write := func(rel, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(".agentd", "mcp.json"), `{"mcpServers":{"tool":{"command":"srv","args":["a"]},"wide":{"command":"x","trustReadOnly":true}}}`)
	write(".mcp.json", `{"mcpServers":{"tool":{"command":"other"},"web":{"type":"http","url":"http://127.0.0.1:1/mcp"}}}`)
	os.WriteFile(filepath.Join(conf, "mcp.json"), []byte(`{"mcpServers":{"mine":{"command":"srv"}}}`), 0o600)
	names := func(c *Config) (out []string) {
		for _, s := range c.Servers {
			out = append(out, s.Name)
		}
		return out
	}
	load := func(trusted bool) (*Config, []Proposal, []string) {
		t.Helper()
		cfg, _, err := LoadConfig(conf, ws)
		if err != nil {
			t.Fatal(err)
		}
		ps, w := AddProposals(cfg, ws, trusted, state)
		return cfg, ps, w
	}

	// Untrusted: nothing proposed starts, whatever was approved.
	cfg, ps, w := load(false)
	if got := names(cfg); !slices.Equal(got, []string{"mine"}) || len(ps) != 3 {
		t.Fatalf("untrusted: servers %v, proposals %d", got, len(ps))
	}
	if !strings.Contains(strings.Join(w, "\n"), "not trusted") {
		t.Errorf("untrusted: warnings %q", w)
	}
	// Trusted, not approved: nothing starts; the warning names the command.
	cfg, ps, w = load(true)
	if got := names(cfg); !slices.Equal(got, []string{"mine"}) {
		t.Fatalf("unapproved: servers %v", got)
	}
	if !strings.Contains(strings.Join(w, "\n"), "agentd mcp approve tool") {
		t.Errorf("unapproved: warnings %q", w)
	}
	byName := map[string]Proposal{}
	for _, p := range ps {
		byName[p.Server.Name] = p
	}
	if p := byName["tool"]; p.File != filepath.Join(".agentd", "mcp.json") || p.Server.Command != "srv" {
		t.Errorf(".agentd/mcp.json must win over .mcp.json: %+v", p)
	}
	if p := byName["wide"]; p.Err == "" {
		t.Errorf("a proposal setting trustReadOnly must be refused: %+v", p)
	}
	if err := OpenApprovals(state).Approve(ws, byName["wide"]); err == nil {
		t.Error("a refused proposal was approved")
	}
	// Approved: that server starts, the other does not.
	if err := OpenApprovals(state).Approve(ws, byName["tool"]); err != nil {
		t.Fatal(err)
	}
	if cfg, _, _ = load(true); !slices.Equal(names(cfg), []string{"mine", "tool"}) {
		t.Fatalf("approved: servers %v", names(cfg))
	}
	if cfg, _, _ = load(false); !slices.Equal(names(cfg), []string{"mine"}) {
		t.Fatalf("approved but no longer trusted: servers %v", names(cfg))
	}
	// The approval is per workspace.
	other := t.TempDir()
	os.MkdirAll(filepath.Join(other, ".agentd"), 0o755)
	os.WriteFile(filepath.Join(other, ".agentd", "mcp.json"), []byte(`{"mcpServers":{"tool":{"command":"srv","args":["a"]}}}`), 0o644)
	c2, _, _ := LoadConfig(conf, other)
	if AddProposals(c2, other, true, state); !slices.Equal(names(c2), []string{"mine"}) {
		t.Errorf("an approval in one workspace started a server in another: %v", names(c2))
	}
	// A changed definition (an argument) needs approval again; the old one comes back approved.
	write(filepath.Join(".agentd", "mcp.json"), `{"mcpServers":{"tool":{"command":"srv","args":["b"]}}}`)
	if cfg, _, w = load(true); !slices.Equal(names(cfg), []string{"mine"}) || !strings.Contains(strings.Join(w, "\n"), "needs your approval") {
		t.Fatalf("changed: servers %v, warnings %q", names(cfg), w)
	}
	write(filepath.Join(".agentd", "mcp.json"), `{"mcpServers": {"tool": {"args": ["a"], "command": "srv"}}}`)
	if cfg, _, _ = load(true); !slices.Equal(names(cfg), []string{"mine", "tool"}) {
		t.Fatalf("same definition, other key order: servers %v", names(cfg))
	}
	// No file: no servers, no error.
	cfg, _, err := LoadConfig(t.TempDir(), "")
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
