package agent

import (
	"strings"
	"testing"
)

// The loop marks its own messages as it writes them, in the history and in the journal (not only
// through the replay's recognition of older journals): each nudge KindNudge, a compaction's
// summary KindSummary and its answer KindSummaryReply. The user's words have no kind, and what
// the model is sent is the same text.
func TestLoopMarksItsOwnMessages(t *testing.T) {
	h := newHarness(t, nil)
	h.model.add(reply(Message{Role: RoleAssistant, Content: "cut"}, "length"), say(""), say("first answer"))
	if end := h.turn("first"); end.Reason != "done" {
		t.Fatal(end)
	}
	h.model.add(fail(&ModelError{Kind: ErrContextOverflow, Status: 400, Message: "the input length exceeds the context length"}),
		say("Summary: answered the first question."), say("second answer"))
	if end := h.turn("second"); end.Reason != "done" {
		t.Fatal(end)
	}
	var nudges []string
	var summaries, summaryReplies, users int
	for _, e := range h.journal.all() {
		msgs := e.Messages
		if e.Message != nil {
			msgs = []Message{*e.Message}
		}
		for _, m := range msgs {
			switch m.Kind {
			case KindNudge:
				nudges = append(nudges, m.Content)
			case KindSummary:
				summaries++
				if m.Role != RoleUser || CompactionSummary(m) != "Summary: answered the first question." || m.Content != summaryPrefix+CompactionSummary(m) {
					t.Errorf("journalled summary = %+v", m)
				}
			case KindSummaryReply:
				summaryReplies++
				if m.Role != RoleAssistant || m.Content != summaryReply {
					t.Errorf("journalled summary reply = %+v", m)
				}
			case "":
				if m.Role == RoleUser && m.Content != "first" && m.Content != "second" {
					t.Errorf("a user message without a kind that is not the user's: %q", m.Content)
				}
				if m.Role == RoleUser {
					users++
				}
			default:
				t.Errorf("unknown kind %q", m.Kind)
			}
		}
	}
	if len(nudges) != 2 || nudges[0] != nudgeCut || nudges[1] != h.s.nudgeEmpty() {
		t.Errorf("journalled nudges = %q, want the cut and the empty one", nudges)
	}
	if summaries != 1 || summaryReplies != 1 || users == 0 {
		t.Errorf("journalled %d summaries, %d answers, %d user messages; want 1, 1, some", summaries, summaryReplies, users)
	}
	// What the model reads: the last request has the summary (after the context block) and its
	// answer as user and assistant messages with the same texts, then the prompt.
	reqs := h.model.reqs()
	last := reqs[len(reqs)-1].Messages
	if len(last) < 4 || last[1].Role != RoleUser || !strings.HasSuffix(last[1].Content, "\n\n"+summaryPrefix+"Summary: answered the first question.") ||
		last[2].Role != RoleAssistant || last[2].Content != summaryReply || last[3].Content != "second" {
		t.Errorf("the last request starts %+v", last[:min(4, len(last))])
	}
}
