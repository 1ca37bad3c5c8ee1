package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/agent"
)

// A journal written before Message.Kind: agentd's own messages are recognised on replay by their
// fixed texts (the nudges, a compaction's summary right after the system prompt and its answer);
// the user's words, even close to them, stay the user's. The texts the model reads do not change.
func TestReplayMarksAgentdMessagesOfOlderJournals(t *testing.T) {
	const (
		summary = "Summary of the earlier conversation (compacted to fit the context window):\n\nThey fixed cart.go."
		reply   = "Understood. I will continue from this summary."
		empty   = "Your last reply was empty. If you meant to call a tool, the call was malformed: call it again with valid JSON arguments. Otherwise, answer the user."
		cut     = "Your reply was cut off by the length limit. Continue from where it stopped, more briefly."
	)
	// As an older agentd wrote them: no "kind" anywhere.
	lines := []string{
		`{"type":"compaction","turnId":"t3","messages":[{"role":"system","content":"sys"},{"role":"user","content":` + q(summary) + `},{"role":"assistant","content":` + q(reply) + `},{"role":"user","content":"go on"}],"turnIds":["","t3","t3","t3"]}`,
		`{"type":"message","turnId":"t3","message":{"role":"assistant","content":""}}`,
		`{"type":"message","turnId":"t3","message":{"role":"user","content":` + q(empty) + `}}`,
		`{"type":"message","turnId":"t3","message":{"role":"assistant","content":"partial"}}`,
		`{"type":"message","turnId":"t3","message":{"role":"user","content":` + q(cut) + `}}`,
		`{"type":"message","turnId":"t3","message":{"role":"assistant","content":"rest"}}`,
		`{"type":"turnStart","turnId":"t4","prompt":` + q(summary) + `}`,
		`{"type":"message","turnId":"t4","message":{"role":"user","content":` + q(summary) + `}}`,
		`{"type":"message","turnId":"t4","message":{"role":"user","content":"Your last reply was empty."}}`,
	}
	var entries []agent.Entry
	for _, l := range lines {
		var e agent.Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		entries = append(entries, e)
	}
	r := agent.Replay(entries)
	want := []struct {
		content string
		kind    agent.MessageKind
	}{
		{"sys", ""}, {summary, agent.KindSummary}, {reply, agent.KindSummaryReply}, {"go on", ""},
		{"", ""}, {empty, agent.KindNudge}, {"partial", ""}, {cut, agent.KindNudge}, {"rest", ""},
		{summary, ""}, // the user's own prompt, later in the history: the user's words
		{"Your last reply was empty.", ""},
	}
	if len(r.History) != len(want) {
		t.Fatalf("replayed %d messages, want %d: %+v", len(r.History), len(want), r.History)
	}
	for i, w := range want {
		if m := r.History[i]; m.Content != w.content || m.Kind != w.kind {
			t.Errorf("message %d = %q kind %q, want %q kind %q", i, m.Content, m.Kind, w.content, w.kind)
		}
	}
	if got := agent.CompactionSummary(r.History[1]); got != "They fixed cart.go." {
		t.Errorf("CompactionSummary = %q, want the summary without its framing", got)
	}
	if got := agent.CompactionSummary(r.History[9]); got != "" {
		t.Errorf("CompactionSummary of a user message = %q, want \"\"", got)
	}
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }
