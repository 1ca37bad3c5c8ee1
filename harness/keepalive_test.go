package harness

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/policy"
)

// TestNextSessionFindsTheModelWarm: ending a session sends nothing to Ollama (it used to hand the
// model back with a request that carried no options, which made Ollama reload the model at its
// default window, and the next session reload it again — cold, every time), requests carry no
// keep_alive unless the user configured one (the server's own applies), and a session started
// afterwards by another agentd process in another workspace — here with project instructions at
// their cap, which once could choose another window and reload the model — is served by the same
// runner, whose prompt cache holds the system prompt and the tools.
func TestNextSessionFindsTheModelWarm(t *testing.T) {
	fake := ollamatest.NewServer(&ollamatest.Script{Models: []ollamatest.Model{
		{Name: "qwen3:8b", Capabilities: []string{"completion", "tools"}, ContextLength: 40960},
	}})
	t.Cleanup(fake.Close)
	home := t.TempDir()
	session := func(ws string) []ollamatest.ChatRecord {
		t.Helper()
		rt, err := NewRuntime(Options{
			Version: "test", OllamaHost: fake.URL, Model: "qwen3:8b",
			StateDir: filepath.Join(home, "state"), BuildCache: filepath.Join(home, "cache"),
			Policy: policy.Locations{ConfigDir: filepath.Join(home, "config"), StateDir: filepath.Join(home, "state")},
		})
		if err != nil {
			t.Fatal(err)
		}
		h, err := rt.Open(SessionSpec{Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		fake.Enqueue(ollamatest.Text("hello"))
		ends := make(chan agent.TurnEnd, 1)
		sess, err := h.Start(context.Background(), nil, func(e agent.Event) {
			if te, ok := e.(agent.TurnEnd); ok {
				ends <- te
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sess.Prompt("hi"); err != nil {
			t.Fatal(err)
		}
		select {
		case end := <-ends:
			if end.Reason != "done" {
				t.Fatalf("turn ended %q: %v", end.Reason, end.Err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("timed out waiting for the turn's end")
		}
		before := len(fake.Chats())
		sess.Close()
		h.Close()
		rt.Close()
		chats := fake.Chats()
		if len(chats) != before {
			t.Errorf("ending the session sent %d requests to Ollama, want none: %s", len(chats)-before, chats[len(chats)-1].Body)
		}
		return chats
	}
	session(t.TempDir())
	big := t.TempDir()
	if err := os.WriteFile(filepath.Join(big, "AGENTS.md"), bytes.Repeat([]byte("Run the tests before you finish.\n"), agent.MaxInstructionsBytes/32), 0o644); err != nil {
		t.Fatal(err)
	}
	loc := policy.Locations{ConfigDir: filepath.Join(home, "config"), StateDir: filepath.Join(home, "state")}
	ts, err := policy.OpenTrust(loc.TrustFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Trust(big); err != nil {
		t.Fatal(err)
	}
	chats := session(big)
	if len(chats) != 2 {
		t.Fatalf("%d chat requests, want one per session", len(chats))
	}
	first, second := chats[0], chats[1]
	if first.Load != "load" || second.Load != "" {
		t.Errorf("the first session's request: %q, the second's: %q; want load, then the same runner", first.Load, second.Load)
	}
	for _, c := range chats {
		if c.Request.KeepAlive != nil {
			t.Errorf("a request sent keep_alive %v, want none (the server's own applies): %s", c.Request.KeepAlive, c.Body)
		}
	}
	if !strings.Contains(second.Request.Messages[1].Content, "Run the tests before you finish.") {
		t.Errorf("the second session did not send its project instructions: %s", second.Body)
	}
	// What the second session's first request evaluates anew is its context block (workspace
	// path, git state, instructions) and the user's message: the system prompt and the tool
	// schemas are cached.
	if fresh := second.PromptTokens - second.CachedTokens; second.CachedTokens == 0 || fresh > agent.MaxInstructionsBytes/4+200 {
		t.Errorf("the second session's first request evaluates %d of %d prompt tokens anew, want only its context block and message", fresh, second.PromptTokens)
	}
	t.Logf("second session, first request: %d prompt tokens, %d cached, %d evaluated anew", second.PromptTokens, second.CachedTokens, second.PromptTokens-second.CachedTokens)
}
