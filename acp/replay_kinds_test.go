package acp

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/policy"
	"github.com/ollama/ollama/api"
)

// session/load replays agentd's own messages as what they are: after a compaction (forced by an
// overflow) and the loop's nudge after an empty reply, the only user chunk is the user's prompt;
// the summary is an agent message saying the context was compacted; the nudge and the summary's
// answer are not replayed.
func TestLoadReplaysNoAgentdMessageAsTheUsers(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	isSummary := func(r *api.ChatRequest) bool {
		return len(r.Messages) > 0 && strings.HasPrefix(r.Messages[0].Content, "Summarize the conversation")
	}
	fake := ollamatest.NewServer(&ollamatest.Script{Turns: []ollamatest.Turn{
		{When: &ollamatest.Match{Func: isSummary}, Reply: ollamatest.Reply{Text: "SUMMARY-OF-TURN-ONE"}},
		{When: &ollamatest.Match{LastContains: "first"}, Reply: ollamatest.Reply{Text: "Hello."}},
		{When: &ollamatest.Match{LastContains: "second"}, Reply: ollamatest.Reply{Status: 400, Error: "the input length exceeds the context length"}},
		{When: &ollamatest.Match{LastContains: "second"}, Reply: ollamatest.Reply{Text: ""}},
		{Repeat: true, Reply: ollamatest.Reply{Text: "Done."}},
	}})
	t.Cleanup(fake.Close)
	rt := homeRuntime(t, home, fake.URL)
	p, sid := newSession(t, rt, ws)
	for i, text := range []string{"first", "second"} {
		id := 3 + i
		p.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"` + text + `"}]}}`)
		m := p.until("the answer to the prompt "+text, isResponse(float64(id)))
		if r, _ := m["result"].(map[string]any); r == nil || r["stopReason"] != "end_turn" {
			t.Fatalf("prompt %q: %v", text, m)
		}
	}

	got := loadChunks(t, p, 9, sid, ws)
	want := []string{
		"agent_message_chunk: " + compactedPrefix + "SUMMARY-OF-TURN-ONE",
		"user_message_chunk: second",
		"agent_message_chunk: Done.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("replayed chunks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// session/load replays a prompt an editor sent with context (here through the daemon's path,
// harness.Session.PromptWithContext) as the user's words: the context appended for the model is
// not sent again as the user's.
func TestLoadReplaysTheUsersWordsWithoutTheEditorContext(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	fake := ollamatest.NewServer(&ollamatest.Script{Turns: []ollamatest.Turn{{Repeat: true, Reply: ollamatest.Reply{Text: "Seen."}}}})
	t.Cleanup(fake.Close)
	rt := homeRuntime(t, home, fake.URL)
	h, err := rt.Open(harness.SessionSpec{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	s := harness.NewSession(h, nil)
	ended := make(chan struct{}, 1)
	_, detach := s.Attach(func(u harness.Update) {
		if _, ok := u.Event.(agent.TurnEnd); ok {
			ended <- struct{}{}
		}
	})
	if _, err := s.PromptWithContext(context.Background(), "why is it wrong?",
		agent.EditorContext{Text: "\n\nThe user is looking at cart.go.\n", Labels: []string{"cart.go"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(60 * time.Second):
		t.Fatal("the turn did not end")
	}
	detach()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	p := newPeer(t, rt)
	t.Cleanup(func() { p.in.Close(); <-p.done; rt.Close() })
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	p.until("the initialize response", isResponse(1))
	got := loadChunks(t, p, 2, h.ID(), ws)
	want := []string{"user_message_chunk: why is it wrong?", "agent_message_chunk: Seen."}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("replayed chunks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// loadChunks sends session/load (request id) and returns the message chunks it replays, as
// "kind: text", until its answer.
func loadChunks(t *testing.T, p *peer, id int, sid, ws string) []string {
	t.Helper()
	p.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"session/load","params":{"sessionId":"` + sid + `","cwd":"` + ws + `","mcpServers":[]}}`)
	var got []string
	for {
		m := p.next("the session/load replay and answer")
		if isResponse(float64(id))(m) {
			if m["error"] != nil {
				t.Fatalf("session/load: %v", m)
			}
			return got
		}
		params, _ := m["params"].(map[string]any)
		u, _ := params["update"].(map[string]any)
		if m["method"] != "session/update" || u == nil {
			continue
		}
		kind, _ := u["sessionUpdate"].(string)
		if c, _ := u["content"].(map[string]any); c != nil && strings.HasSuffix(kind, "_chunk") {
			got = append(got, kind+": "+c["text"].(string))
		}
	}
}

// homeRuntime is a runtime whose state, build cache and config live under home, on the model
// server at url.
func homeRuntime(t *testing.T, home, url string) *harness.Runtime {
	t.Helper()
	rt, err := harness.NewRuntime(harness.Options{Version: "test", OllamaHost: url, Model: "qwen3:8b",
		StateDir: filepath.Join(home, "state"), BuildCache: filepath.Join(home, "cache"),
		Policy: policy.Locations{ConfigDir: filepath.Join(home, "config"), StateDir: filepath.Join(home, "state")}})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}
