package daemon

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

// A session whose tool definitions take more than a quarter of its window (here the seven
// built-ins in the editor's 4096-token context length) says so in its info from session/new on,
// with what to do.
func TestSessionInfoWarnsWhenToolsCrowdTheWindow(t *testing.T) {
	env := newEnv(t, map[string]string{"main.go": "package main\n"})
	ed := env.editorWith(rpc.InitializationOptions{ProtocolVersion: 1, Reviews: true, ContextLength: 4096})
	var res rpc.SessionNewResult
	ed.mustCall(rpc.MethodSessionNew, rpc.SessionNewParams{}, &res)
	if len(res.Session.Warnings) != 1 || !strings.Contains(res.Session.Warnings[0], "of the 4096-token context window") {
		t.Fatalf("session/new info warnings %q", res.Session.Warnings)
	}
	env.ollama.Enqueue(ollamatest.Text("ok"))
	ed.prompt(res.Session.SessionID, "hi")
	if u := ed.turnEnd(); u.Reason != "done" {
		t.Fatalf("turn ended with %+v", u)
	}
	var list rpc.SessionListResult
	ed.mustCall(rpc.MethodSessionList, rpc.SessionListParams{}, &list)
	if len(list.Sessions) != 1 || len(list.Sessions[0].Warnings) != 1 {
		t.Fatalf("sessions %+v, want one with a warning", list.Sessions)
	}
	w := list.Sessions[0].Warnings[0]
	if !strings.Contains(w, "of the 4096-token context window") || !strings.Contains(w, "context-length") {
		t.Errorf("warning %q", w)
	}
}
