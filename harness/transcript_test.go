package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools"
	"github.com/ollama/ollama/api"
)

// sessionEnv is a runtime on a fake Ollama server and a workspace.
type sessionEnv struct {
	rt   *Runtime
	fake *ollamatest.Server
	ws   string
}

func newSessionEnv(t *testing.T, mode string, replies ...ollamatest.Reply) *sessionEnv {
	t.Helper()
	fake := ollamatest.NewServer(&ollamatest.Script{Models: []ollamatest.Model{
		{Name: "qwen3:8b", Capabilities: []string{"completion", "tools", "thinking"}, ContextLength: 40960},
	}})
	t.Cleanup(fake.Close)
	fake.Enqueue(replies...)
	fake.HandleChat(func(*api.ChatRequest) ollamatest.Reply { return ollamatest.Text("Done.") })
	home := t.TempDir()
	rt, err := NewRuntime(Options{
		Version: "test", OllamaHost: fake.URL, Model: "qwen3:8b", ApprovalMode: mode,
		StateDir: filepath.Join(home, "state"), BuildCache: filepath.Join(home, "cache"),
		Policy: policy.Locations{ConfigDir: filepath.Join(home, "config"), StateDir: filepath.Join(home, "state")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return &sessionEnv{rt: rt, fake: fake, ws: t.TempDir()}
}

// turnEnds returns a watcher that sends every TurnEnd on the channel.
func turnEnds(s *Session) (chan agent.TurnEnd, func()) {
	ends := make(chan agent.TurnEnd, 8)
	_, detach := s.Attach(func(u Update) {
		if e, ok := u.Event.(agent.TurnEnd); ok {
			ends <- e
		}
	})
	return ends, detach
}

func waitEnd(t *testing.T, ends chan agent.TurnEnd) agent.TurnEnd {
	t.Helper()
	select {
	case e := <-ends:
		return e
	case <-time.After(60 * time.Second):
		t.Fatal("timed out waiting for the turn's end")
	}
	return agent.TurnEnd{}
}

// comparable keeps what the journal records of a transcript: a live preview, a label computed
// from validated arguments, a result's timing and details are the live session's only.
func comparable(turns []Turn) []Turn {
	for i := range turns {
		for j := range turns[i].Items {
			c := turns[i].Items[j].Tool
			if c == nil {
				continue
			}
			c.Preview, c.Label, c.Activity = nil, "", ""
			if c.Result != nil {
				c.Result = &tools.Result{Type: c.Result.Type, IsError: c.Result.IsError, Content: []tools.Block{{Type: "text", Text: c.Result.Text()}}}
			}
		}
	}
	return turns
}

// TestTranscriptLiveEqualsReplay runs turns live through a Session, then resumes the session from
// its journal: both transcripts hold the same turns, items, statuses and typed results.
func TestTranscriptLiveEqualsReplay(t *testing.T) {
	cases := []struct {
		name    string
		prompts []string
		// contexts, when set, is the editor context sent with each prompt.
		contexts []agent.EditorContext
		replies  []ollamatest.Reply
		setup    func(ws string)
		check    func(t *testing.T, turns []Turn)
	}{
		{name: "text with reasoning", prompts: []string{"hi"},
			replies: []ollamatest.Reply{ollamatest.Thinking("They greet me.", "Hello!")},
			check: func(t *testing.T, turns []Turn) {
				want := []Item{{Kind: ItemUser, Text: "hi"}, {Kind: ItemAgent, Text: "Hello!", Thinking: "They greet me."}}
				if len(turns) != 1 || !reflect.DeepEqual(turns[0].Items, want) || turns[0].Reason != "done" {
					t.Errorf("turns = %+v, want one done turn with %+v", turns, want)
				}
			}},
		{name: "a write and a failed read over two turns", prompts: []string{"write it", "read it"},
			replies: []ollamatest.Reply{
				ollamatest.Calls(ollamatest.Call("write", `{"path":"out.txt","content":"hi\n"}`)),
				ollamatest.Text("Written."),
				ollamatest.Calls(ollamatest.Call("read", `{"path":"missing.txt"}`)),
				ollamatest.Text("It is not there."),
			},
			check: func(t *testing.T, turns []Turn) {
				if len(turns) != 2 {
					t.Fatalf("%d turns, want 2: %+v", len(turns), turns)
				}
				w, r := turns[0].Items[1].Tool, turns[1].Items[1].Tool
				if w == nil || w.Status != ToolCompleted || r == nil || r.Status != ToolFailed || r.Result.Type != tools.NotFound {
					t.Errorf("write %+v, read %+v: want completed, then failed not_found", w, r)
				}
			}},
		{name: "a result whose text starts with Error is not a failure", prompts: []string{"read the log"},
			setup: func(ws string) { os.WriteFile(filepath.Join(ws, "Error log.txt"), []byte("x\n"), 0o644) },
			replies: []ollamatest.Reply{
				ollamatest.Calls(ollamatest.Call("glob", `{"pattern":"Error*"}`)),
				ollamatest.Text("Found it."),
			},
			check: func(t *testing.T, turns []Turn) {
				c := turns[0].Items[1].Tool
				if c == nil || c.Status != ToolCompleted || c.Result.IsError || c.Result.Text()[:6] != "Error " {
					t.Errorf("glob call %+v: want a completed call whose text starts with \"Error \"", c)
				}
			}},
		{name: "a prompt with editor context shows the user's words and the context's labels", prompts: []string{"why is it wrong?", "and now?"},
			contexts: []agent.EditorContext{
				{Text: "\n\nThe user is looking at cart.go.\n\nSelected in cart.go, lines 3–5:\n```\nx\n```", Labels: []string{"cart.go", "cart.go:3-5"}},
				{},
			},
			replies: []ollamatest.Reply{ollamatest.Text("Because."), ollamatest.Text("Fine.")},
			check: func(t *testing.T, turns []Turn) {
				want := []Item{{Kind: ItemUser, Text: "why is it wrong?", Context: []string{"cart.go", "cart.go:3-5"}}, {Kind: ItemAgent, Text: "Because."}}
				if len(turns) != 2 || !reflect.DeepEqual(turns[0].Items, want) {
					t.Errorf("turns = %+v, want the first with %+v", turns, want)
				}
				if len(turns) == 2 && !reflect.DeepEqual(turns[1].Items[0], Item{Kind: ItemUser, Text: "and now?"}) {
					t.Errorf("second prompt = %+v, want the words without context", turns[1].Items[0])
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newSessionEnv(t, "yolo", tc.replies...)
			if tc.setup != nil {
				tc.setup(env.ws)
			}
			h, err := env.rt.Open(SessionSpec{Workspace: env.ws})
			if err != nil {
				t.Fatal(err)
			}
			s := NewSession(h, nil)
			ends, detach := turnEnds(s)
			for i, p := range tc.prompts {
				var err error
				if i < len(tc.contexts) {
					_, err = s.PromptWithContext(context.Background(), p, tc.contexts[i])
				} else {
					_, err = s.Prompt(context.Background(), p)
				}
				if err != nil {
					t.Fatal(err)
				}
				waitEnd(t, ends)
			}
			detach()
			live := s.Transcript()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tc.check(t, live)
			h2, err := env.rt.Open(SessionSpec{ID: h.ID()})
			if err != nil {
				t.Fatal(err)
			}
			defer h2.Close()
			replayed := NewSession(h2, nil).Transcript()
			tc.check(t, replayed)
			if a, b := comparable(live), comparable(replayed); !reflect.DeepEqual(a, b) {
				ja, _ := json.MarshalIndent(a, "", " ")
				jb, _ := json.MarshalIndent(b, "", " ")
				t.Errorf("live and replayed transcripts differ:\nlive %s\nreplayed %s", ja, jb)
			}
		})
	}
}

// blockingAsker holds every question until released, and reports it.
type blockingAsker struct {
	asked   chan Question
	release chan Answer
}

func (a *blockingAsker) Ask(ctx context.Context, q Question) (Answer, error) {
	a.asked <- q
	select {
	case ans := <-a.release:
		return ans, nil
	case <-ctx.Done():
		return Answer{}, ctx.Err()
	}
}

// TestAttachMidTurn attaches a second watcher while a call awaits the user's answer: its snapshot
// shows the call awaiting, and it gets exactly the updates the first watcher got after that point.
func TestAttachMidTurn(t *testing.T) {
	env := newSessionEnv(t, "ask",
		ollamatest.Calls(ollamatest.Call("write", `{"path":"out.txt","content":"hi\n"}`)),
		ollamatest.Text("Written."))
	h, err := env.rt.Open(SessionSpec{Workspace: env.ws})
	if err != nil {
		t.Fatal(err)
	}
	ask := &blockingAsker{asked: make(chan Question, 1), release: make(chan Answer)}
	s := NewSession(h, ask)
	defer s.Close()
	var mu sync.Mutex
	var first, second []Update
	ends := make(chan agent.TurnEnd, 1)
	s.Attach(func(u Update) {
		mu.Lock()
		first = append(first, u)
		mu.Unlock()
		if e, ok := u.Event.(agent.TurnEnd); ok {
			ends <- e
		}
	})
	if _, err := s.Prompt(context.Background(), "write it"); err != nil {
		t.Fatal(err)
	}
	q := <-ask.asked
	// The loop waits for the answer: nothing happens until it is given.
	mu.Lock()
	k := len(first)
	mu.Unlock()
	snap, _ := s.Attach(func(u Update) {
		mu.Lock()
		second = append(second, u)
		mu.Unlock()
	})
	if snap.Running == "" || len(snap.Turns) != 1 {
		t.Fatalf("snapshot %+v: want the running turn", snap)
	}
	items := snap.Turns[0].Items
	if c := items[len(items)-1].Tool; c == nil || c.ID != q.Call.Call.ID || c.Status != ToolAwaiting || c.Preview == nil {
		t.Fatalf("the snapshot's last item %+v: want the call awaiting approval with its preview", items[len(items)-1])
	}
	ask.release <- Answer{Decision: AnswerAccept}
	waitEnd(t, ends)
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(second, first[k:]) {
		t.Errorf("the second watcher got %d updates, the first %d after it attached: want the same", len(second), len(first)-k)
	}
	if len(second) == 0 {
		t.Error("the second watcher got no update")
	}
}

// TestRejectForSession: "reject for this session" is a refusal the policy keeps, like a grant: a
// later call in its scope is rejected without asking, and the model is told why.
func TestRejectForSession(t *testing.T) {
	env := newSessionEnv(t, "ask",
		ollamatest.Calls(ollamatest.Call("write", `{"path":"a.txt","content":"a\n"}`)),
		ollamatest.Calls(ollamatest.Call("write", `{"path":"b.txt","content":"b\n"}`)),
		ollamatest.Text("Both refused."))
	h, err := env.rt.Open(SessionSpec{Workspace: env.ws})
	if err != nil {
		t.Fatal(err)
	}
	ask := &blockingAsker{asked: make(chan Question, 2), release: make(chan Answer, 2)}
	s := NewSession(h, ask)
	defer s.Close()
	ends, _ := turnEnds(s)
	if _, err := s.Prompt(context.Background(), "write both"); err != nil {
		t.Fatal(err)
	}
	q := <-ask.asked
	if len(q.Grants) == 0 {
		t.Fatal("the question offers no scope")
	}
	g := q.Grants[len(q.Grants)-1] // the broadest: every write
	ask.release <- Answer{Decision: AnswerRejectForSession, Grant: &g}
	waitEnd(t, ends)
	select {
	case q := <-ask.asked:
		t.Fatalf("asked again about %s", q.Call.Call.Raw)
	default:
	}
	turns := s.Transcript()
	var results []*tools.Result
	for _, it := range turns[0].Items {
		if it.Tool != nil {
			results = append(results, it.Tool.Result)
		}
	}
	if len(results) != 2 || results[0].Type != tools.RejectedByUser || results[1].Type != tools.RejectedByUser {
		t.Fatalf("results %+v: want both rejected by the user", results)
	}
	if _, err := os.Stat(filepath.Join(env.ws, "b.txt")); err == nil {
		t.Error("b.txt was written")
	}
}

// A journal written before turns recorded the context's labels replays the user's words (Typed)
// without chips; one written before Typed existed replays the prompt as it was.
func TestReplayOfOlderJournalsFallsBackToTheWords(t *testing.T) {
	var tr transcript
	tr.started(agent.TurnStart{TurnID: "t1", Prompt: "fix it\n\nThe user is looking at a.go.\n", Typed: "fix it"})
	tr.started(agent.TurnStart{TurnID: "t2", Prompt: "and the test"})
	msgs := []agent.Message{
		{Role: agent.RoleSystem, Content: "system"},
		{Role: agent.RoleUser, Content: "fix it\n\nThe user is looking at a.go.\n"},
		{Role: agent.RoleAssistant, Content: "Fixed."},
		{Role: agent.RoleUser, Content: "and the test"},
		{Role: agent.RoleAssistant, Content: "Done."},
	}
	tr.replay(msgs, []string{"", "t1", "t1", "t2", "t2"}, map[string]string{"t1": "done", "t2": "done"}, nil)
	want := []Turn{
		{ID: "t1", Reason: "done", Items: []Item{{Kind: ItemUser, Text: "fix it"}, {Kind: ItemAgent, Text: "Fixed."}}},
		{ID: "t2", Reason: "done", Items: []Item{{Kind: ItemUser, Text: "and the test"}, {Kind: ItemAgent, Text: "Done."}}},
	}
	if got := tr.clone(); !reflect.DeepEqual(got, want) {
		t.Errorf("replayed turns = %+v, want %+v", got, want)
	}
}
