package agent

import (
	"encoding/json"

	"github.com/agentd/agentd/tools"
)

// Event is one typed event of a session. Consumers switch on the concrete type. Delivery: every
// event reaches the sink in the order it was emitted for a given tool call or message; a sink is
// called by one goroutine at a time.
type Event interface{ isEvent() }

// Sink receives events. It must not block for long: the session waits for it.
type Sink func(Event)

// TurnStart opens a turn (one user prompt and everything the agent does for it).
type TurnStart struct {
	TurnID string
	// Prompt is what the model reads: the user's words and the editor context appended to them.
	Prompt string
	// Typed is the user's own words when Prompt has editor context appended; else empty.
	Typed string
	// Context names the pieces of editor context appended to Prompt, as the editors label them
	// (EditorContext.Labels); empty without context.
	Context []string
}

// Words is what the user wrote: the prompt without the editor context agentd appended.
func (e TurnStart) Words() string {
	if e.Typed != "" {
		return e.Typed
	}
	return e.Prompt
}

// MessageStart opens an assistant message (one model call).
type MessageStart struct {
	TurnID string
	Step   int // model calls in this turn, from 1
}

// MessageDelta is streamed text or thinking of the current assistant message.
type MessageDelta struct {
	TurnID   string
	Text     string
	Thinking string
}

// MessageEnd closes an assistant message with its complete content and the tool calls it made.
type MessageEnd struct {
	TurnID     string
	Message    Message
	DoneReason string
	Usage      Usage
}

// ReplyRecorded is the model's reply as the history records it, right after its MessageEnd: the
// text without the tool calls written in it, and the calls it made with their IDs, none started
// yet (each gets its ToolStart and ToolEnd).
type ReplyRecorded struct {
	TurnID  string
	Message Message
}

// ToolStart opens a tool call. Args are the arguments exactly as the model sent them.
type ToolStart struct {
	CallID string
	Tool   string
	Label  string
	Args   json.RawMessage
}

// ToolUpdate reports a preview (before the gate) or progress (while the call runs). Label, when
// set, is the call's label computed from its validated arguments ("Edit cart.go").
// FollowUpEnd says what became of one change a call proposed after it ran (tools.FollowUp: what
// a command changed that needs review): applied, or not and why (Type: RejectedByUser,
// PermissionDenied, ApprovalUnavailable; "" when it could not be applied or the turn ended).
// Text is what the model reads about it.
type FollowUpEnd struct {
	CallID  string
	Subject string
	Applied bool
	Type    tools.ResultType
	Text    string
}

type ToolUpdate struct {
	CallID   string
	Tool     string
	Label    string
	Preview  *tools.Preview
	Progress *tools.Progress
	Activity string
	// WaitsFor, sent right after the Start of a file change reviewed with the others of its reply
	// (Config.ReviewTogether), is the call ID of the earlier change of the same file it waits for:
	// it is previewed and put to its gate once that one has ended.
	WaitsFor string
}

// ToolEnd closes a tool call with its typed result. Every ToolStart has exactly one ToolEnd with
// the same CallID.
type ToolEnd struct {
	CallID string
	Tool   string
	Result tools.Result
}

// Compacted reports that older history was compacted to fit the context window.
type Compacted struct {
	TurnID        string
	Before, After int // estimated prompt tokens
	Summary       string
}

// TurnEnd closes a turn. Reason is "done", "cancelled", "steps_exhausted", "time_exhausted",
// "terminated", "blocked" (a call was refused with GateDecision.EndTurn) or "error"; Err is set
// for "error".
type TurnEnd struct {
	TurnID string
	Reason string
	Err    error
}

func (TurnStart) isEvent()     {}
func (FollowUpEnd) isEvent()   {}
func (MessageStart) isEvent()  {}
func (MessageDelta) isEvent()  {}
func (MessageEnd) isEvent()    {}
func (ReplyRecorded) isEvent() {}
func (ToolStart) isEvent()     {}
func (ToolUpdate) isEvent()    {}
func (ToolEnd) isEvent()       {}
func (Compacted) isEvent()     {}
func (TurnEnd) isEvent()       {}

// UserMessage is a user message that joined a running turn (steering).
type UserMessage struct {
	TurnID string
	Text   string
}

func (UserMessage) isEvent() {}
