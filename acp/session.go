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

// session is one ACP session: its harness, its agent loop and the turn the client waits for.
type session struct {
	srv  *server
	o    *opened
	id   string
	sess *agent.Session

	mu           sync.Mutex
	turn         *turn
	closed       bool
	rejectAlways map[string]bool // scopes the user rejected for the session
	calls        map[string]*callInfo
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

// callInfo is what the updates of a call need from its start.
type callInfo struct {
	tool  string
	kind  string
	paths []string
	diff  map[string]any // the diff content, once previewed
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
	if _, err := ss.sess.Prompt(text); err != nil {
		ss.turn = nil
		return nil, errorf(codeInternal, "%v", err)
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
	ss.sess.Cancel()
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
	if ss.sess != nil {
		ss.sess.Close()
	}
	ss.mu.Lock()
	if t := ss.turn; t != nil && !t.answered {
		// The loop stopped without a TurnEnd (it was closed mid-turn).
		t.answered = true
		t.end <- turnEnd{stop: "cancelled"}
		ss.turn = nil
	}
	ss.mu.Unlock()
	if err := ss.o.close(); err != nil {
		slog.Warn("acp: closing the session", "session", ss.id, "err", err)
	}
}

func (ss *session) update(u map[string]any) {
	ss.srv.c.notify("session/update", map[string]any{"sessionId": ss.id, "update": u})
}

// event maps the loop's events to session/update notifications, in order (the loop calls it
// from its goroutine), and answers the prompt at TurnEnd: nothing of the turn is sent after.
func (ss *session) event(e agent.Event) {
	switch e := e.(type) {
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
		ci := &callInfo{tool: e.Tool, kind: kindOf(e.Tool)}
		ci.paths = ss.pathsOf(e.Args)
		ss.mu.Lock()
		if ss.calls == nil {
			ss.calls = map[string]*callInfo{}
		}
		ss.calls[e.CallID] = ci
		ss.mu.Unlock()
		u := map[string]any{"sessionUpdate": "tool_call", "toolCallId": e.CallID, "title": title(e.Tool, e.Label, e.Args),
			"kind": ci.kind, "status": "pending", "rawInput": rawObject(e.Args)}
		if locs := locations(ci.paths); len(locs) > 0 {
			u["locations"] = locs
		}
		ss.update(u)
	case agent.ToolUpdate:
		ci := ss.call(e.CallID)
		u := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": e.CallID}
		switch {
		case e.Preview != nil:
			content := previewContent(ss.o, e.Preview)
			if ci != nil && len(content) > 0 && content[0]["type"] == "diff" {
				ss.mu.Lock()
				ci.diff = content[0]
				ss.mu.Unlock()
			}
			if len(content) == 0 {
				return
			}
			u["content"] = content
		case e.Progress != nil:
			u["status"] = "in_progress"
		default:
			return
		}
		ss.update(u)
	case agent.ToolEnd:
		ci := ss.call(e.CallID)
		status := "completed"
		if e.Result.IsError {
			status = "failed"
		}
		var content []map[string]any
		if ci != nil && ci.diff != nil && !e.Result.IsError {
			content = append(content, ci.diff)
		}
		if text := resultText(&e.Result); text != "" {
			content = append(content, textContent(text))
		}
		u := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": e.CallID, "status": status,
			"rawOutput": map[string]any{"type": string(e.Result.Type), "isError": e.Result.IsError}}
		if len(content) > 0 {
			u["content"] = content
		}
		ss.update(u)
		ss.mu.Lock()
		delete(ss.calls, e.CallID)
		ss.mu.Unlock()
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

func (ss *session) call(id string) *callInfo {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.calls[id]
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

// ask is the gate's asking half: session/request_permission. Fail closed: an answer that is not
// one of the options, a failed request or a cancelled one rejects the call.
func (ss *session) ask(ctx context.Context, q question) (answer, error) {
	key := rejectKey(q)
	ss.mu.Lock()
	rejected := ss.rejectAlways[key]
	ss.mu.Unlock()
	if rejected {
		return answer{decision: "reject", by: byGrant, reason: "the user chose to reject " + key + " for this session"}, nil
	}
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
	for i, g := range q.Grants {
		options = append(options, map[string]any{"optionId": "allow_always:" + strconv.Itoa(i),
			"name": "Allow for this session: " + g, "kind": "allow_always"})
	}
	options = append(options,
		map[string]any{"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
		map[string]any{"optionId": "reject_always", "name": "Reject for this session: " + key, "kind": "reject_always"})
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
		slog.Warn("acp: the permission request failed; the call is rejected", "session", ss.id, "err", err)
		return answer{decision: "reject", reason: "the permission request failed, so the call was not run"}, nil
	}
	switch res.Outcome.Outcome {
	case "cancelled":
		return answer{decision: "reject", reason: "the permission request was cancelled, so the call was not run"}, nil
	case "selected":
	default:
		slog.Warn("acp: a permission answer with an unknown outcome; the call is rejected", "outcome", res.Outcome.Outcome)
		return answer{decision: "reject", reason: "the editor's answer was not understood, so the call was not run"}, nil
	}
	switch id := res.Outcome.OptionID; {
	case id == "allow_once":
		return answer{decision: "accept"}, nil
	case strings.HasPrefix(id, "allow_always:"):
		i, err := strconv.Atoi(strings.TrimPrefix(id, "allow_always:"))
		if err == nil && i >= 0 && i < len(q.Grants) {
			return answer{decision: "acceptForSession", grant: i}, nil
		}
	case id == "reject_once":
		return answer{decision: "reject"}, nil
	case id == "reject_always":
		ss.mu.Lock()
		ss.rejectAlways[key] = true
		ss.mu.Unlock()
		return answer{decision: "reject", reason: "the user rejected " + key + " for this session"}, nil
	}
	slog.Warn("acp: a permission answer with an unknown option id; the call is rejected", "optionId", res.Outcome.OptionID)
	return answer{decision: "reject", reason: "the editor answered with an unknown option, so the call was not run"}, nil
}

// rejectKey is the scope a "reject always" covers: the narrowest session grant the policy would
// offer for the call (a command prefix, a tool), else the tool.
func rejectKey(q question) string {
	if len(q.Grants) > 0 {
		return q.Grants[0]
	}
	return "tool " + q.Call.Call.Name
}

// replay sends the session's history as session/update notifications (session/load). agentd's
// own messages are never sent as the user's words: the note at a turn's start, the loop's nudges
// and the answer to a compaction's summary are left out; the summary is an agent message that
// says what it is.
func (ss *session) replay() {
	for _, m := range ss.sess.History() {
		if m.Kind == agent.KindSummary {
			ss.update(chunk("agent_message_chunk", compactedPrefix+agent.CompactionSummary(m)))
			continue
		}
		if m.FromAgentd() {
			continue
		}
		switch m.Role {
		case agent.RoleUser:
			if m.Content != "" {
				ss.update(chunk("user_message_chunk", m.Content))
			}
		case agent.RoleAssistant:
			if m.Thinking != "" {
				ss.update(chunk("agent_thought_chunk", m.Thinking))
			}
			if m.Content != "" {
				ss.update(chunk("agent_message_chunk", m.Content))
			}
			for _, tc := range m.ToolCalls {
				u := map[string]any{"sessionUpdate": "tool_call", "toolCallId": tc.ID, "title": title(tc.Name, "", tc.Arguments),
					"kind": kindOf(tc.Name), "status": "pending", "rawInput": rawObject(tc.Arguments)}
				if locs := locations(ss.pathsOf(tc.Arguments)); len(locs) > 0 {
					u["locations"] = locs
				}
				ss.update(u)
			}
		case agent.RoleTool:
			u := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": m.ToolCallID, "status": "completed"}
			if m.Content != "" {
				u["content"] = []map[string]any{textContent(shortenResult(m.Content))}
			}
			ss.update(u)
		}
	}
}

// compactedPrefix starts the agent message that replays a compaction's summary.
const compactedPrefix = "Context compacted: the earlier conversation was replaced by this summary.\n\n"

func shortenResult(s string) string {
	r := tools.Result{Content: []tools.Block{{Type: "text", Text: s}}}
	return resultText(&r)
}
