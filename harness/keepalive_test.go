package harness

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/policy"
)

// TestModelKeptLoadedWhileASessionLives: every request of a session asks Ollama to keep the model
// loaded for DefaultKeepAlive (a review can outlast Ollama's own 5 minutes), and when the last
// session ends the model is handed back to Ollama's 5 minutes — not before.
func TestModelKeptLoadedWhileASessionLives(t *testing.T) {
	fake := ollamatest.NewServer(&ollamatest.Script{Models: []ollamatest.Model{
		{Name: "qwen3:8b", Capabilities: []string{"completion", "tools"}, ContextLength: 40960},
	}})
	t.Cleanup(fake.Close)
	home := t.TempDir()
	rt, err := NewRuntime(Options{
		Version: "test", OllamaHost: fake.URL, Model: "qwen3:8b",
		StateDir: filepath.Join(home, "state"), BuildCache: filepath.Join(home, "cache"),
		Policy: policy.Locations{ConfigDir: filepath.Join(home, "config"), StateDir: filepath.Join(home, "state")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	ws := t.TempDir()
	first, err := rt.Open(SessionSpec{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	second, err := rt.Open(SessionSpec{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}

	fake.Enqueue(ollamatest.Text("hello"))
	ends := make(chan agent.TurnEnd, 1)
	sess, err := first.Start(context.Background(), nil, func(e agent.Event) {
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
	sess.Close()
	chats := fake.Chats()
	if len(chats) != 1 {
		t.Fatalf("%d chat requests, want 1", len(chats))
	}
	if ka := chats[0].Request.KeepAlive; ka == nil || ka.Duration != DefaultKeepAlive {
		t.Errorf("the session's request keeps the model loaded for %v, want %v: %s", ka, DefaultKeepAlive, chats[0].Body)
	}

	first.Close()
	if n := len(fake.Chats()); n != 1 {
		t.Errorf("closing one of two sessions sent %d requests, want none (the other still uses the model)", n-1)
	}
	second.Close()
	chats = fake.Chats()
	if len(chats) != 2 {
		t.Fatalf("closing the last session sent %d requests, want 1 (the release)", len(chats)-1)
	}
	if rel := chats[1].Request; len(rel.Messages) != 0 || rel.KeepAlive == nil || rel.KeepAlive.Duration != ollama.ServerKeepAlive {
		t.Errorf("release request %s, want no messages and keep_alive %v", chats[1].Body, ollama.ServerKeepAlive)
	}
	second.Close() // a second Close releases nothing more
	if n := len(fake.Chats()); n != 2 {
		t.Errorf("a second Close sent %d more requests", n-2)
	}
}
