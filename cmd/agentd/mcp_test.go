package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/internal/termtext"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools/sandbox"
)

// TestMCPApproveAndDoctorListProposals: doctor lists an unapproved proposal with the command that
// approves it; `agentd mcp approve` refuses in an untrusted workspace, approves with --yes in a
// trusted one, and doctor then shows it approved and starts it.
func TestMCPApproveAndDoctorListProposals(t *testing.T) {
	home := t.TempDir()
	loc := policy.Locations{ConfigDir: filepath.Join(home, "config"), StateDir: filepath.Join(home, "state")}
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".agentd"), 0o755)
	os.WriteFile(filepath.Join(ws, ".agentd", "mcp.json"), []byte(`{"mcpServers":{"web":{"url":"http://127.0.0.1:9/mcp"}}}`), 0o644)
	t.Chdir(ws)
	doctor := func() string {
		var b strings.Builder
		doctorMCP(termtext.New(&b, false), harness.Options{Policy: loc}, sandbox.Features{},
			func(ok bool, what, detail, fix string) { b.WriteString(what + ": " + detail + " fix: " + fix + "\n") },
			func(what, detail, fix string) { b.WriteString(what + ": " + detail + " fix: " + fix + "\n") })
		return b.String()
	}
	var out bytes.Buffer
	if code := mcpApprove(loc, ws, "web", true, nil, &out); code != 1 {
		t.Fatalf("approve in an untrusted workspace: exit %d, %s", code, out.String())
	}
	if d := doctor(); !strings.Contains(d, "mcp proposal web: ignored: the workspace is not trusted") {
		t.Fatalf("doctor, untrusted:\n%s", d)
	}
	ts, _ := policy.OpenTrust(loc.TrustFile())
	if err := ts.Trust(ws); err != nil {
		t.Fatal(err)
	}
	if d := doctor(); !strings.Contains(d, "mcp proposal web: not approved") || !strings.Contains(d, "fix: agentd mcp approve web") {
		t.Fatalf("doctor, trusted and unapproved:\n%s", d)
	}
	out.Reset()
	if code := mcpApprove(loc, ws, "web", false, strings.NewReader("n\n"), &out); code != 1 {
		t.Fatalf("answered no: exit %d, %s", code, out.String())
	}
	out.Reset()
	if code := mcpApprove(loc, ws, "web", true, nil, &out); code != 0 || !strings.Contains(out.String(), "approved web") {
		t.Fatalf("approve --yes: exit %d, %s", code, out.String())
	}
	out.Reset()
	if code := mcpApprove(loc, ws, "", false, nil, &out); code != 0 || !strings.Contains(out.String(), "web (.agentd/mcp.json): approved") {
		t.Fatalf("list: exit %d, %s", code, out.String())
	}
	if d := doctor(); !strings.Contains(d, "mcp proposal web: approved (.agentd/mcp.json)") || !strings.Contains(d, "\nmcp web: ") {
		t.Fatalf("doctor, approved:\n%s", d)
	}
}
