package daemon

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

// agentd's own messages to the model are never shown as the user's words: after a compaction
// (forced by an overflow) and the loop's nudge after an empty reply, an attaching editor's history
// has the compaction as the "compaction" item the live stream sends, in the same turn, no nudge,
// and no user or assistant item with agentd's text, live and once resumed from the journal.
func TestAttachAfterNudgeAndCompactionShowsNoAgentdTextAsTheUsers(t *testing.T) {
	env := newEnv(t, nil)
	env.ollama.Enqueue(
		ollamatest.Text("Hello."),
		// Turn 2: the prompt does not fit (the loop compacts turn 1 into a summary and retries),
		// then an empty reply (the loop nudges), then the answer.
		ollamatest.HTTPError(400, "the input length exceeds the context length"),
		ollamatest.Text("SUMMARY-OF-TURN-ONE"),
		ollamatest.Text(""),
		ollamatest.Text("Done."),
	)
	a := env.editor(true)
	s := a.newSession()
	t1 := a.prompt(s, "first")
	if end := a.turnEnd(); end.Reason != "done" {
		t.Fatalf("first turn end = %+v", end)
	}
	t2 := a.prompt(s, "second")
	if end := a.turnEndOf(t2); end.Reason != "done" {
		t.Fatalf("second turn end = %+v", end)
	}
	var live rpc.SessionUpdateParams
	json.Unmarshal(a.waitFor("the live compaction update", func(n note) bool {
		return n.method == rpc.MethodSessionUpdate && strings.Contains(string(n.params), `"type":"compaction"`)
	}), &live)
	if live.TurnID != t2 || live.Update.Compaction == nil || live.Update.Compaction.Summary != "SUMMARY-OF-TURN-ONE" {
		t.Fatalf("live compaction update = %+v, want turn %s with the summary", live, t2)
	}
	if t1 == t2 {
		t.Fatalf("two prompts got one turn ID %q", t1)
	}

	check := func(what string, hist []rpc.HistoryItem) {
		t.Helper()
		var got []string
		for _, h := range hist {
			switch h.Type {
			case rpc.HistoryCompaction:
				sum := ""
				if h.Compaction != nil {
					sum = h.Compaction.Summary
				}
				got = append(got, h.TurnID+" compaction: "+sum)
			default:
				got = append(got, h.TurnID+" "+h.Type+": "+h.Text)
			}
		}
		want := []string{t2 + " compaction: SUMMARY-OF-TURN-ONE", t2 + " user: second", t2 + " assistant: Done."}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s history:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	b := env.editor(true)
	var att rpc.SessionAttachResult
	b.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	check("the live session's", att.History)

	// The model was sent agentd's messages as they always were: the summary as the first user
	// message, its answer, the nudge (the prompt prefix does not change).
	chats := env.ollama.Chats()
	last := string(chats[len(chats)-1].Body)
	for _, w := range []string{"Summary of the earlier conversation (compacted to fit the context window):\\n\\nSUMMARY-OF-TURN-ONE",
		"Understood. I will continue from this summary.", "Your last reply was empty."} {
		if !strings.Contains(last, w) {
			t.Errorf("the last request to the model lacks %q:\n%s", w, last)
		}
	}
	if strings.Contains(last, `"kind"`) || strings.Contains(last, `"note"`) {
		t.Errorf("the last request to the model carries agentd's message kinds:\n%s", last)
	}

	// Loaded again from its journal by another daemon: the same history.
	env.srv.Shutdown()
	env2 := newEnvWith(t, nil, func(o *harness.Options) { o.StateDir = env.srv.rt.Options().StateDir })
	c := env2.editor(true)
	c.mustCall(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: s}, &att)
	check("the resumed session's", att.History)
}
