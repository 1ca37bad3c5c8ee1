package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/tools"
)

// scriptedModel answers each Chat with the next reply function and records every request.
type scriptedModel struct {
	mu       sync.Mutex
	replies  []func(ctx context.Context, req *ModelRequest, onDelta func(Delta)) (*ModelResponse, error)
	requests []ModelRequest
}

func (m *scriptedModel) Info(context.Context) (ModelInfo, error) {
	return ModelInfo{Name: "fake", Tools: true, ContextLength: 32768}, nil
}

func (m *scriptedModel) Chat(ctx context.Context, req *ModelRequest, onDelta func(Delta)) (*ModelResponse, error) {
	m.mu.Lock()
	cp := *req
	cp.Messages = append([]Message(nil), req.Messages...)
	m.requests = append(m.requests, cp)
	if len(m.replies) == 0 {
		m.mu.Unlock()
		return nil, &ModelError{Kind: ErrServer, Message: "script exhausted"}
	}
	f := m.replies[0]
	m.replies = m.replies[1:]
	m.mu.Unlock()
	return f(ctx, req, onDelta)
}

func (m *scriptedModel) add(fs ...func(context.Context, *ModelRequest, func(Delta)) (*ModelResponse, error)) {
	m.mu.Lock()
	m.replies = append(m.replies, fs...)
	m.mu.Unlock()
}

func (m *scriptedModel) reqs() []ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ModelRequest(nil), m.requests...)
}

// say replies with text, streamed in two deltas.
func say(text string) func(context.Context, *ModelRequest, func(Delta)) (*ModelResponse, error) {
	return func(ctx context.Context, req *ModelRequest, onDelta func(Delta)) (*ModelResponse, error) {
		half := len(text) / 2
		onDelta(Delta{Text: text[:half]})
		onDelta(Delta{Text: text[half:]})
		return &ModelResponse{Message: Message{Role: RoleAssistant, Content: text}, DoneReason: "stop",
			Usage: usageFor(req)}, nil
	}
}

// callTools replies with native tool calls.
func callTools(calls ...ToolCall) func(context.Context, *ModelRequest, func(Delta)) (*ModelResponse, error) {
	return func(ctx context.Context, req *ModelRequest, onDelta func(Delta)) (*ModelResponse, error) {
		return &ModelResponse{Message: Message{Role: RoleAssistant, ToolCalls: calls}, DoneReason: "stop",
			Usage: usageFor(req)}, nil
	}
}

// usageFor reports token counts the way a server would: proportional to the prompt.
func usageFor(req *ModelRequest) Usage {
	n := 0
	for _, m := range req.Messages {
		n += tokensOf(m)
	}
	return Usage{PromptTokens: n, OutputTokens: 10}
}

func reply(m Message, reason string) func(context.Context, *ModelRequest, func(Delta)) (*ModelResponse, error) {
	return func(context.Context, *ModelRequest, func(Delta)) (*ModelResponse, error) {
		m.Role = RoleAssistant
		return &ModelResponse{Message: m, DoneReason: reason, Usage: Usage{PromptTokens: 100, OutputTokens: 10}}, nil
	}
}

func fail(err error) func(context.Context, *ModelRequest, func(Delta)) (*ModelResponse, error) {
	return func(context.Context, *ModelRequest, func(Delta)) (*ModelResponse, error) { return nil, err }
}

// memJournal keeps entries in memory.
type memJournal struct {
	mu      sync.Mutex
	entries []Entry
	syncs   int
}

func (j *memJournal) Append(e Entry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, e)
	return nil
}

func (j *memJournal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.syncs++
	return nil
}

func (j *memJournal) all() []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Entry(nil), j.entries...)
}

type harness struct {
	t       *testing.T
	s       *Session
	model   *scriptedModel
	rec     *recorder
	journal *memJournal
	ends    chan TurnEnd
}

func newHarness(t *testing.T, mutate func(*SessionConfig), ts ...tools.Tool) *harness {
	t.Helper()
	if len(ts) == 0 {
		ts = []tools.Tool{&fakeTool{name: "read", readOnly: true}}
	}
	reg, err := tools.NewRegistry(ts...)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, model: &scriptedModel{}, rec: &recorder{}, journal: &memJournal{}, ends: make(chan TurnEnd, 16)}
	cfg := SessionConfig{
		ID: "s1", Model: h.model, Info: ModelInfo{Name: "fake", Tools: true}, NumCtx: 32768,
		Kernel: Config{Registry: reg}, Journal: h.journal,
		Facts: WorkspaceFacts{Root: "/ws", OS: "linux"},
		Sink: func(e Event) {
			h.rec.sink(e)
			if te, ok := e.(TurnEnd); ok {
				h.ends <- te
			}
		},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := NewSession(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	t.Cleanup(s.Close)
	return h
}

func (h *harness) turn(prompt string) TurnEnd {
	h.t.Helper()
	if _, err := h.s.Prompt(prompt); err != nil {
		h.t.Fatal(err)
	}
	return h.waitEnd()
}

func (h *harness) waitEnd() TurnEnd {
	h.t.Helper()
	select {
	case e := <-h.ends:
		return e
	case <-time.After(20 * time.Second):
		h.t.Fatal("turn did not end")
		return TurnEnd{}
	}
}

// A prompt with editor context: the model reads the user's words and the context; the turn, its
// journal entry and a replay keep the user's words apart (the session list, a rewind).
func TestPromptWithContextKeepsTheUsersWords(t *testing.T) {
	h := newHarness(t, nil)
	h.model.add(say("Seen."))
	if _, err := h.s.PromptWithContext("fix it", EditorContext{Text: "\n\nThe user is looking at a.go.\n", Labels: []string{"a.go"}}); err != nil {
		t.Fatal(err)
	}
	if end := h.waitEnd(); end.Reason != "done" {
		t.Fatal(end)
	}
	msgs := h.model.reqs()[0].Messages
	if got := msgs[len(msgs)-1].Content; !strings.HasSuffix(got, "fix it\n\nThe user is looking at a.go.\n") {
		t.Errorf("the model read %q, want the words and the context", got)
	}
	var start TurnStart
	for _, e := range h.rec.all() {
		if ts, ok := e.(TurnStart); ok {
			start = ts
		}
	}
	if start.Words() != "fix it" || !strings.HasSuffix(start.Prompt, "a.go.\n") || !slices.Equal(start.Context, []string{"a.go"}) {
		t.Errorf("turn start = %+v: want the user's words apart from the prompt, and the context's labels", start)
	}
	r := Replay(h.journal.all())
	if len(r.Turns) != 1 || !reflect.DeepEqual(r.Turns[0].Start(), start) {
		t.Errorf("replayed turns = %+v, want the turn as it started: %+v", r.Turns, start)
	}
}

func TestTextOnlyTurn(t *testing.T) {
	h := newHarness(t, nil)
	h.model.add(say("Hello there."))
	end := h.turn("hi")
	if end.Reason != "done" || end.TurnID != "t1" {
		t.Fatalf("turn end = %+v", end)
	}
	hist := h.s.History()
	if len(hist) != 3 || hist[0].Role != RoleSystem || hist[1].Content != "hi" || hist[2].Content != "Hello there." {
		t.Errorf("history = %+v", hist)
	}
	var text string
	var kinds []string
	for _, e := range h.rec.all() {
		kinds = append(kinds, fmt.Sprintf("%T", e))
		if d, ok := e.(MessageDelta); ok {
			text += d.Text
		}
	}
	if text != "Hello there." {
		t.Errorf("deltas = %q", text)
	}
	want := "agent.TurnStart agent.MessageStart agent.MessageDelta agent.MessageDelta agent.MessageEnd agent.ReplyRecorded agent.TurnEnd"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("events = %s", got)
	}
	req := h.model.reqs()[0]
	if req.NumCtx != 32768 || req.NumPredict != 8192 || len(req.Tools) != 1 {
		t.Errorf("request = ctx %d predict %d tools %d", req.NumCtx, req.NumPredict, len(req.Tools))
	}
	// The journal replays to the same history, and the turn end was synced.
	r := Replay(h.journal.all())
	if len(r.History) != 3 || r.History[2].Content != "Hello there." || len(r.Turns) != 1 || r.Turns[0].Reason != "done" {
		t.Errorf("replayed = %+v", r)
	}
	if h.journal.syncs == 0 {
		t.Error("journal never synced")
	}
}

func TestToolRoundTrip(t *testing.T) {
	h := newHarness(t, nil)
	h.model.add(callTools(ToolCall{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go"}`)}), say("It is fine."))
	if end := h.turn("check a.go"); end.Reason != "done" {
		t.Fatalf("end = %+v", end)
	}
	reqs := h.model.reqs()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != RoleTool || last.ToolCallID != "c1" || last.ToolName != "read" || last.Content != "ok read" {
		t.Errorf("tool result message = %+v", last)
	}
	checkPairs(t, h.rec.all())
}

func TestTextToolCallsRunThroughThePipeline(t *testing.T) {
	forms := map[string]string{
		"tagged":   `<tool_call>{"name": "read", "arguments": {"path": "a.go"}}</tool_call>`,
		"fenced":   "Let me look.\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.go\"}}\n```",
		"bare":     `I'll read it: {"name": "read", "arguments": {"path": "a.go"}}`,
		"function": "<function=read>\n<parameter=path>\na.go\n</parameter>\n</function>",
	}
	for name, content := range forms {
		t.Run(name, func(t *testing.T) {
			rd := &fakeTool{name: "read", readOnly: true}
			h := newHarness(t, nil, rd)
			h.model.add(reply(Message{Content: content}, "stop"), say("done"))
			if end := h.turn("go"); end.Reason != "done" {
				t.Fatalf("end = %+v", end)
			}
			if rd.calls.Load() != 1 {
				t.Fatalf("read ran %d times", rd.calls.Load())
			}
			res := h.model.reqs()[1].Messages
			if m := res[len(res)-1]; m.Role != RoleTool || m.Content != "ok read" {
				t.Errorf("result = %+v", m)
			}
			if a := res[len(res)-2]; len(a.ToolCalls) != 1 || strings.Contains(a.Content, `"arguments"`) {
				t.Errorf("assistant message not recorded as a native call: %+v", a)
			}
		})
	}
}

func TestInventedToolNameIsNotFoundAndNeverRuns(t *testing.T) {
	rd := &fakeTool{name: "read", readOnly: true}
	h := newHarness(t, nil, rd)
	h.model.add(reply(Message{Content: `<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>`}, "stop"),
		callTools(ToolCall{ID: "n1", Name: "rm_rf", Arguments: json.RawMessage(`{}`)}), say("ok"))
	h.turn("go")
	msgs := h.model.reqs()[2].Messages
	var notFound int
	for _, m := range msgs {
		if m.Role == RoleTool && strings.HasPrefix(m.Content, "Error (not_found)") {
			notFound++
		}
	}
	if notFound != 2 || rd.calls.Load() != 0 {
		t.Errorf("not_found results = %d, read calls = %d", notFound, rd.calls.Load())
	}
}

func TestModelWithoutToolsGetsTextToolsAndUserRoleResults(t *testing.T) {
	rd := &fakeTool{name: "read", readOnly: true}
	h := newHarness(t, func(c *SessionConfig) { c.Info.Tools = false }, rd)
	h.model.add(reply(Message{Content: `<tool_call>{"name": "read", "arguments": {"path": "x"}}</tool_call>`}, "stop"), say("done"))
	h.turn("go")
	reqs := h.model.reqs()
	if reqs[0].Tools != nil {
		t.Error("tools sent to a model without the tools capability")
	}
	if !strings.Contains(reqs[0].Messages[0].Content, "<tool_call>") || !strings.Contains(reqs[0].Messages[0].Content, `"path"`) {
		t.Error("system prompt does not teach the text tool format with the schemas")
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != RoleUser || !strings.HasPrefix(last.Content, "Result of read") {
		t.Errorf("tool result for a text-tool model = %+v", last)
	}
	for _, m := range reqs[1].Messages {
		if len(m.ToolCalls) > 0 || m.Role == RoleTool {
			t.Errorf("native tool structures sent to a text-tool model: %+v", m)
		}
	}
}

func TestNoToolSupportFallsBackToTextTools(t *testing.T) {
	h := newHarness(t, nil)
	h.model.add(fail(&ModelError{Kind: ErrNoToolSupport, Status: 400, Message: "does not support tools"}), say("fine"))
	if end := h.turn("go"); end.Reason != "done" {
		t.Fatalf("end = %+v", end)
	}
	reqs := h.model.reqs()
	if reqs[1].Tools != nil || !strings.Contains(reqs[1].Messages[0].Content, "<tool_call>") {
		t.Error("retry did not switch to text tool calls")
	}
}

func TestLengthCutVoidsCallsAndContinuesText(t *testing.T) {
	rd := &fakeTool{name: "read", readOnly: true}
	h := newHarness(t, nil, rd)
	h.model.add(
		reply(Message{ToolCalls: []ToolCall{{ID: "x", Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)}}}, "length"),
		reply(Message{Content: "The answer is"}, "length"),
		say("42."),
	)
	if end := h.turn("go"); end.Reason != "done" {
		t.Fatalf("end = %+v", end)
	}
	if rd.calls.Load() != 0 {
		t.Error("a call from a cut reply ran")
	}
	reqs := h.model.reqs()
	if m := reqs[1].Messages[len(reqs[1].Messages)-1]; !strings.Contains(m.Content, "Resend the call") {
		t.Errorf("voided result = %q", m.Content)
	}
	if m := reqs[2].Messages[len(reqs[2].Messages)-1]; m.Content != nudgeCut {
		t.Errorf("continuation nudge = %q", m.Content)
	}
}

func TestEmptyReplyGetsOneNudgeNeverALoop(t *testing.T) {
	h := newHarness(t, nil)
	h.model.add(reply(Message{}, "stop"), reply(Message{}, "stop"), say("never asked"))
	if end := h.turn("go"); end.Reason != "done" {
		t.Fatalf("end = %+v", end)
	}
	reqs := h.model.reqs()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls: a second empty reply must end the turn", len(reqs))
	}
	if m := reqs[1].Messages[len(reqs[1].Messages)-1]; m.Content != h.s.nudgeEmpty() {
		t.Errorf("nudge = %q", m.Content)
	}
}

func TestSteeringReachesTheModelNext(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	slow := &fakeTool{name: "read", readOnly: true, interrupt: tools.InterruptCancel,
		exec: func(ctx context.Context, c *tools.Call) (tools.Output, error) {
			close(started)
			select {
			case <-ctx.Done():
				return tools.Output{}, ctx.Err()
			case <-release:
				return tools.Output{Text: "late"}, nil
			}
		}}
	later := &fakeTool{name: "other"}
	h := newHarness(t, nil, slow, later)
	h.model.add(callTools(ToolCall{ID: "a", Name: "read", Arguments: json.RawMessage(`{}`)}, ToolCall{ID: "b", Name: "other", Arguments: json.RawMessage(`{}`)}), say("ok, not touching tests"))
	turn, _ := h.s.Prompt("fix it")
	<-started
	if id, err := h.s.Steer("don't touch the tests"); err != nil || id != turn {
		t.Fatalf("steer = %s, %v", id, err)
	}
	end := h.waitEnd()
	close(release)
	if end.Reason != "done" {
		t.Fatalf("end = %+v", end)
	}
	msgs := h.model.reqs()[1].Messages
	n := len(msgs)
	if msgs[n-1].Role != RoleUser || msgs[n-1].Content != "don't touch the tests" {
		t.Errorf("last message = %+v", msgs[n-1])
	}
	if msgs[n-3].Content != "Error (cancelled): "+msgSkippedSteer || msgs[n-2].Content != "Error (cancelled): "+msgSkippedSteer {
		t.Errorf("results = %q / %q", msgs[n-3].Content, msgs[n-2].Content)
	}
	if later.calls.Load() != 0 {
		t.Error("the second call ran after the steer")
	}
}

func TestSteerWithoutTurnStartsOne(t *testing.T) {
	h := newHarness(t, nil)
	h.model.add(say("hi"))
	id, err := h.s.Steer("hello")
	if err != nil || id != "t1" {
		t.Fatal(id, err)
	}
	if end := h.waitEnd(); end.Reason != "done" {
		t.Fatal(end)
	}
}

func TestCancelMidStream(t *testing.T) {
	h := newHarness(t, nil)
	inStream := make(chan struct{})
	h.model.add(func(ctx context.Context, req *ModelRequest, onDelta func(Delta)) (*ModelResponse, error) {
		onDelta(Delta{Text: "Partial "})
		close(inStream)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h.s.Prompt("go")
	<-inStream
	if _, err := h.s.Prompt("again"); !errors.Is(err, ErrTurnRunning) {
		t.Errorf("prompt during a turn: %v", err)
	}
	if !h.s.Cancel() {
		t.Error("Cancel reported no running turn")
	}
	if end := h.waitEnd(); end.Reason != "cancelled" {
		t.Fatalf("end = %+v", end)
	}
	hist := h.s.History()
	if last := hist[len(hist)-1]; last.Content != "Partial " {
		t.Errorf("partial text the user saw is not in the history: %+v", last)
	}
	if h.s.Running() != "" || h.s.Cancel() {
		t.Error("session still running after cancel")
	}
}

func TestStepAndTimeLimits(t *testing.T) {
	h := newHarness(t, func(c *SessionConfig) { c.MaxSteps = 3 })
	for range 5 {
		h.model.add(callTools(ToolCall{Name: "read", Arguments: json.RawMessage(`{}`)}))
	}
	if end := h.turn("loop"); end.Reason != "steps_exhausted" {
		t.Errorf("end = %+v", end)
	}
	h2 := newHarness(t, func(c *SessionConfig) { c.MaxTurnTime = 50 * time.Millisecond })
	h2.model.add(func(ctx context.Context, req *ModelRequest, onDelta func(Delta)) (*ModelResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if end := h2.turn("slow"); end.Reason != "time_exhausted" {
		t.Errorf("end = %+v", end)
	}
}

func TestModelErrorEndsTheTurnWithTheError(t *testing.T) {
	h := newHarness(t, nil)
	me := &ModelError{Kind: ErrModelNotFound, Status: 404, Message: "model 'x' not found", Fix: "run `ollama pull x`"}
	h.model.add(fail(me))
	end := h.turn("go")
	var got *ModelError
	if end.Reason != "error" || !errors.As(end.Err, &got) || got.Fix == "" {
		t.Errorf("end = %+v", end)
	}
}

// TestPrefixStability runs a 10-turn scripted session and checks that each request's messages
// extend the previous request's messages byte for byte, and that the tool list never changes.
func TestPrefixStability(t *testing.T) {
	h := newHarness(t, nil)
	for i := range 10 {
		if i%2 == 0 {
			h.model.add(callTools(ToolCall{ID: fmt.Sprintf("c%d", i), Name: "read", Arguments: json.RawMessage(`{"path":"f.go","n":3}`)}))
		}
		h.model.add(say(fmt.Sprintf("answer %d", i)))
	}
	for i := range 10 {
		if end := h.turn(fmt.Sprintf("question %d", i)); end.Reason != "done" {
			t.Fatalf("turn %d: %+v", i, end)
		}
	}
	reqs := h.model.reqs()
	if len(reqs) != 15 {
		t.Fatalf("%d requests", len(reqs))
	}
	tools0, _ := json.Marshal(reqs[0].Tools)
	for i := 1; i < len(reqs); i++ {
		prev, _ := json.Marshal(reqs[i-1].Messages)
		cur, _ := json.Marshal(reqs[i].Messages)
		if !strings.HasPrefix(string(cur), strings.TrimSuffix(string(prev), "]")) {
			t.Fatalf("request %d does not extend request %d:\nprev %s\ncur  %s", i, i-1, prev, cur)
		}
		ti, _ := json.Marshal(reqs[i].Tools)
		if string(ti) != string(tools0) || reqs[i].NumCtx != reqs[0].NumCtx {
			t.Fatalf("request %d changed the tools or num_ctx", i)
		}
	}
}

func TestCompactionElidesOldToolOutputsThenSummarizes(t *testing.T) {
	big := strings.Repeat("x", 4000)
	out := &fakeTool{name: "read", readOnly: true, exec: func(context.Context, *tools.Call) (tools.Output, error) {
		return tools.Output{Text: big}, nil
	}}
	h := newHarness(t, func(c *SessionConfig) { c.NumCtx = 8192; c.ReplyBudget = 1024 }, out)
	// Turn 1: six tool calls with big outputs, then an answer.
	for i := range 6 {
		h.model.add(callTools(ToolCall{ID: fmt.Sprintf("r%d", i), Name: "read", Arguments: json.RawMessage(`{}`)}))
	}
	h.model.add(say("read everything"))
	if end := h.turn("read all"); end.Reason != "done" {
		t.Fatal(end)
	}
	var compactions []Compacted
	for _, e := range h.rec.all() {
		if c, ok := e.(Compacted); ok {
			compactions = append(compactions, c)
		}
	}
	if len(compactions) == 0 {
		t.Fatal("no compaction although the estimate passed the threshold")
	}
	hist := h.s.History()
	var elided, whole int
	for _, m := range hist {
		if m.Role == RoleTool {
			if strings.Contains(m.Content, "[output elided") {
				elided++
			} else {
				whole++
			}
		}
	}
	if elided == 0 || whole > keepToolOutputs {
		t.Errorf("elided %d, whole %d", elided, whole)
	}
	if hist[0].Role != RoleSystem {
		t.Error("system prompt lost")
	}
	// The journal holds the compaction: a replay gives the compacted history.
	if r := Replay(h.journal.all()); len(r.History) != len(hist) {
		t.Errorf("replayed %d messages, session has %d", len(r.History), len(hist))
	}

	// At the start of the next turn the elided history is still too big: the earlier turn is
	// summarized by the model, the current turn is kept.
	h.model.add(say("Summary: read six files."), say("continuing"))
	if end := h.turn("next"); end.Reason != "done" {
		t.Fatal(end)
	}
	checkSummarized(t, h.s.History(), h.model.reqs(), "Summary: read six files.", "next")
}

func checkSummarized(t *testing.T, hist []Message, reqs []ModelRequest, summary, prompt string) {
	t.Helper()
	if hist[0].Role != RoleSystem || !strings.Contains(hist[1].Content, summary) {
		t.Errorf("history after compaction starts %+v", hist[:2])
	}
	if len(hist) != 5 || hist[3].Content != prompt {
		t.Errorf("current turn not kept intact: %+v", hist[3:])
	}
	var asked bool
	for _, r := range reqs {
		if r.Tools == nil && strings.HasPrefix(r.Messages[0].Content, "Summarize the conversation") {
			asked = true
		}
	}
	if !asked {
		t.Error("the model was not asked for a summary")
	}
}

func TestServerOverflowForcesASummary(t *testing.T) {
	h := newHarness(t, nil)
	h.model.add(say("first answer"))
	h.turn("first")
	h.model.add(fail(&ModelError{Kind: ErrContextOverflow, Status: 400, Message: "the input length exceeds the context length"}),
		say("Summary: answered the first question."), say("second answer"))
	if end := h.turn("second"); end.Reason != "done" {
		t.Fatal(end)
	}
	checkSummarized(t, h.s.History(), h.model.reqs(), "Summary: answered the first question.", "second")
}

func TestReplayAnswersDanglingToolCalls(t *testing.T) {
	entries := []Entry{
		{Type: EntrySession, Session: &SessionSettings{ID: "s"}},
		{Type: EntryMessage, Message: &Message{Role: RoleSystem, Content: "sys"}},
		{Type: EntryTurnStart, TurnID: "t1", Prompt: "go"},
		{Type: EntryMessage, TurnID: "t1", Message: &Message{Role: RoleUser, Content: "go"}},
		{Type: EntryMessage, TurnID: "t1", Message: &Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "read"}, {ID: "b", Name: "bash"}}}},
		{Type: EntryMessage, TurnID: "t1", Message: &Message{Role: RoleTool, ToolCallID: "a", Content: "ok"}},
	}
	r := Replay(entries)
	last := r.History[len(r.History)-1]
	if last.ToolCallID != "b" || last.Content != msgInterrupted || len(r.Turns) != 1 || r.Turns[0].Reason != "" {
		t.Errorf("replayed = %+v", r)
	}
}

func TestResumedSessionContinuesTurnNumbersAndHistory(t *testing.T) {
	h := newHarness(t, nil)
	h.model.add(say("one"))
	h.turn("first")
	r := Replay(h.journal.all())
	h.s.Close()

	h2 := newHarness(t, func(c *SessionConfig) { c.History = r.History; c.Turns = len(r.Turns) })
	h2.model.add(say("two"))
	end := h2.turn("second")
	if end.TurnID != "t2" {
		t.Errorf("turn ID = %s, want t2", end.TurnID)
	}
	msgs := h2.model.reqs()[0].Messages
	if len(msgs) != 4 || msgs[2].Content != "one" || msgs[3].Content != "second" {
		t.Errorf("resumed request = %+v", msgs)
	}
}
