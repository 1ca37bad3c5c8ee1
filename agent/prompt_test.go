package agent

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

var (
	factsShop = WorkspaceFacts{Root: "/home/ada/src/shop", OS: "linux/amd64",
		Git:          "a git repository, branch main, 2 changed files",
		Instructions: NewInstructions("AGENTS.md", []byte("Run `make check` before you answer.\n"), 36)}
	factsOther = WorkspaceFacts{Root: "/srv/other", OS: "linux/amd64"}
)

// TestSystemPromptIsTheSameInEveryWorkspace: the system message and the tools of the first
// request are byte-identical whatever the workspace, and the workspace's facts and instructions
// come after them, at the start of the first user message.
func TestSystemPromptIsTheSameInEveryWorkspace(t *testing.T) {
	for _, textTools := range []bool{false, true} {
		var first [2]ModelRequest
		for i, f := range []WorkspaceFacts{factsShop, factsOther} {
			h := newHarness(t, func(c *SessionConfig) { c.Facts = f; c.Info.Tools = !textTools })
			h.model.add(say("ok"))
			if end := h.turn("make the failing test pass"); end.Reason != "done" {
				t.Fatalf("turn: %+v", end)
			}
			first[i] = h.model.reqs()[0]
			msgs := first[i].Messages
			if len(msgs) != 2 || msgs[0].Role != RoleSystem || msgs[1].Role != RoleUser {
				t.Fatalf("textTools=%v: first request %+v", textTools, msgs)
			}
			if want := ContextBlock(f) + "\n\nmake the failing test pass"; msgs[1].Content != want {
				t.Errorf("textTools=%v: first user message\n%q\nwant\n%q", textTools, msgs[1].Content, want)
			}
			// The history keeps the user's own words: the block is added to requests only.
			if hist := h.s.History(); hist[1].Content != "make the failing test pass" {
				t.Errorf("textTools=%v: the history's first prompt is %q", textTools, hist[1].Content)
			}
		}
		sys := first[0].Messages[0].Content
		if sys != first[1].Messages[0].Content {
			t.Errorf("textTools=%v: the system prompt differs between workspaces:\n%s\n---\n%s", textTools, sys, first[1].Messages[0].Content)
		}
		for _, fact := range []string{factsShop.Root, factsShop.Git, "make check", factsOther.Root} {
			if strings.Contains(sys, fact) {
				t.Errorf("textTools=%v: the system prompt holds the workspace fact %q", textTools, fact)
			}
		}
		t0, _ := json.Marshal(first[0].Tools)
		t1, _ := json.Marshal(first[1].Tools)
		if string(t0) != string(t1) || (len(first[0].Tools) == 0) != textTools {
			t.Errorf("textTools=%v: tools differ between workspaces or are wrong: %s / %s", textTools, t0, t1)
		}
		if textTools != strings.Contains(sys, "<tool_call>") {
			t.Errorf("textTools=%v: the system prompt's tool instructions are wrong:\n%s", textTools, sys)
		}
	}
}

// TestContextBlockThroughTurnsCompactionAndResume: every request of a session carries the same
// block at the same place (so each request extends the previous one); after a summary the block
// moves to the summary, the first user message; a resumed session with the same facts sends the
// same bytes again.
func TestContextBlockThroughTurnsCompactionAndResume(t *testing.T) {
	block := ContextBlock(factsShop)
	h := newHarness(t, func(c *SessionConfig) { c.Facts = factsShop })
	h.model.add(say("first answer"), say("second answer"))
	h.turn("first")
	h.turn("second")
	reqs := h.model.reqs()
	prev, _ := json.Marshal(reqs[0].Messages)
	cur, _ := json.Marshal(reqs[1].Messages)
	if !strings.HasPrefix(string(cur), strings.TrimSuffix(string(prev), "]")) {
		t.Fatalf("the second request does not extend the first:\n%s\n%s", prev, cur)
	}
	for _, m := range h.s.History() {
		if strings.Contains(m.Content, "<context>\n") {
			t.Fatalf("the context block leaked into the history: %+v", m)
		}
	}

	// Resume from the journal with the same facts: the next request starts with the same bytes.
	r := Replay(h.journal.all())
	h2 := newHarness(t, func(c *SessionConfig) { c.Facts = factsShop; c.History = r.History; c.Turns = len(r.Turns) })
	h2.model.add(say("third answer"))
	h2.turn("third")
	resumed, _ := json.Marshal(h2.model.reqs()[0].Messages)
	last, _ := json.Marshal(append(reqs[1].Messages, Message{Role: RoleAssistant, Content: "second answer"}))
	if !strings.HasPrefix(string(resumed), strings.TrimSuffix(string(last), "]")) {
		t.Fatalf("the resumed request does not extend the last one:\n%s\n%s", last, resumed)
	}

	// An overflow forces a summary: the summary is the first user message and carries the block.
	h2.model.add(fail(&ModelError{Kind: ErrContextOverflow, Status: 400, Message: "the input length exceeds the context length"}),
		say("Summary: three questions answered."), say("fourth answer"))
	if end := h2.turn("fourth"); end.Reason != "done" {
		t.Fatalf("turn: %+v", end)
	}
	all := h2.model.reqs()
	after := all[len(all)-1].Messages
	if !strings.HasPrefix(after[1].Content, block+"\n\nSummary of the earlier conversation") || after[0].Role != RoleSystem {
		t.Errorf("after the summary the first user message is %q", after[1].Content)
	}
	n := 0
	for _, m := range after {
		n += strings.Count(m.Content, "<context>\n")
	}
	if n != 1 {
		t.Errorf("the request after compaction carries the block %d times, want once", n)
	}
}

// TestInstructionsAreCapped: a long AGENTS.md is cut at a line break within the cap, never in the
// middle of a character, and the block says it was cut and how long the file is.
func TestInstructionsAreCapped(t *testing.T) {
	small := NewInstructions("AGENTS.md", []byte("  Use tabs.\n"), 12)
	if small.Truncated || small.Text != "Use tabs." || small.Bytes != 12 {
		t.Errorf("small file: %+v", small)
	}

	line := strings.Repeat("word ", 19) + "end\n" // 99 bytes
	long := strings.Repeat(line, 200)             // 19800 bytes
	in := NewInstructions("AGENTS.md", []byte(long[:MaxInstructionsBytes+1]), int64(len(long)))
	if !in.Truncated || in.Bytes != int64(len(long)) || len(in.Text) > MaxInstructionsBytes || !strings.HasSuffix(in.Text, "end") {
		t.Errorf("long file: truncated=%v bytes=%d len(text)=%d, ends %q", in.Truncated, in.Bytes, len(in.Text), in.Text[max(0, len(in.Text)-10):])
	}
	block := ContextBlock(WorkspaceFacts{Root: "/ws", Instructions: in})
	if !strings.Contains(block, "[AGENTS.md is 19800 bytes: only the first ") {
		t.Errorf("the block does not say the instructions were cut:\n%s", block[len(block)-200:])
	}

	// One long line of 3-byte characters: the cut falls inside a character, which is dropped.
	wide := strings.Repeat("é€", 3000) // 5 bytes a pair
	in = NewInstructions("AGENTS.md", []byte(wide[:MaxInstructionsBytes+1]), int64(len(wide)))
	if !in.Truncated || !utf8.ValidString(in.Text) || strings.ContainsRune(in.Text, utf8.RuneError) || len(in.Text) > MaxInstructionsBytes || len(in.Text) < MaxInstructionsBytes-3 {
		t.Errorf("multi-byte cut: valid=%v len=%d", utf8.ValidString(in.Text), len(in.Text))
	}

	// Exactly at the cap: whole, not truncated.
	exact := strings.Repeat("a", MaxInstructionsBytes)
	if in := NewInstructions("AGENTS.md", []byte(exact), int64(len(exact))); in.Truncated || len(in.Text) != MaxInstructionsBytes {
		t.Errorf("a file of exactly the cap: truncated=%v len=%d", in.Truncated, len(in.Text))
	}
}

// TestContextBlockEmptyWithoutFacts: no facts, no block, and the history goes out unchanged.
func TestContextBlockEmptyWithoutFacts(t *testing.T) {
	if b := ContextBlock(WorkspaceFacts{}); b != "" {
		t.Errorf("empty facts give %q", b)
	}
	h := []Message{{Role: RoleSystem, Content: "s"}, {Role: RoleUser, Content: "u"}}
	if got := withContext(h, ""); &got[0] != &h[0] {
		t.Error("an empty block copied the history")
	}
	got := withContext(h, "<context>\nx\n</context>")
	if got[1].Content != "<context>\nx\n</context>\n\nu" || h[1].Content != "u" {
		t.Errorf("withContext: %+v, original %+v", got, h)
	}
}
