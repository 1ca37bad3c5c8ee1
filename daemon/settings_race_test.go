package daemon

import (
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

// TestModeChangeDuringAStreamingTurn: while the model streams a long reply, one editor changes
// the approval mode again and again and another lists the sessions (the session's info, which
// reads the harness's settings). Under -race this fails if the settings are read without the
// harness's lock; the last mode set is the one the session reports.
func TestModeChangeDuringAStreamingTurn(t *testing.T) {
	env := newEnv(t, map[string]string{"main.go": "package main\n"})
	words := make([]string, 400)
	for i := range words {
		words[i] = "word"
	}
	env.ollama.Enqueue(ollamatest.Reply{Text: strings.Join(words, " "), ChunkDelay: ollamatest.Duration(500_000)})

	a, b := env.editor(true), env.editor(true)
	session := a.newSession()
	a.prompt(session, "say many words")
	a.waitFor("the first text delta", func(n note) bool {
		return n.method == rpc.MethodSessionUpdate && strings.Contains(string(n.params), `"`+rpc.UpdateTextDelta+`"`)
	})

	done := make(chan struct{})
	var wg sync.WaitGroup
	var modeCalls, listCalls int
	wg.Add(2)
	go func() {
		defer wg.Done()
		modes := []string{"auto-edit", "plan", "ask"}
		for i := 0; ; i++ {
			select {
			case <-done:
				if i >= 3 {
					return
				}
			default:
			}
			var res rpc.SessionSetModeResult
			if err := a.call(rpc.MethodSessionSetMode, rpc.SessionSetModeParams{SessionID: session, ApprovalMode: modes[i%3]}, &res); err != nil {
				t.Errorf("session/setMode: %v", err)
				return
			}
			if res.ApprovalMode != modes[i%3] {
				t.Errorf("session/setMode %s answered %s", modes[i%3], res.ApprovalMode)
			}
			modeCalls++
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				if i >= 3 {
					return
				}
			default:
			}
			var res rpc.SessionListResult
			if err := b.call(rpc.MethodSessionList, rpc.SessionListParams{}, &res); err != nil {
				t.Errorf("session/list: %v", err)
				return
			}
			listCalls++
		}
	}()
	end := a.turnEnd()
	close(done)
	wg.Wait()
	if end.Type != rpc.UpdateTurnCompleted {
		t.Fatalf("the turn ended with %s, want %s", end.Type, rpc.UpdateTurnCompleted)
	}
	t.Logf("%d mode changes and %d session lists during the turn", modeCalls, listCalls)

	var res rpc.SessionSetModeResult
	a.mustCall(rpc.MethodSessionSetMode, rpc.SessionSetModeParams{SessionID: session, ApprovalMode: "plan"}, &res)
	var list rpc.SessionListResult
	b.mustCall(rpc.MethodSessionList, rpc.SessionListParams{}, &list)
	for _, s := range list.Sessions {
		if s.SessionID == session {
			if s.ApprovalMode != "plan" {
				t.Errorf("session/list reports mode %q after setMode plan", s.ApprovalMode)
			}
			return
		}
	}
	t.Errorf("session %s missing from session/list", session)
}
