package agent_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/tools"
	"github.com/ollama/ollama/api"
)

// These tests drive a session through the real Ollama adapter against the fake server, whose
// record of request bodies shows exactly what was sent.

const overflowMsg = "the input length exceeds the context length"

type noArgs struct{}

type echoTool struct{}

func (echoTool) Name() string        { return "echo" }
func (echoTool) Description() string { return "echo" }
func (echoTool) Spec() *tools.Spec   { return tools.NewSpec[noArgs]() }
func (echoTool) Execute(context.Context, *tools.Call) (tools.Output, error) {
	return tools.Output{Text: "echoed"}, nil
}

type wireSession struct {
	t    *testing.T
	srv  *ollamatest.Server
	s    *agent.Session
	mu   sync.Mutex
	evs  []agent.Event
	ends chan agent.TurnEnd
}

// newWireSession starts a session with an 8192-token window on a model trained for 40960.
func newWireSession(t *testing.T) *wireSession { return newWireSessionTrained(t, 40960) }

// newWireSessionTrained starts a session with an 8192-token window on a model trained for
// `trained` tokens.
func newWireSessionTrained(t *testing.T, trained int) *wireSession {
	t.Helper()
	w := &wireSession{t: t, ends: make(chan agent.TurnEnd, 4)}
	w.srv = ollamatest.NewServer(&ollamatest.Script{Models: []ollamatest.Model{
		{Name: "qwen3:8b", Capabilities: []string{"completion", "tools"}, ContextLength: trained}}})
	t.Cleanup(w.srv.Close)
	c, err := ollama.New(ollama.Config{Host: w.srv.URL, Model: "qwen3:8b"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry(echoTool{})
	if err != nil {
		t.Fatal(err)
	}
	w.s, err = agent.NewSession(agent.SessionConfig{ID: "s1", Model: c, Info: info, NumCtx: 8192,
		Kernel: agent.Config{Registry: reg}, Facts: agent.WorkspaceFacts{Root: "/ws", OS: "linux"},
		Sink: func(e agent.Event) {
			w.mu.Lock()
			w.evs = append(w.evs, e)
			w.mu.Unlock()
			if te, ok := e.(agent.TurnEnd); ok {
				w.ends <- te
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.s.Close)
	return w
}

func (w *wireSession) turn(prompt string) agent.TurnEnd {
	w.t.Helper()
	if _, err := w.s.Prompt(prompt); err != nil {
		w.t.Fatal(err)
	}
	select {
	case e := <-w.ends:
		return e
	case <-time.After(30 * time.Second):
		w.t.Fatalf("waiting for the end of the turn %q: it did not end", prompt)
		return agent.TurnEnd{}
	}
}

func (w *wireSession) compactions() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, e := range w.evs {
		if _, ok := e.(agent.Compacted); ok {
			n++
		}
	}
	return n
}

func isSummaryRequest(r *api.ChatRequest) bool {
	return len(r.Messages) > 0 && strings.HasPrefix(r.Messages[0].Content, "Summarize the conversation")
}

// checkNoIdenticalResend fails when two consecutive chat requests had the same body.
func checkNoIdenticalResend(t *testing.T, chats []ollamatest.ChatRecord) {
	t.Helper()
	for i := 1; i < len(chats); i++ {
		if bytes.Equal(chats[i].Body, chats[i-1].Body) {
			t.Errorf("chat requests %d and %d are identical: a failed request was sent again unchanged", i, i+1)
		}
	}
}

// checkOverflowError checks the turn's error names the window in use, the trained length and the
// user's settings, not num_ctx.
func checkOverflowError(t *testing.T, end agent.TurnEnd, want string) {
	t.Helper()
	var me *agent.ModelError
	if end.Reason != "error" || !errors.As(end.Err, &me) || me.Kind != agent.ErrContextOverflow {
		t.Fatalf("turn end = %+v, want a context_overflow error", end)
	}
	text := me.Message + "\n" + me.Fix
	for _, s := range []string{want, "8192 tokens", "trained for 40960 tokens", "--context-length",
		"`context-length N` in the config", "AGENTD_CONTEXT_LENGTH", "up to the model's trained 40960"} {
		if !strings.Contains(text, s) {
			t.Errorf("the overflow message lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, "num_ctx") {
		t.Errorf("the overflow message names num_ctx, which users cannot set:\n%s", text)
	}
}

// The first turn is the whole history: compaction cannot shrink it, so the request that
// overflowed is not sent again.
func TestOverflowWithNothingToCompactIsNotResent(t *testing.T) {
	w := newWireSession(t)
	w.srv.HandleChat(func(*api.ChatRequest) ollamatest.Reply { return ollamatest.HTTPError(400, overflowMsg) })
	end := w.turn("read the whole repository")
	chats := w.srv.Chats()
	if len(chats) != 1 {
		t.Errorf("%d chat requests, want 1 (nothing could be compacted, so nothing is worth resending)", len(chats))
	}
	checkNoIdenticalResend(t, chats)
	checkOverflowError(t, end, "compacting the history cannot shrink it")
	if n := w.compactions(); n != 0 {
		t.Errorf("%d compactions reported, want 0", n)
	}
}

// A model trained for fewer tokens than agentd's prompt and room to work: the overflow says so
// and what to use instead, never "start a new session", which would overflow as soon.
func TestOverflowOnATooShortModelNamesTheModelNotANewSession(t *testing.T) {
	defs := []tools.Definition{{Name: "echo", Description: strings.Repeat("Echoes. ", 100), Parameters: []byte(`{"type":"object"}`)}}
	if !agent.TooShort(8192, defs, false) || agent.TooShort(40960, defs, false) {
		t.Fatal("TooShort: 8192 tokens must be too short for the prompt and room to work, 40960 not")
	}
	w := newWireSessionTrained(t, 8192)
	w.srv.HandleChat(func(*api.ChatRequest) ollamatest.Reply { return ollamatest.HTTPError(400, overflowMsg) })
	end := w.turn("read the whole repository")
	var me *agent.ModelError
	if !errors.As(end.Err, &me) || me.Kind != agent.ErrContextOverflow {
		t.Fatalf("turn end %+v", end)
	}
	if !strings.Contains(me.Fix, "qwen3:8b was trained for only 8192 tokens") || !strings.Contains(me.Fix, "use a model trained for a longer context") ||
		strings.Contains(me.Fix, "start a new session") {
		t.Errorf("fix %q", me.Fix)
	}
}

// With an earlier turn to summarize: one compaction, one retry, then the turn stops.
func TestOverflowCompactsAndRetriesExactlyOnce(t *testing.T) {
	w := newWireSession(t)
	w.srv.Enqueue(ollamatest.Text("The first answer."))
	if end := w.turn("first question"); end.Reason != "done" {
		t.Fatalf("first turn: %+v", end)
	}
	w.srv.HandleChat(func(r *api.ChatRequest) ollamatest.Reply {
		if isSummaryRequest(r) {
			return ollamatest.Text("Summary: the user asked a first question, answered.")
		}
		return ollamatest.HTTPError(400, overflowMsg)
	})
	end := w.turn("second question")
	chats := w.srv.Chats()[1:] // the second turn's requests
	var kinds []string
	for _, c := range chats {
		k := "turn"
		if isSummaryRequest(&c.Request) {
			k = "summary"
		}
		kinds = append(kinds, k)
	}
	if strings.Join(kinds, ",") != "turn,summary,turn" {
		t.Errorf("second turn's requests = %v, want turn,summary,turn (one compaction, one retry)", kinds)
	}
	checkNoIdenticalResend(t, w.srv.Chats())
	if len(chats) == 3 && !strings.Contains(string(chats[2].Body), "Summary: the user asked") {
		t.Errorf("the retry does not carry the compacted history:\n%s", chats[2].Body)
	}
	checkOverflowError(t, end, "even after compacting the history")
	if n := w.compactions(); n != 1 {
		t.Errorf("%d compactions reported, want 1", n)
	}
}

// When the compacted history fits, the turn goes on.
func TestOverflowRetryAfterCompactionSucceeds(t *testing.T) {
	w := newWireSession(t)
	w.srv.Enqueue(ollamatest.Text("The first answer."))
	w.turn("first question")
	overflowed := false
	w.srv.HandleChat(func(r *api.ChatRequest) ollamatest.Reply {
		switch {
		case isSummaryRequest(r):
			return ollamatest.Text("Summary: one question answered.")
		case !overflowed:
			overflowed = true
			return ollamatest.HTTPError(400, overflowMsg)
		}
		return ollamatest.Text("The second answer.")
	})
	if end := w.turn("second question"); end.Reason != "done" {
		t.Fatalf("second turn: %+v", end)
	}
	if n := len(w.srv.Chats()); n != 4 {
		t.Errorf("%d chat requests, want 4 (first turn, overflow, summary, retry)", n)
	}
	checkNoIdenticalResend(t, w.srv.Chats())
}
