package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/tools/sandbox"
)

// TestCommandPermissionShowsTheExactCommand: the permission request for a command carries the
// exact command line, its working directory and the sandbox, with kind execute; allowed once, it
// runs in the sandbox and its output reaches the client in the tool call's update.
func TestCommandPermissionShowsTheExactCommand(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	fake := ollamatest.NewServer(&ollamatest.Script{Turns: []ollamatest.Turn{
		{When: &ollamatest.Match{LastRole: "user"}, Reply: ollamatest.Reply{ToolCalls: []ollamatest.ToolCall{
			{Name: "bash", Arguments: json.RawMessage(`{"command": "touch made-by-acp.txt && echo acp-command-ran"}`)}}}},
		{Repeat: true, Reply: ollamatest.Reply{Text: "done"}},
	}})
	t.Cleanup(fake.Close)
	rt := homeRuntime(t, home, fake.URL)
	if _, why := rt.Sandbox(); why != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no sandbox on this machine: %v", why)
		}
		t.Skipf("no sandbox on this machine: %v", why)
	}
	p := promptedPeer(t, rt, ws, "make the file")
	perm := p.until("the permission request", func(m map[string]any) bool { return m["method"] == "session/request_permission" })
	raw, _ := json.Marshal(perm["params"])
	shown := string(raw)
	for _, want := range []string{`"kind":"execute"`, "touch made-by-acp.txt \u0026\u0026 echo acp-command-ran", "in " + ws, "sandbox: "} {
		if !strings.Contains(shown, want) && !strings.Contains(shown, strings.ReplaceAll(want, "\u0026", `\u0026`)) {
			t.Errorf("the permission request does not show %q:\n%s", want, shown)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "made-by-acp.txt")); !os.IsNotExist(err) {
		t.Fatalf("the command ran before it was allowed (%v)", err)
	}
	id, _ := json.Marshal(perm["id"])
	p.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`)
	p.until("the command's output in a tool call update", func(m map[string]any) bool {
		b, _ := json.Marshal(m)
		return m["method"] == "session/update" && strings.Contains(string(b), "acp-command-ran") && strings.Contains(string(b), "tool_call_update")
	})
	if end := p.until("the prompt's response", isResponse(3)); end["result"] == nil {
		t.Fatalf("prompt response: %v", end)
	}
	if _, err := os.Stat(filepath.Join(ws, "made-by-acp.txt")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
}

// TestCommandChangeNeedingReviewIsAPermissionWithItsDiff: a hook a command wrote comes to the
// client after the command ran as a second permission request of the command's tool call, with
// the diff (oldText null: a new file) and a title naming the command; allowed, it is written.
func TestCommandChangeNeedingReviewIsAPermissionWithItsDiff(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	ws, _ = filepath.EvalSymlinks(ws)
	fake := ollamatest.NewServer(&ollamatest.Script{Turns: []ollamatest.Turn{
		{When: &ollamatest.Match{LastRole: "user"}, Reply: ollamatest.Reply{ToolCalls: []ollamatest.ToolCall{
			{Name: "bash", Arguments: json.RawMessage(`{"command": "d=.hus; mkdir -p ${d}ky && echo hook > ${d}ky/pre-commit"}`)}}}},
		{Repeat: true, Reply: ollamatest.Reply{Text: "done"}},
	}})
	t.Cleanup(fake.Close)
	rt := homeRuntime(t, home, fake.URL)
	if sb, why := rt.Sandbox(); sb == nil || sb.Mode() != sandbox.ModeBwrap {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no bubblewrap sandbox on this machine: %v", why)
		}
		t.Skipf("BUBBLEWRAP UNAVAILABLE (no copy-on-write layer), not tested: %v", why)
	}
	p := promptedPeer(t, rt, ws, "set up the hook")
	allow := func(perm map[string]any) {
		id, _ := json.Marshal(perm["id"])
		p.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`)
	}
	isPerm := func(m map[string]any) bool { return m["method"] == "session/request_permission" }
	allow(p.until("the command's permission request", isPerm)) // ask mode: the command asks
	perm := p.until("the hook's permission request", isPerm)
	params, _ := perm["params"].(map[string]any)
	tc, _ := params["toolCall"].(map[string]any)
	content, _ := tc["content"].([]any)
	var diff map[string]any
	if len(content) == 1 {
		diff, _ = content[0].(map[string]any)
	}
	if diff == nil || diff["type"] != "diff" || diff["path"] != filepath.Join(ws, ".husky/pre-commit") || diff["oldText"] != nil ||
		diff["newText"] != "hook\n" {
		t.Fatalf("the hook's permission request does not carry its diff: %v", params)
	}
	if title, _ := tc["title"].(string); !strings.HasPrefix(title, ".husky/pre-commit, from the command `d=.hus; mkdir") {
		t.Errorf("title %q does not name the command", title)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".husky/pre-commit")); err == nil {
		t.Fatal("the hook was written before it was allowed")
	}
	allow(perm)
	if end := p.until("the prompt's response", isResponse(3)); end["result"] == nil {
		t.Fatalf("prompt response: %v", end)
	}
	if b, err := os.ReadFile(filepath.Join(ws, ".husky/pre-commit")); err != nil || string(b) != "hook\n" {
		t.Errorf("the allowed hook: %q %v", b, err)
	}
}

// promptedPeer starts an ACP connection on rt, opens a session on ws and sends text as its first
// prompt (request 3); the connection and the runtime end with the test.
func promptedPeer(t *testing.T, rt *harness.Runtime, ws, text string) *peer {
	t.Helper()
	p, sid := newSession(t, rt, ws)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"` + text + `"}]}}`)
	return p
}
