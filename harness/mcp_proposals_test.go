package harness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools/mcp"
)

// TestWorkspaceProposedServerStartsOnlyTrustedAndApproved: a workspace's .agentd/mcp.json proposes
// a (loopback, go-sdk) server; a session starts it only in a trusted workspace and once the user
// approved that exact definition.
func TestWorkspaceProposedServerStartsOnlyTrustedAndApproved(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "proposed", Version: "1.0"}, nil)
	srv.AddTool(&sdk.Tool{Name: "ping", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	fake := ollamatest.NewServer(&ollamatest.Script{Models: []ollamatest.Model{
		{Name: "qwen3:8b", Capabilities: []string{"completion", "tools"}, ContextLength: 40960}}})
	t.Cleanup(fake.Close)
	home := t.TempDir()
	loc := policy.Locations{ConfigDir: filepath.Join(home, "config"), StateDir: filepath.Join(home, "state")}
	rt, err := NewRuntime(Options{Version: "test", OllamaHost: fake.URL, Model: "qwen3:8b",
		StateDir: loc.StateDir, BuildCache: filepath.Join(home, "cache"), Policy: loc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".agentd"), 0o755)
	propose := func(path string) {
		t.Helper()
		body := `{"mcpServers":{"proposed":{"url":"` + hs.URL + path + `"}}}`
		if err := os.WriteFile(filepath.Join(ws, ".agentd", "mcp.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	started := func() bool {
		t.Helper()
		h, err := rt.Open(SessionSpec{Workspace: ws, Mode: "ask"})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		for _, st := range h.MCPStatus() {
			if st.Name == "proposed" {
				if st.State != mcp.StateReady {
					t.Fatalf("the proposed server was started but is %s: %s", st.State, st.Error)
				}
				return true
			}
		}
		return false
	}
	approve := func() {
		t.Helper()
		ps, _ := mcp.LoadProposals(ws)
		if len(ps) != 1 {
			t.Fatalf("proposals %+v", ps)
		}
		if err := mcp.OpenApprovals(loc.StateDir).Approve(ws, ps[0]); err != nil {
			t.Fatal(err)
		}
	}
	propose("/")
	approve() // approved, but the workspace is not trusted
	if started() {
		t.Fatal("a server proposed by an untrusted workspace was started")
	}
	ts, err := policy.OpenTrust(loc.TrustFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Trust(ws); err != nil {
		t.Fatal(err)
	}
	if !started() {
		t.Fatal("the approved proposal of a trusted workspace was not started")
	}
	propose("/other") // the definition changed after approval
	if started() {
		t.Fatal("a changed definition was started without a new approval")
	}
	approve()
	if !started() {
		t.Fatal("the re-approved definition was not started")
	}
	// A fresh state directory has no approvals: trusted but unapproved does not start.
	if err := os.Remove(filepath.Join(loc.StateDir, mcp.ApprovalsFile)); err != nil {
		t.Fatal(err)
	}
	if started() {
		t.Fatal("an unapproved proposal was started")
	}
}
