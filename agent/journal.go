package agent

import (
	"strings"
	"time"

	"github.com/agentd/agentd/tools"
)

// Journal persists a session as an append-only sequence of entries. The loop appends as things
// happen and calls Sync at turn boundaries (and before it waits for a user). A store that is read
// back replays the entries to rebuild the session (see Replay). Implementations: agent/store.
type Journal interface {
	Append(e Entry) error
	Sync() error
}

// Entry kinds.
const (
	EntrySession    = "session"    // first entry: the session's settings
	EntryTurnStart  = "turnStart"  // a user prompt starts a turn
	EntryMessage    = "message"    // a message joins the model's history
	EntryTurnEnd    = "turnEnd"    // a turn ended (reason)
	EntryCompaction = "compaction" // history was rewritten: Messages replace everything before
	EntryUsage      = "usage"      // one model call's usage
	EntryTitle      = "title"      // the session got a (new) title
	EntryMode       = "mode"       // the approval mode changed
)

// Entry is one line of a session journal.
type Entry struct {
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	// TurnID is set for every entry that belongs to a turn.
	TurnID string `json:"turnId,omitzero"`
	// Session is set on the first entry.
	Session *SessionSettings `json:"session,omitzero"`
	// Message is set for EntryMessage; Prompt for EntryTurnStart.
	Message *Message `json:"message,omitzero"`
	Prompt  string   `json:"prompt,omitzero"`
	// Typed is the user's own words of an EntryTurnStart whose Prompt has editor context
	// appended (the active file, a selection, mentions); empty when Prompt is all the user wrote.
	Typed string `json:"typed,omitzero"`
	// Context names the pieces of that editor context as the editors label them ("cart.go",
	// "cart.go:3-5", "@greet.go"); absent in journals written before it existed.
	Context []string `json:"context,omitzero"`
	// Reason is set for EntryTurnEnd; Error carries the failure of an "error" end.
	Reason string `json:"reason,omitzero"`
	Error  string `json:"error,omitzero"`
	// Messages is set for EntryCompaction: the whole history after compaction.
	Messages []Message `json:"messages,omitzero"`
	// TurnIDs, for EntryCompaction, is the turn each of Messages joined ("" for the system
	// prompt); absent in journals written before it existed.
	TurnIDs []string `json:"turnIds,omitzero"`
	Summary string   `json:"summary,omitzero"`
	Usage   *Usage   `json:"usage,omitzero"`
	// Title and Mode are set for EntryTitle and EntryMode.
	Title string `json:"title,omitzero"`
	Mode  string `json:"mode,omitzero"`
}

// SessionSettings are a session's settings as stored.
type SessionSettings struct {
	ID           string    `json:"id"`
	Workspace    string    `json:"workspace"` // absolute path of the workspace root
	Model        string    `json:"model"`
	ApprovalMode string    `json:"approvalMode"`
	NumCtx       int       `json:"numCtx"`
	Created      time.Time `json:"created"`
}

// Replayed is a session rebuilt from its journal.
type Replayed struct {
	Settings SessionSettings
	Title    string
	Mode     string
	// History is the model's history (after the last compaction).
	History []Message
	// HistoryTurns is, for each message of History, the ID of the turn it joined ("" for the
	// system prompt, and where a journal written before compactions recorded it does not say).
	HistoryTurns []string
	// Turns lists the turns in order with their prompts and how they ended ("" while open: the
	// daemon crashed during that turn).
	Turns   []ReplayedTurn
	Updated time.Time
}

// ReplayedTurn is one turn of a replayed session.
type ReplayedTurn struct {
	ID     string
	Prompt string
	// Typed is the user's own words when Prompt has editor context appended (Entry.Typed).
	Typed string
	// Context names the pieces of the editor context (Entry.Context).
	Context []string
	Reason  string
}

// Words is what the user wrote for the turn: the prompt without the editor context agentd
// appended to it.
func (t ReplayedTurn) Words() string {
	if t.Typed != "" {
		return t.Typed
	}
	return t.Prompt
}

// Start is the turn's start as the loop emitted it (agent.TurnStart), for a reducer fed by both.
func (t ReplayedTurn) Start() TurnStart {
	return TurnStart{TurnID: t.ID, Prompt: t.Prompt, Typed: t.Typed, Context: t.Context}
}

// Replay rebuilds a session from its entries, in order. Unknown entry types are skipped, so a
// newer journal can be read by an older agentd.
func Replay(entries []Entry) Replayed {
	var r Replayed
	for _, e := range entries {
		if !e.Time.IsZero() {
			r.Updated = e.Time
		}
		switch e.Type {
		case EntrySession:
			if e.Session != nil {
				r.Settings = *e.Session
				r.Mode = e.Session.ApprovalMode
			}
		case EntryTitle:
			r.Title = e.Title
		case EntryMode:
			r.Mode = e.Mode
		case EntryTurnStart:
			r.Turns = append(r.Turns, ReplayedTurn{ID: e.TurnID, Prompt: e.Prompt, Typed: e.Typed, Context: e.Context})
		case EntryTurnEnd:
			for i := len(r.Turns) - 1; i >= 0; i-- {
				if r.Turns[i].ID == e.TurnID {
					r.Turns[i].Reason = e.Reason
					break
				}
			}
		case EntryMessage:
			if e.Message != nil {
				r.History = append(r.History, *e.Message)
				r.HistoryTurns = append(r.HistoryTurns, e.TurnID)
			}
		case EntryCompaction:
			r.History = append([]Message(nil), e.Messages...)
			r.HistoryTurns = make([]string, len(e.Messages))
			if len(e.TurnIDs) == len(e.Messages) {
				copy(r.HistoryTurns, e.TurnIDs)
			}
		}
	}
	r.History = answerDanglingCalls(r.History)
	markLegacyKinds(r.History)
	for len(r.HistoryTurns) < len(r.History) { // the answers to dangling calls: the last turn's
		last := ""
		if n := len(r.HistoryTurns); n > 0 {
			last = r.HistoryTurns[n-1]
		}
		r.HistoryTurns = append(r.HistoryTurns, last)
	}
	return r
}

// msgInterrupted answers tool calls that never got a result because agentd stopped mid-turn.
const msgInterrupted = "Not run: agentd stopped before this call ran. Check the file or state before retrying."

// answerDanglingCalls appends a result for every tool call of the last assistant message that has
// none (a crash between a model reply and its tool results), so the history stays valid.
func answerDanglingCalls(h []Message) []Message {
	last := -1
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == RoleAssistant && len(h[i].ToolCalls) > 0 {
			last = i
			break
		}
		if h[i].Role == RoleUser {
			break
		}
	}
	if last < 0 {
		return h
	}
	answered := map[string]bool{}
	for _, m := range h[last+1:] {
		if m.Role == RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	for _, c := range h[last].ToolCalls {
		if !answered[c.ID] {
			h = append(h, Message{Role: RoleTool, ToolCallID: c.ID, ToolName: c.Name, Content: msgInterrupted,
				IsError: true, ErrorType: tools.Cancelled})
		}
	}
	return h
}

// markLegacyKinds sets Message.Kind on agentd's own messages in a history read from a journal
// written before Kind existed, recognised by their fixed texts: the loop's nudges, and a
// compaction's summary (right after the system prompt) with its answer. What the model reads is
// unchanged.
func markLegacyKinds(h []Message) {
	for i := range h {
		m := &h[i]
		if m.Role != RoleUser || m.FromAgentd() {
			continue
		}
		switch {
		case m.Content == legacyNudgeEmpty || m.Content == nudgeCut:
			m.Kind = KindNudge
		case i == 1 && len(h) > 2 && strings.HasPrefix(m.Content, summaryPrefix) &&
			h[2].Role == RoleAssistant && h[2].Content == summaryReply && !h[2].FromAgentd():
			m.Kind, h[2].Kind = KindSummary, KindSummaryReply
		}
	}
}
