package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// Compaction keeps a long session inside its context window. It runs before a model call when the
// estimated prompt would pass CompactAt of the window (minus the reply budget), and when the
// server reports an overflow. In order, it:
//  1. elides the output of older tool calls (all but the most recent few), which is most of the
//     bulk of an agent session and can be re-read by calling the tool again;
//  2. if that is not enough, replaces the turns before the current one with a summary the model
//     writes.
//
// The system prompt, the tools and the current turn are kept: all of it, from its first message
// (its prompt, steering later in the turn included). Each compaction is an event and a journal
// entry holding the whole new history.

// What the model reads of a compaction's summary: the summary after summaryPrefix, as a user
// message marked KindSummary, and summaryReply as the assistant's answer (KindSummaryReply). The
// texts never change: journals written before Message.Kind are recognised by them (Replay).
const (
	summaryPrefix = "Summary of the earlier conversation (compacted to fit the context window):\n\n"
	summaryReply  = "Understood. I will continue from this summary."
)

// CompactionSummary returns the summary a KindSummary message carries, without the framing the
// model reads; "" for any other message.
func CompactionSummary(m Message) string {
	if m.Kind != KindSummary {
		return ""
	}
	return strings.TrimPrefix(m.Content, summaryPrefix)
}

const (
	keepToolOutputs = 4    // most recent tool results kept whole
	elideAbove      = 600  // bytes: shorter tool outputs are kept
	elideKeep       = 240  // bytes of an elided output that stay
	summaryBudget   = 1024 // tokens for the summary reply
)

// tokensOf estimates a message's tokens: ~3 bytes a token for code and prose, plus framing.
func tokensOf(m Message) int {
	n := len(m.Content) + len(m.Thinking)
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Arguments)
	}
	return n/3 + 4 + 768*len(m.Images)
}

// estimate returns the expected prompt tokens of the next request: the server's count for the
// last request and reply, plus an estimate for what was appended since.
func (s *Session) estimate() int {
	h := s.history // only the loop goroutine calls estimate: no copy needed
	from := s.lastCount
	if s.lastTokens == 0 || from > len(h) {
		from = 0
	}
	est := s.lastTokens
	if from == 0 {
		est += len(ContextBlock(s.cfg.Facts)) / 3 // sent with the first user message, not in h
	}
	for _, m := range h[from:] {
		est += tokensOf(m)
	}
	return est
}

func (s *Session) threshold() int {
	return int(s.cfg.CompactAt * float64(s.cfg.NumCtx-s.cfg.ReplyBudget))
}

func (s *Session) needsCompaction() bool { return s.estimate() > s.threshold() }

// compact rewrites the history to fit; force summarizes even when elision would be enough (the
// server said the prompt does not fit). It reports whether the history changed: it does not when
// there is no old tool output to elide and no earlier turn to summarize (or the summary failed).
func (s *Session) compact(ctx context.Context, turnID string, force bool) bool {
	before := s.estimate()
	h, turns := s.HistoryTurns()
	saved := elideToolOutputs(h)
	after := before - saved/3
	summary := ""
	if force || after > s.threshold()*2/3 {
		if cut := currentTurnStart(turns, turnID); cut > 1 {
			var err error
			if summary, err = s.summarize(ctx, h[1:cut]); err != nil {
				slog.Warn("compaction summary failed; keeping the elided history", "session", s.cfg.ID, "err", err)
			} else {
				kept := h[cut:]
				h = append([]Message{h[0],
					{Role: RoleUser, Content: summaryPrefix + summary, Kind: KindSummary},
					{Role: RoleAssistant, Content: summaryReply, Kind: KindSummaryReply},
				}, kept...)
				turns = append([]string{turns[0], turnID, turnID}, turns[cut:]...)
			}
		}
	}
	if saved == 0 && summary == "" {
		return false
	}
	s.mu.Lock()
	s.history, s.turnOf = h, turns
	s.mu.Unlock()
	s.lastTokens, s.lastCount = 0, 0 // the server's count no longer applies: estimate afresh
	after = s.estimate()
	s.journal(Entry{Type: EntryCompaction, TurnID: turnID, Messages: h, TurnIDs: turns, Summary: summary})
	s.kernel.Emit(Compacted{TurnID: turnID, Before: before, After: after, Summary: summary})
	return true
}

// elideToolOutputs shortens older tool outputs in place and returns the bytes removed.
func elideToolOutputs(h []Message) int {
	saved, seen := 0, 0
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role != RoleTool {
			continue
		}
		seen++
		c := h[i].Content
		if seen <= keepToolOutputs || len(c) <= elideAbove || strings.Contains(c, "[output elided") {
			continue
		}
		keep := c[:elideKeep]
		for len(keep) > 0 && !isRuneStart(keep[len(keep)-1]) {
			keep = keep[:len(keep)-1]
		}
		h[i].Content = fmt.Sprintf("%s\n[output elided to save context: %d bytes. Call the tool again if you need it.]", keep, len(c))
		h[i].Images = nil
		saved += len(c) - len(h[i].Content)
	}
	return saved
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// currentTurnStart returns the index of the current turn's first message: its prompt, or the
// note agentd put before it (SessionConfig.TurnNote). Every message records the turn it joined
// (turns[i], see HistoryTurns), and the current turn's are the last ones, so a steering message
// or a nudge sent later in the turn is never taken for its start: a compaction keeps the prompt
// the turn works on. After a compaction earlier in the same turn, the summary and its answer
// joined the turn too (indices 1 and 2): nothing before the turn is left to summarize. It
// returns 0 (summarize nothing) when no message joined the turn.
func currentTurnStart(turns []string, turnID string) int {
	i := len(turns)
	for i > 0 && turnID != "" && turns[i-1] == turnID {
		i--
	}
	if i == len(turns) {
		return 0
	}
	return i
}

const summaryInstruction = `Summarize the conversation below for yourself, so you can continue the work without it. Keep: the user's goals and constraints, decisions taken, files read or changed (with paths) and what changed, commands run and their outcome, what remains to do. Be concise: at most 300 words. Plain text.`

// summarize asks the model for a summary of older messages.
func (s *Session) summarize(ctx context.Context, older []Message) (string, error) {
	var t strings.Builder
	for _, m := range older {
		switch m.Role {
		case RoleUser:
			t.WriteString("USER: ")
		case RoleAssistant:
			t.WriteString("ASSISTANT: ")
		case RoleTool:
			t.WriteString("TOOL RESULT (" + m.ToolName + "): ")
		default:
			continue
		}
		c := m.Content
		if len(c) > 2000 {
			c = c[:2000] + " […]"
		}
		t.WriteString(c)
		for _, call := range m.ToolCalls {
			fmt.Fprintf(&t, "\n  [called %s %s]", call.Name, truncateBytes(string(call.Arguments), 300))
		}
		t.WriteString("\n\n")
	}
	req := &ModelRequest{
		Messages: []Message{
			{Role: RoleSystem, Content: summaryInstruction},
			{Role: RoleUser, Content: truncateBytes(t.String(), (s.cfg.NumCtx-summaryBudget)*3-2000)},
		},
		NumCtx:     s.cfg.NumCtx,
		NumPredict: summaryBudget,
	}
	resp, err := s.cfg.Model.Chat(ctx, req, func(Delta) {})
	if err != nil {
		return "", err
	}
	sum := strings.TrimSpace(resp.Message.Content)
	if sum == "" {
		return "", fmt.Errorf("the model returned an empty summary")
	}
	return sum, nil
}

func truncateBytes(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + " […]"
}
