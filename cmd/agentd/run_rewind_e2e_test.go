package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
)

// `agentd run --resume ID --at TURN` goes back to before the turn: the files it created are gone
// but the one the user changed since, which is named; the turn's prompt is sent again in a new
// session when no prompt is given.
func TestRunRewindsToATurn(t *testing.T) {
	e := newRunEnv(t)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(agentdBin, args...)
		cmd.Dir, cmd.Env = e.ws, e.env()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("agentd %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("write", `{"path":"one.txt","content":"1\n"}`)), ollamatest.Text("Wrote one."))
	out := run("run", "--approval", "auto-edit", "write one")
	id := regexp.MustCompile(`--resume (s-[0-9a-z-]+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("no session ID in the output:\n%s", out)
	}
	e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("write", `{"path":"two.txt","content":"2\n"}`),
		ollamatest.Call("write", `{"path":"three.txt","content":"3\n"}`)), ollamatest.Text("Wrote two and three."))
	run("run", "--approval", "auto-edit", "--resume", id[1], "write two and three")
	if err := os.WriteFile(filepath.Join(e.ws, "three.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	e.ollama.Enqueue(ollamatest.Text("Not this time."))
	out = run("run", "--approval", "auto-edit", "--resume", id[1], "--at", "t2")
	if _, err := os.Stat(filepath.Join(e.ws, "two.txt")); err == nil {
		t.Error("two.txt, written by the rewound turn, is still there")
	}
	if got := e.read("three.txt"); got != "mine\n" {
		t.Errorf("three.txt = %q: the user's change was overwritten", got)
	}
	if got := e.read("one.txt"); got != "1\n" {
		t.Errorf("one.txt = %q: the earlier turn's file changed", got)
	}
	if !strings.Contains(out, "three.txt left as it is") || !strings.Contains(out, "1 file restored") {
		t.Errorf("the rewind does not say what it restored and left:\n%s", out)
	}
	chats := e.ollama.Chats()
	last := chats[len(chats)-1].Request.Messages
	if p := last[len(last)-1].Content; !strings.HasSuffix(p, "write two and three") {
		t.Errorf("the prompt sent again = %q, want the second turn's", p)
	}
}
