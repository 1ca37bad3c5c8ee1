package agent

import (
	"slices"
	"testing"
)

// checkTurnsOf fails unless every message has the turn want says (by index), and the slices agree
// in length.
func checkTurnsOf(t *testing.T, what string, hist []Message, turns []string, want func(i int, m Message) string) {
	t.Helper()
	if len(turns) != len(hist) {
		t.Fatalf("%s: %d turn IDs for %d messages", what, len(turns), len(hist))
	}
	for i, m := range hist {
		if w := want(i, m); turns[i] != w {
			t.Errorf("%s: message %d (%s %.40q) has turn %q, want %q", what, i, m.Role, m.Content, turns[i], w)
		}
	}
}

// Every message carries the turn it joined: the loop's nudges and a compaction's summary belong
// to the turn they were sent in, and a replay of the journal (compaction included) gives the same.
func TestHistoryTurnsFollowTheRealTurns(t *testing.T) {
	h := newHarness(t, nil)
	h.model.add(say(""), say("first answer")) // empty: the loop nudges within turn 1
	if end := h.turn("first"); end.Reason != "done" {
		t.Fatal(end)
	}
	hist, turns := h.s.HistoryTurns()
	checkTurnsOf(t, "after turn 1", hist, turns, func(i int, m Message) string {
		if m.Role == RoleSystem {
			return ""
		}
		return "t1"
	})
	var nudged bool
	for _, m := range hist {
		nudged = nudged || m.Content == h.s.nudgeEmpty()
	}
	if !nudged {
		t.Fatalf("no nudge in turn 1: %+v", hist)
	}

	// Turn 2 overflows the window: the compaction summarizes turn 1, and the summary and its
	// answer are turn 2's, like the Compacted event.
	h.model.add(fail(&ModelError{Kind: ErrContextOverflow, Status: 400, Message: "the input length exceeds the context length"}),
		say("Summary: answered the first question."), say("second answer"))
	if end := h.turn("second"); end.Reason != "done" {
		t.Fatal(end)
	}
	hist, turns = h.s.HistoryTurns()
	if len(hist) < 4 || hist[1].Role != RoleUser || hist[3].Content != "second" {
		t.Fatalf("turn 2 did not start with a summary: %+v", hist)
	}
	checkTurnsOf(t, "after the compaction", hist, turns, func(i int, m Message) string {
		if i == 0 {
			return ""
		}
		return "t2"
	})
	r := Replay(h.journal.all())
	checkTurnsOf(t, "replayed", r.History, r.HistoryTurns, func(i int, m Message) string { return turns[i] })

	// A resumed session keeps them, and appends with its own turns.
	h2 := newHarness(t, func(c *SessionConfig) { c.History, c.HistoryTurns, c.Turns = r.History, r.HistoryTurns, len(r.Turns) })
	h2.model.add(say("third answer"))
	if end := h2.turn("third"); end.Reason != "done" {
		t.Fatal(end)
	}
	_, turns3 := h2.s.HistoryTurns()
	if !slices.Equal(turns3[:len(turns)], turns) || turns3[len(turns3)-1] != "t3" || turns3[len(turns3)-2] != "t3" {
		t.Errorf("resumed turns = %q, want %q then t3", turns3, turns)
	}
}

// A journal written before compactions recorded turns: the messages it rewrote have no turn, the
// ones appended after do; answers to dangling calls join the last turn.
func TestReplayHistoryTurnsOfAnOlderJournal(t *testing.T) {
	entries := []Entry{
		{Type: EntrySession, Session: &SessionSettings{ID: "s"}},
		{Type: EntryMessage, Message: &Message{Role: RoleSystem, Content: "sys"}},
		{Type: EntryTurnStart, TurnID: "t1", Prompt: "go"},
		{Type: EntryMessage, TurnID: "t1", Message: &Message{Role: RoleUser, Content: "go"}},
		{Type: EntryCompaction, TurnID: "t1", Messages: []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: "go"}}},
		{Type: EntryMessage, TurnID: "t1", Message: &Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "read"}}}},
	}
	r := Replay(entries)
	want := []string{"", "", "t1", "t1"}
	if !slices.Equal(r.HistoryTurns, want) || len(r.History) != len(want) {
		t.Errorf("turns = %q for %d messages, want %q", r.HistoryTurns, len(r.History), want)
	}
}
