package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
)

// TestRunSaysWhichProjectInstructionsItUses: `agentd run` names the AGENTS.md it gives the model
// on stderr, and says when it ignores one because the workspace is not trusted.
func TestRunSaysWhichProjectInstructionsItUses(t *testing.T) {
	e := newRunEnv(t)
	text := strings.Repeat("Run `go test ./...` before you answer.\n", 32) // 1248 bytes
	if err := os.WriteFile(filepath.Join(e.ws, "AGENTS.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (stdout, stderr string) {
		t.Helper()
		e.ollama.Enqueue(ollamatest.Text("Nothing to do."))
		cmd := exec.Command(agentdBin, "run", "look around")
		cmd.Dir, cmd.Env = e.ws, e.env()
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	lastUser := func() string { // the first user message of the last turn's request
		chats := e.ollama.Chats()
		for i := len(chats) - 1; i >= 0; i-- { // the last request may be the release (no messages)
			if msgs := chats[i].Request.Messages; len(msgs) >= 2 {
				return msgs[1].Content
			}
		}
		t.Fatal("no chat request with messages")
		return ""
	}

	_, stderr := run()
	if !strings.Contains(stderr, "agentd: AGENTS.md not used: the workspace is not trusted\n") {
		t.Errorf("untrusted workspace: stderr lacks the note:\n%s", stderr)
	}
	if strings.Contains(lastUser(), "go test ./...") {
		t.Error("an untrusted workspace's AGENTS.md reached the model")
	}

	state := filepath.Join(e.home, "state", "agentd")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "trusted-workspaces"), []byte(e.ws+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr = run()
	if !strings.Contains(stderr, "agentd: using AGENTS.md (1.2 KB)\n") {
		t.Errorf("trusted workspace: stderr lacks the note:\n%s", stderr)
	}
	if !strings.Contains(lastUser(), "go test ./...") {
		t.Error("a trusted workspace's AGENTS.md did not reach the model")
	}
}
