package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.lsp.dev/jsonrpc2"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools/mcp"
)

// tinyPNG is a result image's data (its bytes only matter for the size shown).
var tinyPNG = []byte("\x89PNG\r\n\x1a\n-not-really-an-image-but-47-bytes-long-----")

// probeServer is an MCP server on loopback (go-sdk, streamable HTTP) with a tool that echoes its
// word with an image, and a tool that always fails.
func probeServer(t *testing.T) string {
	srv := sdk.NewServer(&sdk.Implementation{Name: "probe", Version: "1.0"}, nil)
	srv.AddTool(&sdk.Tool{Name: "ping", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"word": map[string]any{"type": "string"}, "times": map[string]any{"type": "integer"}}}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct {
				Word string `json:"word"`
			}
			json.Unmarshal(req.Params.Arguments, &a)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong " + a.Word},
				&sdk.ImageContent{MIMEType: "image/png", Data: tinyPNG}, &sdk.TextContent{Text: "after the image"}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "fail", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the probe is broken"}}}, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// mcpEnv is a workspace that proposes the probe server in .agentd/mcp.json, trusted or not.
func mcpEnv(t *testing.T, trusted bool) (*testEnv, policy.Locations) {
	url := probeServer(t)
	var loc policy.Locations
	env := newEnvWith(t, map[string]string{".agentd/mcp.json": `{"mcpServers":{"probe":{"url":"` + url + `"}}}`},
		func(o *harness.Options) { loc = o.Policy })
	if trusted {
		ts, err := policy.OpenTrust(loc.TrustFile())
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.Trust(env.ws); err != nil {
			t.Fatal(err)
		}
	}
	return env, loc
}

func rpcCode(err error) jsonrpc2.Code {
	var rerr *jsonrpc2.Error
	if errors.As(err, &rerr) {
		return rerr.Code
	}
	return 0
}

// TestMCPProposalApprovalFromTheEditor: in a trusted workspace, mcp/proposals shows the proposed
// server's exact definition, mcp/approve records the approval `agentd mcp approve` records (bound
// to the definition shown), and the server starts in the next session, not in the running one.
func TestMCPProposalApprovalFromTheEditor(t *testing.T) {
	env, loc := mcpEnv(t, true)
	ed := env.editor(true)
	var got rpc.MCPProposalsResult
	ed.mustCall(rpc.MethodMCPProposals, rpc.MCPProposalsParams{}, &got)
	if !got.Trusted || len(got.Proposals) != 1 || got.WorkspaceFolder != fileURI(env.ws) {
		t.Fatalf("mcp/proposals = %+v", got)
	}
	p := got.Proposals[0]
	if p.Name != "probe" || p.File != filepath.Join(".agentd", "mcp.json") || p.Transport != "http" || !strings.HasPrefix(p.URL, "http://127.0.0.1:") ||
		p.State != rpc.ProposalNeedsApproval || !strings.HasPrefix(p.Hash, "sha256:") || p.Network {
		t.Fatalf("proposal = %+v", p)
	}
	running := ed.newSession()

	// Bad input: typed errors, and nothing approved.
	for _, c := range []struct {
		params any
		code   jsonrpc2.Code
		want   string
	}{
		{map[string]any{"name": "probe"}, rpc.CodeInvalidParams, "name and hash"},
		{map[string]any{"hash": p.Hash}, rpc.CodeInvalidParams, "name and hash"},
		{map[string]any{"name": "probe", "hash": p.Hash, "yes": true}, rpc.CodeInvalidParams, "unknown field"},
		{map[string]any{"name": "nope", "hash": p.Hash}, rpc.CodeInvalidParams, `no MCP server named "nope"`},
		{map[string]any{"name": "probe", "hash": "sha256:0000"}, rpc.CodeRequestFailed, "changed since it was shown"},
		{map[string]any{"name": "probe", "hash": p.Hash, "workspaceFolder": "file:///etc"}, rpc.CodeWorkspace, "not inside a workspace folder"},
		{map[string]any{"name": "probe", "hash": p.Hash, "workspaceFolder": "untitled:x"}, rpc.CodeWorkspace, "file: URI"},
	} {
		err := ed.call(rpc.MethodMCPApprove, c.params, nil)
		if rpcCode(err) != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mcp/approve %v: error %v (code %d), want code %d and %q", c.params, err, rpcCode(err), c.code, c.want)
		}
	}
	if err := ed.call(rpc.MethodMCPProposals, map[string]any{"folder": "x"}, nil); rpcCode(err) != rpc.CodeInvalidParams {
		t.Errorf("mcp/proposals with an unknown field: %v", err)
	}
	if _, err := os.Stat(filepath.Join(loc.StateDir, mcp.ApprovalsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("bad requests wrote the approvals: %v", err)
	}

	var ok rpc.MCPApproveResult
	ed.mustCall(rpc.MethodMCPApprove, rpc.MCPApproveParams{Name: "probe", Hash: p.Hash}, &ok)
	if !ok.Approved || !strings.Contains(ok.Note, "new sessions") {
		t.Fatalf("mcp/approve = %+v", ok)
	}
	// The same record the CLI writes and the harness reads.
	ps, _ := mcp.LoadProposals(env.ws)
	if err := mcp.OpenApprovals(loc.StateDir).Mark(env.ws, ps); err != nil || !ps[0].Approved {
		t.Fatalf("the approval is not in the store: %+v %v", ps, err)
	}
	ed.mustCall(rpc.MethodMCPProposals, rpc.MCPProposalsParams{WorkspaceFolder: fileURI(env.ws)}, &got)
	if got.Proposals[0].State != rpc.ProposalApproved {
		t.Fatalf("after approval: %+v", got.Proposals[0])
	}
	// The running session keeps its tools; a new one has the server's.
	env.srv.mu.Lock()
	old := env.srv.sessions[running]
	env.srv.mu.Unlock()
	if _, has := old.h.Registry().Lookup("probe__ping"); has {
		t.Fatal("the approval changed a running session's tools")
	}
	s := ed.newSession()
	env.srv.mu.Lock()
	fresh := env.srv.sessions[s]
	env.srv.mu.Unlock()
	if _, has := fresh.h.Registry().Lookup("probe__ping"); !has {
		t.Fatalf("the approved server's tools are not in the next session: %v", fresh.h.Registry().Names())
	}
}

// TestMCPProposalsOfAnUntrustedWorkspace: nothing is offered, and nothing can be approved.
func TestMCPProposalsOfAnUntrustedWorkspace(t *testing.T) {
	env, loc := mcpEnv(t, false)
	ed := env.editor(true)
	var got rpc.MCPProposalsResult
	ed.mustCall(rpc.MethodMCPProposals, rpc.MCPProposalsParams{}, &got)
	if got.Trusted || len(got.Proposals) != 0 {
		t.Fatalf("an untrusted workspace's proposals are offered: %+v", got)
	}
	ps, _ := mcp.LoadProposals(env.ws)
	if len(ps) != 1 {
		t.Fatalf("the fixture proposes %+v", ps)
	}
	err := ed.call(rpc.MethodMCPApprove, rpc.MCPApproveParams{Name: "probe", Hash: ps[0].Hash}, nil)
	if rpcCode(err) != rpc.CodeWorkspace || !strings.Contains(err.Error(), "not trusted") {
		t.Fatalf("mcp/approve in an untrusted workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(loc.StateDir, mcp.ApprovalsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an untrusted workspace's proposal was recorded: %v", err)
	}
}

// TestMCPCallsReachTheEditorTyped: an MCP call's updates name the server and the tool, its review
// carries the exact (coerced) arguments, a result's images are listed with their size, and an
// error result is typed.
func TestMCPCallsReachTheEditorTyped(t *testing.T) {
	env, loc := mcpEnv(t, true)
	ps, _ := mcp.LoadProposals(env.ws)
	if err := mcp.OpenApprovals(loc.StateDir).Approve(env.ws, ps[0]); err != nil {
		t.Fatal(err)
	}
	ed := env.editor(true)
	s := ed.newSession()
	// "times" arrives as a string and is coerced: the review shows what will be sent.
	env.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("probe__ping", `{"word":"hi","times":"2"}`)))
	env.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("probe__fail", `{}`)))
	env.ollama.Enqueue(ollamatest.Text("done"))
	ed.prompt(s, "ping the probe")

	var started rpc.SessionUpdateParams
	json.Unmarshal(ed.waitFor("toolCallStarted of probe__ping", func(n note) bool {
		return n.method == rpc.MethodSessionUpdate && strings.Contains(string(n.params), `"toolCallStarted"`) && strings.Contains(string(n.params), "probe__ping")
	}), &started)
	if m := started.Update.ToolCall.MCP; m == nil || m.Server != "probe" || m.Tool != "ping" || m.Arguments != nil {
		t.Errorf("toolCallStarted mcp = %+v", m)
	}
	r := ed.review()
	if r.Kind != rpc.ReviewTool || r.MCP == nil || r.MCP.Server != "probe" || r.MCP.Tool != "ping" || string(r.MCP.Arguments) != `{"times":2,"word":"hi"}` {
		t.Fatalf("review = %+v (mcp %+v)", r, r.MCP)
	}
	ed.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: rpc.DecisionAccept}}, nil)
	var done rpc.SessionUpdateParams
	json.Unmarshal(ed.waitFor("toolCallCompleted of probe__ping", func(n note) bool {
		return n.method == rpc.MethodSessionUpdate && strings.Contains(string(n.params), `"toolCallCompleted"`) && strings.Contains(string(n.params), "probe__ping")
	}), &done)
	tc := done.Update.ToolCall
	// The text blocks on either side of the image do not run together.
	if tc.MCP == nil || tc.MCP.Server != "probe" || tc.Result == nil || tc.Result.Text != "pong hi\nafter the image" ||
		len(tc.Result.Images) != 1 || tc.Result.Images[0] != (rpc.ResultImage{MIMEType: "image/png", Bytes: len(tinyPNG)}) {
		t.Fatalf("toolCallCompleted = %+v (result %+v)", tc, tc.Result)
	}

	r2 := ed.waitFor("the review of probe__fail", func(n note) bool {
		return n.method == rpc.MethodReviewRequested && strings.Contains(string(n.params), "probe__fail")
	})
	var rr rpc.ReviewRequestedParams
	json.Unmarshal(r2, &rr)
	if rr.MCP == nil || rr.MCP.Tool != "fail" || string(rr.MCP.Arguments) != `{}` {
		t.Fatalf("review of fail: %+v", rr.MCP)
	}
	ed.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: rr.ReviewID, Decision: rpc.Decision{Type: rpc.DecisionAccept}}, nil)
	json.Unmarshal(ed.waitFor("toolCallCompleted of probe__fail", func(n note) bool {
		return n.method == rpc.MethodSessionUpdate && strings.Contains(string(n.params), `"toolCallCompleted"`) && strings.Contains(string(n.params), "probe__fail")
	}), &done)
	tc = done.Update.ToolCall
	if tc.Status != rpc.StatusFailed || tc.Result == nil || !tc.Result.IsError || tc.Result.Type != rpc.ResultExecFailed ||
		!strings.Contains(tc.Result.Text, "the probe is broken") || tc.MCP == nil || tc.MCP.Tool != "fail" {
		t.Fatalf("failed call = %+v (result %+v)", tc, tc.Result)
	}
	if u := ed.turnEnd(); u.Type != rpc.UpdateTurnCompleted {
		t.Fatalf("turn ended with %+v", u)
	}
	// The history an attaching editor gets names the server too.
	var att rpc.SessionAttachResult
	ed2 := env.editor(true)
	ed2.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	n := 0
	for _, it := range att.History {
		if it.ToolCall != nil && it.ToolCall.MCP != nil && it.ToolCall.MCP.Server == "probe" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("history: %d MCP calls name their server, want 2: %+v", n, att.History)
	}
}
