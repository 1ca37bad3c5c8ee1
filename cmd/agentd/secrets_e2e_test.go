package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
)

// toolResults returns the tool messages of the model's longest history, in order.
func (e *runEnv) toolResults() []string {
	var out []string
	for _, c := range e.ollama.Chats() { // the request that carried the most history
		if rs := c.ToolResults(); len(rs) > len(out) {
			out = rs
		}
	}
	return out
}

// grep through the real binary never hands the model what .env or a private key holds; named as
// the path, the search asks like a read (and, with no one to ask, is refused).
func TestRunGrepDoesNotPrintSecrets(t *testing.T) {
	e := newRunEnv(t)
	for name, content := range map[string]string{
		".env": "API_KEY=sk-live-0123\n", "keys/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nsk-live-4567\n",
	} {
		p := filepath.Join(e.ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("grep", `{"pattern":"sk-live|API_KEY"}`)),
		ollamatest.Calls(ollamatest.Call("grep", `{"pattern":"sk-live","glob":".env*"}`)),
		ollamatest.Calls(ollamatest.Call("grep", `{"pattern":"sk-live","path":"keys/id_rsa"}`)),
		ollamatest.Text("Nothing found."),
	)
	cmd := exec.Command(agentdBin, "run", "--approval", "yolo", "find the key")
	cmd.Dir, cmd.Env = e.ws, e.env()
	out, err := cmd.CombinedOutput()
	// Exit 5: the third grep needed an approval no one could give, which stops the turn (the
	// model sees its result only when the session continues; stderr has it in full).
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitNoApprove {
		t.Fatalf("%v (want exit status %d)\n%s", err, exitNoApprove, out)
	}
	results := append(e.toolResults(), string(out))
	if len(results) != 3 {
		t.Fatalf("%d tool results, want 2 and the output: %q\n%s", len(results), results, out)
	}
	for i, r := range results {
		if strings.Contains(r, "sk-live-") || strings.Contains(r, "BEGIN OPENSSH") {
			t.Errorf("grep %d handed the model a secret:\n%s", i+1, r)
		}
	}
	for _, r := range results[:2] {
		if !strings.Contains(r, "not searched because") || !strings.Contains(r, "read it or grep with its path") {
			t.Errorf("the result does not say what was skipped and how to see it:\n%s", r)
		}
	}
	if !strings.Contains(results[2], "no one can approve") {
		t.Errorf("grep of a named key was not asked about (and refused without a terminal):\n%s", results[2])
	}
}
