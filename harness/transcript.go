package harness

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools"
)

// The transcript is the conversation as every front end shows it: turns of typed items. One
// reducer builds it, fed by the journal when a session is resumed (replay) and by the loop's
// events while it runs (apply); the two give the same turns (transcript_test.go). Front ends
// translate it to their wire types and never rebuild it from raw events or messages.

// ItemKind says what an item is.
type ItemKind string

const (
	// ItemUser is the user's words: a turn's prompt, or a message sent while it ran (steering).
	ItemUser ItemKind = "user"
	// ItemAgent is one reply of the model: its text and its reasoning (Thinking).
	ItemAgent ItemKind = "agent"
	// ItemTool is one tool call, with its status, preview and typed result.
	ItemTool ItemKind = "tool"
	// ItemCompaction is a compaction's summary of the turns before it.
	ItemCompaction ItemKind = "compaction"
)

// Tool call statuses.
const (
	ToolPending = "pending"
	// ToolAwaiting: the gate asked the user about the call (a pending question).
	ToolAwaiting  = "awaitingApproval"
	ToolRunning   = "running"
	ToolCompleted = "completed"
	ToolFailed    = "failed"
)

// Item is one element of a turn.
type Item struct {
	Kind ItemKind
	// Text is the user's words, the model's reply, or the compaction's summary.
	Text     string
	Thinking string
	// Context names the editor context sent with a user's prompt, as the editors label it
	// ("cart.go", "cart.go:3-5", "@greet.go"; agent.TurnStart.Context); its text is for the model
	// only and never in Text.
	Context []string
	Tool    *ToolCall
	// Before and After are a live compaction's estimated prompt tokens (0 when replayed).
	Before, After int
}

// ToolCall is one call of the model, as the user sees it.
type ToolCall struct {
	ID, Tool string
	// Label is the call's one-line description ("Edit cart.go"; the tool's name when replayed).
	Label string
	// Args are the arguments as the model sent them (valid JSON: broken ones as a JSON string).
	Args   json.RawMessage
	Status string
	// Preview is the diff or the command shown before the gate (live only: the journal keeps none).
	Preview  *tools.Preview
	Activity string
	// WaitsFor is the ID of the earlier call of the reply changing the same file that this
	// pending call waits for (agent.ToolUpdate.WaitsFor); empty once previewed or ended.
	WaitsFor string
	// Output is, in a snapshot, what a running call streamed so far: its last MaxOutputTail
	// bytes, after a line saying how many earlier bytes are not shown. An update carries the
	// new output in its event (agent.ToolUpdate.Progress) instead.
	Output string
	// Result is the typed result once the call ended.
	Result *tools.Result

	tail outputTail
}

// Failed reports whether the call ended with an error result.
func (c *ToolCall) Failed() bool { return c.Result != nil && c.Result.IsError }

// clone copies the call; withOutput fills Output from what a running call streamed.
func (c *ToolCall) clone(withOutput bool) *ToolCall {
	cp := *c
	cp.tail = outputTail{}
	if withOutput && c.Status == ToolRunning {
		cp.Output = c.tail.text()
	}
	return &cp
}

// Turn is one turn: the prompt and what followed it.
type Turn struct {
	ID string
	// Reason is how the turn ended ("" while it runs, or when agentd stopped during it).
	Reason string
	Items  []Item
}

// transcript is the reducer's state. Not safe for concurrent use: Session guards it.
type transcript struct {
	turns []Turn
	calls map[string]*ToolCall // the current turn's calls, by ID
	open  bool                 // the last item is a reply being streamed
	// failed is the position (from 1) in the current turn of a reply that failed while streaming:
	// the history keeps its text only when the turn was cancelled.
	failed int
	// starts are the turns' starts by ID (replayed, then live): a replay shows a prompt's words
	// and context labels, not the prompt with the context the model read.
	starts map[string]agent.TurnStart
}

// started records a turn's start.
func (t *transcript) started(ts agent.TurnStart) {
	if t.starts == nil {
		t.starts = map[string]agent.TurnStart{}
	}
	t.starts[ts.TurnID] = ts
}

// userItem is the item of a turn's prompt.
func userItem(ts agent.TurnStart) Item {
	return Item{Kind: ItemUser, Text: ts.Words(), Context: ts.Context}
}

// clone returns a deep copy of the turns, for a snapshot.
func (t *transcript) clone() []Turn {
	out := make([]Turn, len(t.turns))
	for i, tn := range t.turns {
		out[i] = Turn{ID: tn.ID, Reason: tn.Reason, Items: make([]Item, len(tn.Items))}
		for j, it := range tn.Items {
			if it.Tool != nil {
				it.Tool = it.Tool.clone(true)
			}
			out[i].Items[j] = it
		}
	}
	return out
}

func (t *transcript) current() *Turn {
	if len(t.turns) == 0 {
		t.turns = append(t.turns, Turn{})
	}
	return &t.turns[len(t.turns)-1]
}

// turn returns the turn with the ID, opening it (after the others) when it is not the last one.
func (t *transcript) turn(id string) *Turn {
	if n := len(t.turns); n > 0 && t.turns[n-1].ID == id {
		return &t.turns[n-1]
	}
	t.turns = append(t.turns, Turn{ID: id})
	t.calls, t.open, t.failed = map[string]*ToolCall{}, false, 0
	return &t.turns[len(t.turns)-1]
}

// replay rebuilds the transcript from the model's history and the turn each message joined
// (agent.Replayed.History and HistoryTurns, or agent.Session.HistoryTurns). reasons are the
// turns' ends by ID. live are calls whose state is newer than the history (the running turn's:
// awaiting a review, running, or ended with a result the history gets at its batch's end).
//
// agentd's own messages are never the user's words: the note at a turn's start and the loop's
// nudges are left out, a compaction's summary is a compaction item and its answer is left out.
// A turn's prompt is its words and context labels (starts), as apply shows it live.
func (t *transcript) replay(msgs []agent.Message, turnOf []string, reasons map[string]string, live map[string]*ToolCall) {
	t.turns, t.calls, t.open, t.failed = nil, map[string]*ToolCall{}, false, 0
	results := map[string]agent.Message{}
	for _, m := range msgs {
		if m.Role == agent.RoleTool {
			results[m.ToolCallID] = m
		}
	}
	cur := ""
	prompted := map[string]bool{} // turns whose prompt is an item already
	for i, m := range msgs {
		if m.Role == agent.RoleSystem || m.Note || m.Kind == agent.KindNudge || m.Kind == agent.KindSummaryReply {
			continue
		}
		// A message whose turn is unknown (a journal written before compactions recorded turns)
		// falls back to counting prompts.
		switch {
		case i < len(turnOf) && turnOf[i] != "":
			cur = turnOf[i]
		case m.Role == agent.RoleUser && m.Kind == "":
			n, _ := strconv.Atoi(strings.TrimPrefix(cur, "t"))
			cur = "t" + strconv.Itoa(n+1)
		}
		switch {
		case m.Kind == agent.KindSummary:
			tn := t.turn(cur)
			tn.Items = append(tn.Items, Item{Kind: ItemCompaction, Text: agent.CompactionSummary(m)})
			continue
		case m.FromAgentd():
			continue // a kind this agentd does not know: agentd's, never the user's words
		}
		switch m.Role {
		case agent.RoleUser:
			tn := t.turn(cur)
			if ts, ok := t.starts[cur]; ok && !prompted[cur] && m.Content == ts.Prompt {
				prompted[cur] = true
				tn.Items = append(tn.Items, userItem(ts))
				continue
			}
			tn.Items = append(tn.Items, Item{Kind: ItemUser, Text: m.Content})
		case agent.RoleAssistant:
			tn := t.turn(cur)
			if m.Content != "" || m.Thinking != "" {
				tn.Items = append(tn.Items, Item{Kind: ItemAgent, Text: m.Content, Thinking: m.Thinking})
			}
			for _, call := range m.ToolCalls {
				c := live[call.ID]
				if c == nil {
					c = &ToolCall{ID: call.ID, Tool: call.Name, Label: call.Name, Args: validJSON(call.Arguments), Status: ToolPending}
					if r, ok := results[call.ID]; ok {
						res := agent.ResultOf(r)
						c.Result, c.Status = &res, ToolCompleted
						if res.IsError {
							c.Status = ToolFailed
						}
					}
					// Every call ends with a result (a replayed session's interrupted ones too), so
					// one without is of the running batch and not started yet.
				}
				t.calls[c.ID] = c
				tn.Items = append(tn.Items, Item{Kind: ItemTool, Tool: c})
			}
		}
	}
	for i := range t.turns {
		t.turns[i].Reason = reasons[t.turns[i].ID]
	}
}

// apply reduces one event of the loop and returns the call it changed (nil for other events).
func (t *transcript) apply(e agent.Event) *ToolCall {
	switch e := e.(type) {
	case agent.TurnStart:
		t.started(e)
		tn := t.turn(e.TurnID)
		tn.Items = append(tn.Items, userItem(e))
	case agent.UserMessage:
		tn := t.turn(e.TurnID)
		tn.Items = append(tn.Items, Item{Kind: ItemUser, Text: e.Text})
	case agent.MessageDelta:
		it := t.reply(t.turn(e.TurnID))
		it.Text += e.Text
		it.Thinking += e.Thinking
	case agent.MessageEnd:
		if e.DoneReason != "error" {
			break // the reply is final once recorded (ReplyRecorded)
		}
		// A failed reply is not in the history, but for the text the user saw stream before
		// cancelling the turn: kept until the turn's end says whether it was cancelled.
		tn := t.turn(e.TurnID)
		if t.open {
			t.open = false
			it := &tn.Items[len(tn.Items)-1]
			it.Thinking = ""
			if it.Text == "" {
				tn.Items = tn.Items[:len(tn.Items)-1]
			} else {
				t.failed = len(tn.Items)
			}
		}
	case agent.ReplyRecorded:
		tn := t.turn(e.TurnID)
		it := t.reply(tn)
		it.Text, it.Thinking = e.Message.Content, e.Message.Thinking
		t.open = false // the next reply is an item of its own
		if it.Text == "" && it.Thinking == "" {
			tn.Items = tn.Items[:len(tn.Items)-1] // an empty reply shows nothing
		}
		for _, call := range e.Message.ToolCalls {
			c := &ToolCall{ID: call.ID, Tool: call.Name, Label: call.Name, Args: validJSON(call.Arguments), Status: ToolPending}
			t.calls[c.ID] = c
			tn.Items = append(tn.Items, Item{Kind: ItemTool, Tool: c})
		}
	case agent.ToolStart:
		c := t.calls[e.CallID]
		if c == nil { // not of a recorded reply
			c = &ToolCall{ID: e.CallID, Tool: e.Tool, Args: validJSON(e.Args), Status: ToolPending}
			t.calls[c.ID] = c
			tn := t.current()
			tn.Items = append(tn.Items, Item{Kind: ItemTool, Tool: c})
		}
		c.Label = e.Label
		if c.Label == "" {
			c.Label = e.Tool
		}
		return c
	case agent.ToolUpdate:
		c := t.calls[e.CallID]
		if c == nil {
			return nil
		}
		if e.Label != "" {
			c.Label = e.Label
		}
		switch {
		case e.WaitsFor != "":
			c.WaitsFor = e.WaitsFor
		case e.Preview != nil:
			c.Preview, c.WaitsFor = e.Preview, ""
		case e.Progress != nil:
			c.Status = ToolRunning
			c.tail.add(e.Progress.Text)
		case e.Activity != "":
			c.Status, c.Activity = ToolRunning, e.Activity
		}
		return c
	case agent.ToolEnd:
		c := t.calls[e.CallID]
		if c == nil {
			c = &ToolCall{ID: e.CallID, Tool: e.Tool, Label: e.Tool}
			t.calls[c.ID] = c
			tn := t.current()
			tn.Items = append(tn.Items, Item{Kind: ItemTool, Tool: c})
		}
		res := e.Result
		c.Result, c.Status, c.tail, c.WaitsFor = &res, ToolCompleted, outputTail{}, ""
		if res.IsError {
			c.Status = ToolFailed
		}
		return c
	case agent.TurnEnd:
		tn := t.turn(e.TurnID)
		tn.Reason = e.Reason
		if t.failed > 0 && e.Reason != "cancelled" && t.failed <= len(tn.Items) {
			tn.Items = append(tn.Items[:t.failed-1], tn.Items[t.failed:]...)
		}
		t.failed = 0
	}
	return nil
}

// reply returns the turn's reply being streamed, adding it at the first delta.
func (t *transcript) reply(tn *Turn) *Item {
	if n := len(tn.Items); t.open && n > 0 && tn.Items[n-1].Kind == ItemAgent {
		return &tn.Items[n-1]
	}
	t.open = true
	tn.Items = append(tn.Items, Item{Kind: ItemAgent})
	return &tn.Items[len(tn.Items)-1]
}

// MaxOutputTail bounds the output of a running call kept for front ends that attach while it
// runs: the last 64 KiB, what the editors keep of a call's output too.
const MaxOutputTail = 64 << 10

// outputTail keeps the last MaxOutputTail bytes a running call streamed and counts the bytes
// cut before them. It holds up to twice that, so cutting copies once per MaxOutputTail bytes.
type outputTail struct {
	buf []byte
	cut int64
}

func (o *outputTail) add(s string) {
	o.buf = append(o.buf, s...)
	if len(o.buf) > 2*MaxOutputTail {
		drop := len(o.buf) - MaxOutputTail
		o.cut += int64(drop)
		o.buf = append(o.buf[:0], o.buf[drop:]...)
	}
}

// text is the kept output, starting at a character boundary, after a line that says how much
// earlier output is not shown.
func (o *outputTail) text() string {
	b, cut := o.buf, o.cut
	if over := len(b) - MaxOutputTail; over > 0 {
		b, cut = b[over:], cut+int64(over)
	}
	if cut == 0 {
		return string(b)
	}
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b, cut = b[1:], cut+1
	}
	return fmt.Sprintf("[… %d earlier bytes of output not shown …]\n%s", cut, b)
}

func validJSON(b json.RawMessage) json.RawMessage {
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b)) // the model's broken arguments, shown as a string
	return s
}
