package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentd/agentd/tools"
)

// A compaction after a steer keeps the turn's prompt verbatim: the steer is not the start of the
// turn, so the task the user asked for is not summarized away (small models need it whole).
func TestCompactionAfterASteerKeepsTheTurnsPrompt(t *testing.T) {
	const (
		prompt = "rename Cart to Basket in every file of the cart package"
		steer  = "and keep a Cart alias for the old name"
	)
	var h *harness
	var steered atomic.Bool
	tool := &fakeTool{name: "read", readOnly: true, exec: func(ctx context.Context, c *tools.Call) (tools.Output, error) {
		if c.ID == "r2" {
			// The user steers while the turn's second call runs.
			if _, err := h.s.Steer(steer); err != nil {
				return tools.Output{}, err
			}
			steered.Store(true)
		}
		return tools.Output{Text: "package cart"}, nil
	}}
	h = newHarness(t, nil, tool)
	h.model.add(say("first answer"))
	if end := h.turn("first question"); end.Reason != "done" {
		t.Fatal(end)
	}

	// Turn 2: two tool calls, a steer during the second, then the server says the prompt does
	// not fit: the loop compacts (summary) and retries.
	h.model.add(
		callTools(ToolCall{ID: "r1", Name: "read", Arguments: json.RawMessage(`{}`)}),
		callTools(ToolCall{ID: "r2", Name: "read", Arguments: json.RawMessage(`{}`)}),
		fail(&ModelError{Kind: ErrContextOverflow, Status: 400, Message: "the input length exceeds the context length"}),
		say("Summary: the user asked a first question, answered."),
		say("renamed"),
	)
	if end := h.turn(prompt); end.Reason != "done" {
		t.Fatal(end)
	}
	if !steered.Load() {
		t.Fatal("the second tool call did not run, so nothing steered the turn")
	}

	hist, turns := h.s.HistoryTurns()
	if len(hist) < 4 || !strings.Contains(hist[1].Content, "Summary: the user asked a first question") {
		t.Fatalf("no compaction summary at the start of the history: %+v", hist)
	}
	if hist[3].Role != RoleUser || hist[3].Content != prompt || turns[3] != "t2" {
		t.Errorf("message 3 after the compaction = %s %q (turn %q), want the turn's prompt %q verbatim", hist[3].Role, hist[3].Content, turns[3], prompt)
	}
	var steerAt, prompts int
	for i, m := range hist {
		if m.Role == RoleUser && m.Content == steer {
			steerAt = i
		}
		if m.Role == RoleUser && m.Content == prompt {
			prompts++
		}
	}
	if prompts != 1 || steerAt <= 3 {
		t.Errorf("the prompt is in the history %d times and the steer at %d, want once, then the steer after it: %+v", prompts, steerAt, hist)
	}

	// The model was asked to summarize the first turn only, and the retry carried the prompt.
	reqs := h.model.reqs()
	var summaryReq, retry *ModelRequest
	for i := range reqs {
		if reqs[i].Tools == nil && strings.HasPrefix(reqs[i].Messages[0].Content, "Summarize the conversation") {
			summaryReq = &reqs[i]
		}
	}
	retry = &reqs[len(reqs)-1]
	if summaryReq == nil {
		t.Fatal("the model was not asked for a summary")
	}
	if text := summaryReq.Messages[1].Content; strings.Contains(text, prompt) || !strings.Contains(text, "first question") {
		t.Errorf("the summary request should hold turn 1 and not the running turn's prompt:\n%s", text)
	}
	var carried bool
	for _, m := range retry.Messages {
		carried = carried || (m.Role == RoleUser && m.Content == prompt)
	}
	if !carried {
		t.Errorf("the retry after the compaction does not carry the prompt %q: %+v", prompt, retry.Messages)
	}
}

func TestCurrentTurnStart(t *testing.T) {
	for _, c := range []struct {
		name  string
		turns []string
		turn  string
		want  int
	}{
		{"prompt, calls and a steer", []string{"", "t1", "t1", "t2", "t2", "t2", "t2"}, "t2", 3},
		{"a note before the prompt", []string{"", "t1", "t2", "t2", "t2"}, "t2", 2},
		{"after a compaction in the turn", []string{"", "t2", "t2", "t2", "t2"}, "t2", 1},
		{"resumed: earlier turns unknown", []string{"", "", "", "t4", "t4"}, "t4", 3},
		{"no message of the turn", []string{"", "t1", "t1"}, "t2", 0},
		{"no turn", []string{"", "", ""}, "", 0},
	} {
		if got := currentTurnStart(c.turns, c.turn); got != c.want {
			t.Errorf("%s: currentTurnStart(%q, %q) = %d, want %d", c.name, c.turns, c.turn, got, c.want)
		}
	}
}

// A turn note joins the turn before its prompt as a message of its own, marked Note; the prompt
// (history, TurnStart, journal) is the user's text alone, and the note is taken for every turn
// start, a steer's too.
func TestTurnNoteIsAMessageOfItsOwnBeforeThePrompt(t *testing.T) {
	var notes atomic.Int32
	h := newHarness(t, func(c *SessionConfig) {
		c.TurnNote = func() string {
			if notes.Add(1) == 2 {
				return "" // nothing to tell at the second turn
			}
			return "[agentd: a note]"
		}
	})
	h.model.add(say("one"), say("two"), say("three"))
	h.turn("first")
	h.turn("second")
	if _, err := h.s.Steer("third"); err != nil { // starts a turn: no turn runs
		t.Fatal(err)
	}
	if end := h.waitEnd(); end.Reason != "done" {
		t.Fatal(end)
	}

	hist, turns := h.s.HistoryTurns()
	type msg struct {
		role       Role
		text, turn string
		note       bool
	}
	want := []msg{{RoleUser, "[agentd: a note]", "t1", true}, {RoleUser, "first", "t1", false}, {RoleAssistant, "one", "t1", false},
		{RoleUser, "second", "t2", false}, {RoleAssistant, "two", "t2", false},
		{RoleUser, "[agentd: a note]", "t3", true}, {RoleUser, "third", "t3", false}, {RoleAssistant, "three", "t3", false}}
	var got []msg
	for i, m := range hist[1:] {
		got = append(got, msg{m.Role, m.Content, turns[i+1], m.Note})
	}
	if !slices.Equal(got, want) {
		t.Errorf("history =\n%+v\nwant\n%+v", got, want)
	}
	if r := Replay(h.journal.all()); !slices.EqualFunc(r.History, hist, func(a, b Message) bool { return a.Note == b.Note && a.Content == b.Content }) {
		t.Errorf("the replayed history differs (the note mark is not journalled): %+v", r.History)
	}

	var prompts, users []string
	for _, e := range h.rec.all() {
		switch e := e.(type) {
		case TurnStart:
			prompts = append(prompts, e.Prompt)
		case UserMessage:
			users = append(users, e.Text)
		}
	}
	for _, e := range h.journal.all() {
		if e.Type == EntryTurnStart {
			prompts = append(prompts, "journal:"+e.Prompt)
		}
	}
	wantPrompts := []string{"first", "second", "third", "journal:first", "journal:second", "journal:third"}
	if !slices.Equal(prompts, wantPrompts) || len(users) != 0 {
		t.Errorf("turn prompts = %q, user messages = %q; want %q and none", prompts, users, wantPrompts)
	}

	// The model got the note before the prompt in the first request of turn 3.
	reqs := h.model.reqs()
	msgs := reqs[2].Messages
	if n := len(msgs); n < 2 || msgs[n-2].Content != "[agentd: a note]" || msgs[n-1].Content != "third" {
		t.Errorf("turn 3's request ends %+v", msgs[max(0, len(msgs)-2):])
	}
}
