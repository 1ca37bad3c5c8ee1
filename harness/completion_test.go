package harness

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/policy"
)

// TestChatBusyWhileAReplyStreams: ChatBusy is true from the moment a session's model starts a
// reply until the reply ends, and its channel says when that changes; completions wait on it.
func TestChatBusyWhileAReplyStreams(t *testing.T) {
	fake := ollamatest.NewServer(nil)
	t.Cleanup(fake.Close)
	home := t.TempDir()
	rt, err := NewRuntime(Options{Version: "test", OllamaHost: fake.URL, Model: "qwen3:8b",
		StateDir: filepath.Join(home, "state"), BuildCache: filepath.Join(home, "cache"),
		Policy: policy.Locations{ConfigDir: filepath.Join(home, "config"), StateDir: filepath.Join(home, "state")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	h, err := rt.Open(SessionSpec{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	busy, changed := rt.ChatBusy()
	if busy {
		t.Fatal("busy before any turn")
	}
	fake.Enqueue(ollamatest.Reply{Text: "thinking about it", Hang: true})
	ends := make(chan agent.TurnEnd, 1)
	sess, err := h.Start(context.Background(), nil, func(e agent.Event) {
		if te, ok := e.(agent.TurnEnd); ok {
			ends <- te
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	if _, err := sess.Prompt("hi"); err != nil {
		t.Fatal(err)
	}
	wait := func(ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal("ChatBusy's channel was not closed")
		}
	}
	wait(changed)
	if busy, changed = rt.ChatBusy(); !busy {
		t.Fatal("not busy while the reply streams")
	}
	sess.Cancel()
	wait(changed)
	if busy, _ = rt.ChatBusy(); busy {
		t.Fatal("still busy after the turn was cancelled")
	}
	<-ends
}

// TestCompletionModelDefault: without a configured model the default is used and reported as
// not configured; one Infiller is kept per host and model.
func TestCompletionModelDefault(t *testing.T) {
	home := t.TempDir()
	opts := Options{Version: "test", StateDir: filepath.Join(home, "state"),
		Policy: policy.Locations{ConfigDir: filepath.Join(home, "config"), StateDir: filepath.Join(home, "state")}}
	rt, err := NewRuntime(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if m, configured := rt.CompletionModel(); m != DefaultCompletionModel || configured {
		t.Errorf("got %q, %v", m, configured)
	}
	a, _ := rt.Infiller("", "m")
	b, _ := rt.Infiller("", "m")
	c, _ := rt.Infiller("", "other")
	if a != b || a == c {
		t.Errorf("infillers not kept per model: %p %p %p", a, b, c)
	}
	opts.CompletionModel = "starcoder2:3b"
	rt2, err := NewRuntime(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	if m, configured := rt2.CompletionModel(); m != "starcoder2:3b" || !configured {
		t.Errorf("got %q, %v", m, configured)
	}
}
