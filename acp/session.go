package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools"
)

// session is one ACP session: the harness's live session (which owns the loop and the
// transcript) and the prompt the client waits for. It translates; it keeps no conversation state.
type session struct {
	srv    *server
	o      *opened
	id     string
	detach func() // stops the translation of the session's updates

	mu     sync.Mutex
	turn   *turn
	closed bool
}

// turn is a prompt waiting for its TurnEnd.
type turn struct {
	end       chan turnEnd
	lastDone  string // the last model reply's done reason ("length": max_tokens)
	cancelled bool
	answered  bool
}

type turnEnd struct {
	stop string
	err  *rpcError
}

func (ss *session) running() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.turn != nil
}

// begin starts a turn with the user's text; the returned turn's end channel receives the stop
// reason.
func (ss *session) begin(text string) (*turn, *rpcError) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return nil, errorf(codeInvalidRequest, "session %s is closed", ss.id)
	}
	if ss.turn != nil {
		return nil, errorf(codeInvalidRequest, "a turn is already running in session %s: wait for its response or send session/cancel", ss.id)
	}
	t := &turn{end: make(chan turnEnd, 1)}
	ss.turn = t
	if err := ss.o.prompt(text); err != nil {
		ss.turn = nil
		return nil, setupError(err)
	}
	return t, nil
}

// cancel stops the running turn (session/cancel); its prompt answers "cancelled".
func (ss *session) cancel() {
	ss.mu.Lock()
	if ss.turn != nil {
		ss.turn.cancelled = true
	}
	ss.mu.Unlock()
	ss.o.cancel()
}

// close cancels the turn and closes the loop and the harness (the journal is synced).
func (ss *session) close() {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return
	}
	ss.closed = true
	ss.mu.Unlock()
	if err := ss.o.close(); err != nil {
		slog.Debug("acp: closing the session", "session", ss.id, "err", err)
	}
	ss.mu.Lock()
	if t := ss.turn; t != nil && !t.answered {
		// The loop stopped without a TurnEnd (it was closed mid-turn).
		t.answered = true
		t.end <- turnEnd{stop: "cancelled"}
		ss.turn = nil
	}
	ss.mu.Unlock()
	if ss.detach != nil {
		ss.detach()
	}
}

func (ss *session) update(u map[string]any) {
	ss.srv.c.notify("session/update", map[string]any{"sessionId": ss.id, "update": u})
}

// event translates one update of the session to session/update notifications, in order, and
// answers the prompt at TurnEnd: nothing of the turn is sent after.
func (ss *session) event(u update) {
	switch e := u.Event.(type) {
	case agent.MessageDelta:
		if e.Thinking != "" {
			ss.update(chunk("agent_thought_chunk", e.Thinking))
		}
		if e.Text != "" {
			ss.update(chunk("agent_message_chunk", e.Text))
		}
	case agent.MessageEnd:
		ss.mu.Lock()
		if ss.turn != nil {
			ss.turn.lastDone = e.DoneReason
		}
		ss.mu.Unlock()
		if n := ss.o.numCtx(); n > 0 && e.Usage.PromptTokens+e.Usage.OutputTokens > 0 {
			ss.update(map[string]any{"sessionUpdate": "usage_update",
				"used": e.Usage.PromptTokens + e.Usage.OutputTokens, "size": n})
		}
	case agent.ToolStart:
		ss.update(ss.toolCall(u.Call))
	case agent.ToolUpdate:
		up := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": e.CallID}
		switch {
		case e.Preview != nil:
			content := previewContent(ss.o, e.Preview)
			if len(content) == 0 {
				return
			}
			up["content"] = content
		case e.Progress != nil:
			up["status"] = "in_progress"
		default:
			return
		}
		ss.update(up)
	case agent.ToolEnd:
		up := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": e.CallID, "status": callStatus(u.Call),
			"rawOutput": map[string]any{"type": string(e.Result.Type), "isError": e.Result.IsError}}
		if content := ss.callContent(u.Call); len(content) > 0 {
			up["content"] = content
		}
		ss.update(up)
	case agent.TurnEnd:
		ss.mu.Lock()
		t := ss.turn
		ss.turn = nil
		if t == nil || t.answered {
			ss.mu.Unlock()
			return
		}
		t.answered = true
		ss.mu.Unlock()
		t.end <- stopOf(e, t)
	}
}

// toolCall is a call as a tool_call update: what it is, where, and its state.
func (ss *session) toolCall(c *toolCall) map[string]any {
	u := map[string]any{"sessionUpdate": "tool_call", "toolCallId": c.ID, "title": title(c.Tool, c.Label, c.Args),
		"kind": kindOf(c.Tool), "status": callStatus(c), "rawInput": rawObject(c.Args)}
	if locs := locations(ss.pathsOf(c.Args)); len(locs) > 0 {
		u["locations"] = locs
	}
	return u
}

// callContent is an ended call's content: the diff it applied, and its result's text.
func (ss *session) callContent(c *toolCall) []map[string]any {
	var content []map[string]any
	if c.Result == nil {
		return nil
	}
	if c.Preview != nil && c.Preview.Diff != nil && !c.Result.IsError {
		content = append(content, previewContent(ss.o, c.Preview)...)
	}
	if text := resultText(c.Result); text != "" {
		content = append(content, textContent(text))
	}
	return content
}

// callStatus is the ACP status of a call.
func callStatus(c *toolCall) string {
	switch {
	case c.Result != nil && c.Result.IsError:
		return "failed"
	case c.Result != nil:
		return "completed"
	case c.Status == statusRunning:
		return "in_progress"
	}
	return "pending"
}

// stopOf is the ACP stop reason of a turn's end.
func stopOf(e agent.TurnEnd, t *turn) turnEnd {
	switch e.Reason {
	case "cancelled":
		return turnEnd{stop: "cancelled"}
	case "error":
		if t.cancelled {
			return turnEnd{stop: "cancelled"}
		}
		msg := "the turn failed"
		if e.Err != nil {
			msg = describeErr(e.Err)
		}
		return turnEnd{err: errorf(codeInternal, "%s", msg)}
	case "steps_exhausted", "time_exhausted":
		return turnEnd{stop: "max_turn_requests"}
	case "blocked":
		// A call needed an approval nobody could give: the agent stops, refusing to go on.
		return turnEnd{stop: "refusal"}
	}
	if t.cancelled {
		return turnEnd{stop: "cancelled"}
	}
	if t.lastDone == "length" {
		return turnEnd{stop: "max_tokens"}
	}
	return turnEnd{stop: "end_turn"}
}

// pathsOf returns the absolute paths a call's arguments name (path, file_path), inside the
// workspace or not: they are only shown.
func (ss *session) pathsOf(args json.RawMessage) []string {
	var a map[string]any
	if json.Unmarshal(args, &a) != nil {
		return nil
	}
	var out []string
	for _, k := range []string{"path", "file_path"} {
		if p, ok := a[k].(string); ok && p != "" {
			if !filepath.IsAbs(p) {
				p = filepath.Join(ss.o.workspace(), p)
			}
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

func locations(paths []string) []map[string]any {
	out := make([]map[string]any, 0, len(paths))
	for _, p := range paths {
		out = append(out, map[string]any{"path": p})
	}
	return out
}

func chunk(kind, text string) map[string]any {
	return map[string]any{"sessionUpdate": kind, "content": map[string]any{"type": "text", "text": text}}
}

func textContent(text string) map[string]any {
	return map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": text}}
}

// kindOf is the ACP tool kind of a tool.
func kindOf(tool string) string {
	switch tool {
	case "read":
		return "read"
	case "edit", "write":
		return "edit"
	case "bash":
		return "execute"
	case "glob", "grep", "ls":
		return "search"
	}
	return "other"
}

// title is a call's one-line title: the tool's label, else the tool and its main argument.
func title(tool, label string, args json.RawMessage) string {
	if label != "" && label != tool {
		return label
	}
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	for _, k := range []string{"command", "path", "pattern"} {
		if v, ok := a[k].(string); ok && v != "" {
			return tool + " " + shorten(v, 120)
		}
	}
	return tool
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// rawObject is the arguments as a JSON value (an object, or the text the model sent).
func rawObject(args json.RawMessage) any {
	var v any
	if len(args) == 0 || json.Unmarshal(args, &v) != nil {
		return string(args)
	}
	return v
}

// previewContent is a preview as tool call content: the whole-file diff of an edit (ACP has no
// hunks), or the exact command with its working directory and sandbox.
func previewContent(o *opened, pv *tools.Preview) []map[string]any {
	switch {
	case pv.Diff != nil:
		d := pv.Diff
		c := map[string]any{"type": "diff", "path": filepath.Join(o.workspace(), filepath.FromSlash(d.Path)), "newText": d.New}
		if d.Created {
			c["oldText"] = nil
		} else {
			c["oldText"] = d.Old
		}
		return []map[string]any{c}
	case pv.Command != nil:
		return []map[string]any{textContent(commandText(pv.Command))}
	}
	return nil
}

// commandText shows a command exactly: the shell line, the directory, the sandbox.
func commandText(c *tools.CommandPreview) string {
	line := strings.Join(c.Argv, " ")
	if len(c.Argv) > 0 {
		line = c.Argv[len(c.Argv)-1]
	}
	net := "network off"
	if c.Network {
		net = "network ON"
	}
	return fmt.Sprintf("$ %s\nin %s; sandbox: %s; %s; timeout %ds", line, c.Cwd, c.Sandbox, net, c.TimeoutMS/1000)
}

// maxResultText bounds a tool result shown to the client (the model's copy is not affected).
const maxResultText = 64 << 10

func resultText(r *tools.Result) string {
	t := r.Text()
	if len(t) > maxResultText {
		cut := maxResultText
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = t[:cut] + "\n… (" + strconv.Itoa(len(t)-cut) + " more bytes)"
	}
	return t
}

// ask is the gate's asking half: session/request_permission, with at most one option of each
// kind (clients key the options by kind): the narrowest "for this session" scope for both
// allow_always and reject_always, offered only when the policy has one. Fail closed: an answer
// that is not one of the options, a failed request or a cancelled one rejects the call.
func (ss *session) ask(ctx context.Context, q question) (answer, error) {
	tc := map[string]any{"toolCallId": q.Call.Call.ID, "title": title(q.Call.Call.Name, q.Call.Label, q.Call.Call.Raw),
		"kind": kindOf(q.Call.Call.Name), "status": "pending", "rawInput": rawObject(q.Call.Call.Raw)}
	if q.Call.Preview != nil {
		if c := previewContent(ss.o, q.Call.Preview); len(c) > 0 {
			tc["content"] = c
		}
	} else if q.Call.Label != "" {
		tc["content"] = []map[string]any{textContent(q.Call.Label)}
	}
	if locs := locations(ss.pathsOf(q.Call.Call.Raw)); len(locs) > 0 {
		tc["locations"] = locs
	}
	allow := "Allow once"
	if q.Kind == "edit" {
		allow = "Apply this edit"
	} else if q.Kind == "command" {
		allow = "Run once"
	}
	options := []map[string]any{{"optionId": "allow_once", "name": allow, "kind": "allow_once"}}
	if q.Scope != "" {
		options = append(options, map[string]any{"optionId": "allow_always", "name": "Allow for this session: " + q.Scope, "kind": "allow_always"})
	}
	options = append(options, map[string]any{"optionId": "reject_once", "name": "Reject", "kind": "reject_once"})
	if q.Scope != "" {
		options = append(options, map[string]any{"optionId": "reject_always", "name": "Reject for this session: " + q.Scope, "kind": "reject_always"})
	}
	var res struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	err := ss.srv.c.call(ctx, "session/request_permission", map[string]any{"sessionId": ss.id, "toolCall": tc, "options": options}, &res)
	switch {
	case ctx.Err() != nil:
		return answer{}, ctx.Err()
	case errors.Is(err, errClosed):
		return answer{decision: "reject", reason: "the editor disconnected before answering"}, nil
	case err != nil:
		slog.Debug("acp: the permission request failed; the call is rejected", "session", ss.id, "err", err)
		return answer{decision: "reject", reason: "the permission request failed, so the call was not run"}, nil
	}
	switch res.Outcome.Outcome {
	case "cancelled":
		return answer{decision: "reject", reason: "the permission request was cancelled, so the call was not run"}, nil
	case "selected":
	default:
		slog.Debug("acp: a permission answer with an unknown outcome; the call is rejected", "outcome", res.Outcome.Outcome)
		return answer{decision: "reject", reason: "the editor's answer was not understood, so the call was not run"}, nil
	}
	switch id := res.Outcome.OptionID; {
	case id == "allow_once":
		return answer{decision: "accept"}, nil
	case id == "allow_always" && q.Scope != "":
		return answer{decision: "acceptForSession"}, nil
	case id == "reject_once":
		return answer{decision: "reject"}, nil
	case id == "reject_always" && q.Scope != "":
		return answer{decision: "rejectForSession"}, nil
	}
	slog.Debug("acp: a permission answer with an unknown option id; the call is rejected", "optionId", res.Outcome.OptionID)
	return answer{decision: "reject", reason: "the editor answered with an unknown option, so the call was not run"}, nil
}

// replay sends the transcript as session/update notifications (session/load). agentd's own
// messages are never sent as the user's words (the transcript leaves them out); a compaction's
// summary is an agent message that says what it is.
func (ss *session) replay() {
	for _, t := range ss.o.transcript() {
		for _, it := range t.Items {
			switch it.Kind {
			case itemCompaction:
				ss.update(chunk("agent_message_chunk", compactedPrefix+it.Text))
			case itemUser:
				if it.Text != "" {
					ss.update(chunk("user_message_chunk", it.Text))
				}
			case itemAgent:
				if it.Thinking != "" {
					ss.update(chunk("agent_thought_chunk", it.Thinking))
				}
				if it.Text != "" {
					ss.update(chunk("agent_message_chunk", it.Text))
				}
			case itemTool:
				u := ss.toolCall(it.Tool)
				if content := ss.callContent(it.Tool); len(content) > 0 {
					u["content"] = content
				}
				ss.update(u)
			}
		}
	}
}

// compactedPrefix starts the agent message that replays a compaction's summary.
const compactedPrefix = "Context compacted: the earlier conversation was replaced by this summary.\n\n"
