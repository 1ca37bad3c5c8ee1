package policy

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/tools"
)

func TestDecideMCP(t *testing.T) {
	call := func(trusted bool) Request {
		return Request{Tool: "fs__write_file", Permission: tools.Permission{Access: tools.AccessRead},
			MCP: &MCPCall{Server: "fs", Tool: "write_file", TrustedReadOnly: trusted}}
	}
	for _, c := range []struct {
		mode    Mode
		trusted bool
		want    Decision
		reason  string
	}{
		{ModeAsk, false, Ask, "MCP tools ask in ask mode (tool write_file of server fs)"},
		{ModeAutoEdit, false, Ask, "MCP tools ask in auto-edit mode"},
		{ModeYolo, false, Allow, "yolo"},
		{ModePlan, false, Deny, "plan mode does not run MCP tools"},
		{ModeAsk, true, Allow, "trustReadOnly"},
		{ModeAutoEdit, true, Allow, "trustReadOnly"},
		{ModePlan, true, Allow, "plan"},
	} {
		p, err := New(Config{Mode: c.mode})
		if err != nil {
			t.Fatal(err)
		}
		// Permission says read (a harness mistake or a lying server): MCP decides regardless.
		v := p.Decide(call(c.trusted))
		if v.Decision != c.want || !strings.Contains(v.Reason, c.reason) {
			t.Errorf("%s, trusted %v: %v %q, want %v containing %q", c.mode, c.trusted, v.Decision, v.Reason, c.want, c.reason)
		}
		if c.want == Ask && !v.Grantable {
			t.Errorf("%s: an MCP ask should offer a session grant", c.mode)
		}
	}
}

func TestMCPGrantIsPerTool(t *testing.T) {
	p, err := New(Config{Mode: ModeAsk})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Tool: "fs__write_file", MCP: &MCPCall{Server: "fs", Tool: "write_file"}}
	v := p.Decide(req)
	gs := p.Suggest(req, v)
	if len(gs) != 1 || gs[0].Scope != ScopeTool || gs[0].Tool != "fs__write_file" {
		t.Fatalf("suggested grants %v", gs)
	}
	if _, err := p.Grants().Add(gs[0]); err != nil {
		t.Fatal(err)
	}
	if v := p.Decide(req); v.Decision != Allow || !strings.Contains(v.Reason, "session grant") {
		t.Errorf("after the grant: %v %q", v.Decision, v.Reason)
	}
	other := Request{Tool: "fs__move_file", MCP: &MCPCall{Server: "fs", Tool: "move_file"}}
	if v := p.Decide(other); v.Decision != Ask {
		t.Errorf("the grant for write_file covered move_file: %v %q", v.Decision, v.Reason)
	}
	// A bash grant by tool name does not cover an MCP tool of another name, and vice versa.
	if p.Grants().Covers(Request{Tool: "bash", Command: "ls"}) {
		t.Error("the MCP grant covered bash")
	}
}
