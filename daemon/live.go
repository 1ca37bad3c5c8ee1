package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentd/agentd/harness"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools"
)

// liveSession is a loaded session: its harness, its agent loop (started at the first prompt, so
// a stored session can be attached and read while the model server is down), the editors
// attached to it, and its pending reviews.
type liveSession struct {
	srv *Server
	h   *harness.Harness

	mu      sync.Mutex
	agent   *agent.Session
	clients map[*client]bool
	pending map[string]*review
	calls   map[string]*rpc.ToolCallInfo // tool calls of the current (or last) turn, by call ID, ended ones too
	output  map[string]*outputTail       // what each running call of the turn streamed (its last maxReplayedOutput bytes)
	turn    string
	token   string // work-done progress token of the running turn
	updated time.Time

	prog progressQueue

	unified unifiedMemo // the unified text of the last diff shown (reviews.go)
}

func (s *Server) newLive(h *harness.Harness) *liveSession {
	ls := &liveSession{srv: s, h: h, clients: map[*client]bool{}, pending: map[string]*review{},
		calls: map[string]*rpc.ToolCallInfo{}, updated: time.Now()}
	s.mu.Lock()
	s.sessions[h.ID()] = ls
	s.mu.Unlock()
	return ls
}

// session finds a live session, loading a stored one with the connection's settings.
func (s *Server) session(id string, c *client) (*liveSession, error) {
	s.mu.Lock()
	ls := s.sessions[id]
	s.mu.Unlock()
	if ls != nil {
		return ls, nil
	}
	if id == "" {
		return nil, rpc.Errorf(rpc.CodeUnknownSession, "sessionId is required")
	}
	c.mu.Lock()
	init := c.init
	c.mu.Unlock()
	h, err := s.rt.Open(harness.SessionSpec{ID: id, Overlay: s.overlay, Writer: editorWriter{s}, Diagnostics: editorDiagnostics{s}, OllamaHost: init.OllamaHost, ContextCap: init.ContextLength})
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeUnknownSession, "session %s: %v", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if other := s.sessions[id]; other != nil { // loaded concurrently
		h.Close()
		return other, nil
	}
	ls = &liveSession{srv: s, h: h, clients: map[*client]bool{}, pending: map[string]*review{},
		calls: map[string]*rpc.ToolCallInfo{}, updated: time.Now()}
	s.sessions[id] = ls
	return ls, nil
}

// attach adds an editor and returns what each running call has streamed so far, read in the
// same critical section: a chunk of output is either in it or sent to the editor as an update
// (sink), never both, never neither.
func (ls *liveSession) attach(c *client) (outputs map[string]string) {
	ls.mu.Lock()
	ls.clients[c] = true
	for id, o := range ls.output {
		if outputs == nil {
			outputs = map[string]string{}
		}
		outputs[id] = o.text()
	}
	ls.mu.Unlock()
	c.mu.Lock()
	c.attached[ls.h.ID()] = ls
	c.mu.Unlock()
	return outputs
}

// detach removes an editor. Reviews nobody attached can answer any more are rejected: fail closed.
func (ls *liveSession) detach(c *client) {
	ls.mu.Lock()
	delete(ls.clients, c)
	reviewers := 0
	for other := range ls.clients {
		if other.reviews() {
			reviewers++
		}
	}
	var orphaned []*review
	if reviewers == 0 {
		for _, r := range ls.pending {
			orphaned = append(orphaned, r)
		}
	}
	ls.mu.Unlock()
	for _, r := range orphaned {
		r.settle(harness.Answer{Decision: harness.AnswerUnavailable, By: "disconnect",
			Reason: "the editor that was reviewing it disconnected before the user decided"}, "rejected", "disconnect")
	}
}

func (ls *liveSession) attachedCount() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.clients)
}

func (ls *liveSession) clientsSnapshot() []*client {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	out := make([]*client, 0, len(ls.clients))
	for c := range ls.clients {
		out = append(out, c)
	}
	return out
}

// ensureStarted starts the agent loop at the first prompt.
func (ls *liveSession) ensureStarted(ctx context.Context) (*agent.Session, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.agent != nil {
		return ls.agent, nil
	}
	g := &editorAsker{ls: ls}
	sess, err := ls.h.Start(ctx, g, ls.sink)
	if err != nil {
		return nil, err
	}
	ls.agent = sess
	return sess, nil
}

func (ls *liveSession) cancel() bool {
	ls.mu.Lock()
	a := ls.agent
	ls.mu.Unlock()
	return a != nil && a.Cancel()
}

func (ls *liveSession) running() string {
	ls.mu.Lock()
	a := ls.agent
	ls.mu.Unlock()
	if a == nil {
		return ""
	}
	return a.Running()
}

func (ls *liveSession) progressToken() string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.token
}

func (ls *liveSession) close() {
	ls.mu.Lock()
	a := ls.agent
	ls.mu.Unlock()
	if a != nil {
		a.Close()
	}
	ls.h.Close()
}

// info describes the session for the wire.
func (ls *liveSession) info() rpc.SessionInfo {
	h := ls.h
	ls.mu.Lock()
	updated := ls.updated
	turns := len(h.Replayed.Turns)
	if ls.agent != nil {
		turns = ls.turnCount()
	}
	ls.mu.Unlock()
	st := h.Settings() // SetMode and Start change them meanwhile
	return rpc.SessionInfo{
		SessionID: h.ID(), Title: h.Title, WorkspaceFolder: fileURI(h.Workspace()), Model: st.Model,
		ApprovalMode: st.ApprovalMode, ContextLength: st.NumCtx,
		CreatedAt: st.Created.UTC().Format(time.RFC3339), UpdatedAt: updated.UTC().Format(time.RFC3339),
		Turns: turns, Running: ls.running() != "", Attached: ls.attachedCount(),
		Instructions: instructionsInfo(h), Warnings: sessionWarnings(h),
	}
}

// turnCount is the number of turns started (replayed ones plus those of this run). ls.mu held.
func (ls *liveSession) turnCount() int {
	n := len(ls.h.Replayed.Turns)
	if ls.turn != "" {
		if k, err := strconv.Atoi(ls.turn[1:]); err == nil && k > n {
			n = k
		}
	}
	return n
}

// history renders the conversation for an attaching editor; outputs is what attach returned.
func (ls *liveSession) history(outputs map[string]string) []rpc.HistoryItem {
	ls.mu.Lock()
	a := ls.agent
	ls.mu.Unlock()
	msgs, turns := ls.h.Replayed.History, ls.h.Replayed.HistoryTurns
	if a != nil {
		msgs, turns = a.HistoryTurns()
	}
	// The running turn's calls as the editors were last told, read after the history: a call of
	// the history that is among them is shown so (pending, waiting for a review, running, or
	// ended with a result not yet in the history, which gets a batch's results at its end). An
	// editor attaches before its history is read, so it gets every later change as an update.
	ls.mu.Lock()
	live := make(map[string]*rpc.ToolCallInfo, len(ls.calls))
	for id, info := range ls.calls {
		live[id] = cloneCall(info)
		// What a running call streamed before this editor attached (the tail): the updates
		// sent to it since then append to it. An ended call's result carries its output.
		live[id].Progress = ""
		if info.Status == rpc.StatusRunning {
			live[id].Progress = outputs[id]
		}
	}
	ls.mu.Unlock()
	var out []rpc.HistoryItem
	results := map[string]agent.Message{}
	for _, m := range msgs {
		if m.Role == agent.RoleTool {
			results[m.ToolCallID] = m
		}
	}
	// Each message carries the turn it joined, as the agent recorded it: a steering message, a
	// nudge of the loop or a compaction's summary belongs to the turn it was sent in, so the IDs
	// are the ones the live updates carry. Only a message whose turn is unknown (a journal
	// written before compactions recorded turns) falls back to counting prompts.
	//
	// agentd's own messages are never shown as the user's words: the note at a turn's start (an
	// undo) and the loop's nudges (after an empty or cut reply) are left out, as in the live
	// updates; a compaction's summary is the "compaction" item (the live update's), and its
	// answer is left out.
	var cur string
	for i, m := range msgs {
		if m.Note || m.Kind == agent.KindNudge || m.Kind == agent.KindSummaryReply {
			continue
		}
		switch {
		case i < len(turns) && turns[i] != "":
			cur = turns[i]
		case m.Role == agent.RoleUser && m.Kind == "":
			n, _ := strconv.Atoi(strings.TrimPrefix(cur, "t"))
			cur = "t" + strconv.Itoa(n+1)
		}
		switch {
		case m.Kind == agent.KindSummary:
			out = append(out, rpc.HistoryItem{Type: rpc.HistoryCompaction, TurnID: cur,
				Compaction: &rpc.CompactionInfo{Summary: agent.CompactionSummary(m)}})
			continue
		case m.FromAgentd():
			continue // a kind this daemon does not know: agentd's, never the user's words
		}
		switch m.Role {
		case agent.RoleUser:
			out = append(out, rpc.HistoryItem{Type: rpc.HistoryUser, TurnID: cur, Text: m.Content})
		case agent.RoleAssistant:
			if m.Content != "" || m.Thinking != "" {
				out = append(out, rpc.HistoryItem{Type: rpc.HistoryAssistant, TurnID: cur, Text: m.Content, Thinking: m.Thinking})
			}
			for _, call := range m.ToolCalls {
				if info := live[call.ID]; info != nil {
					out = append(out, rpc.HistoryItem{Type: rpc.HistoryTool, TurnID: cur, ToolCall: info})
					continue
				}
				info := &rpc.ToolCallInfo{CallID: call.ID, Tool: call.Name, Label: call.Name, Status: rpc.StatusCompleted, Arguments: call.Arguments,
					MCP: mcpCallOf(ls.h, call.Name)}
				if r, ok := results[call.ID]; ok {
					info.Result = &rpc.ResultInfo{Type: rpc.ResultOK, Text: r.Content}
					if len(r.Content) > 6 && r.Content[:6] == "Error " {
						info.Result.Type, info.Result.IsError, info.Status = "error", true, rpc.StatusFailed
					}
				} else {
					// Every call ends with a result (a replayed session's interrupted ones too), so
					// this one is of the running batch and not started yet.
					info.Status = rpc.StatusPending
				}
				out = append(out, rpc.HistoryItem{Type: rpc.HistoryTool, TurnID: cur, ToolCall: info})
			}
		}
	}
	return out
}

// sink converts agent events to session/update notifications for every attached editor.
// The editors an update goes to are read with the update (updates), so an editor attaching
// meanwhile gets a chunk of output either in its history or as an update (attach).
func (ls *liveSession) sink(e agent.Event) {
	us, clients := ls.updates(e)
	for _, u := range us {
		u.SessionID = ls.h.ID()
		for _, c := range clients {
			c.out.push(u)
		}
	}
}

func (ls *liveSession) broadcast(u rpc.SessionUpdateParams) {
	u.SessionID = ls.h.ID()
	for _, c := range ls.clientsSnapshot() {
		c.out.push(u)
	}
}

// updates maps one event to wire updates, and returns the editors attached meanwhile.
func (ls *liveSession) updates(e agent.Event) ([]rpc.SessionUpdateParams, []*client) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	us := ls.updatesLocked(e)
	if len(us) == 0 {
		return nil, nil
	}
	clients := make([]*client, 0, len(ls.clients))
	for c := range ls.clients {
		clients = append(clients, c)
	}
	return us, clients
}

// updatesLocked maps one event to wire updates. ls.mu held.
func (ls *liveSession) updatesLocked(e agent.Event) []rpc.SessionUpdateParams {
	ls.updated = time.Now()
	up := func(turn string, u rpc.Update) rpc.SessionUpdateParams {
		return rpc.SessionUpdateParams{TurnID: turn, Update: u}
	}
	switch e := e.(type) {
	case agent.TurnStart:
		ls.turn, ls.calls, ls.output = e.TurnID, map[string]*rpc.ToolCallInfo{}, nil
		ls.token = "agentd/" + ls.h.ID() + "/" + e.TurnID
		ls.prog.push(ls, progressEvent{token: ls.token, kind: rpc.ProgressBegin, message: "Thinking…"})
		return []rpc.SessionUpdateParams{up(e.TurnID, rpc.Update{Type: rpc.UpdateTurnStarted}),
			up(e.TurnID, rpc.Update{Type: rpc.UpdateUserMessage, Text: e.Prompt})}
	case agent.UserMessage:
		return []rpc.SessionUpdateParams{up(e.TurnID, rpc.Update{Type: rpc.UpdateUserMessage, Text: e.Text})}
	case agent.MessageDelta:
		var out []rpc.SessionUpdateParams
		if e.Thinking != "" {
			out = append(out, up(e.TurnID, rpc.Update{Type: rpc.UpdateThinkingDelta, Text: e.Thinking}))
		}
		if e.Text != "" {
			out = append(out, up(e.TurnID, rpc.Update{Type: rpc.UpdateTextDelta, Text: e.Text}))
		}
		return out
	case agent.MessageEnd:
		if e.DoneReason == "error" {
			return nil
		}
		u := e.Usage
		pct, numCtx := 0, ls.h.Settings().NumCtx
		if numCtx > 0 {
			pct = (u.PromptTokens + u.OutputTokens) * 100 / numCtx
		}
		return []rpc.SessionUpdateParams{
			up(e.TurnID, rpc.Update{Type: rpc.UpdateMessageCompleted, Text: e.Message.Content, Thinking: e.Message.Thinking}),
			up(e.TurnID, rpc.Update{Type: rpc.UpdateUsage, Usage: &rpc.UsageInfo{PromptTokens: u.PromptTokens, OutputTokens: u.OutputTokens,
				PromptMs: u.PromptDuration.Milliseconds(), OutputMs: u.OutputDuration.Milliseconds(), LoadMs: u.LoadDuration.Milliseconds(),
				ContextLength: numCtx, ContextPercent: pct}}),
		}
	case agent.ToolStart:
		info := &rpc.ToolCallInfo{CallID: e.CallID, Tool: e.Tool, Label: e.Label, Status: rpc.StatusPending, Arguments: validJSON(e.Args),
			MCP: mcpCallOf(ls.h, e.Tool)}
		ls.calls[e.CallID] = info
		return []rpc.SessionUpdateParams{up(ls.turn, rpc.Update{Type: rpc.UpdateToolCallStarted, ToolCall: cloneCall(info)})}
	case agent.ToolUpdate:
		info := ls.calls[e.CallID]
		if info == nil {
			return nil
		}
		if e.Label != "" {
			info.Label = e.Label
		}
		switch {
		case e.Preview != nil:
			info.Preview = ls.previewInfo(e.Preview)
		case e.Progress != nil:
			info.Status, info.Progress = rpc.StatusRunning, e.Progress.Text
			if ls.output == nil {
				ls.output = map[string]*outputTail{}
			}
			o := ls.output[e.CallID]
			if o == nil {
				o = &outputTail{}
				ls.output[e.CallID] = o
			}
			o.add(e.Progress.Text)
		case e.Activity != "":
			info.Status, info.Activity = rpc.StatusRunning, e.Activity
			ls.prog.push(ls, progressEvent{token: ls.token, kind: rpc.ProgressReport, message: e.Activity})
		}
		out := cloneCall(info)
		info.Progress = "" // progress chunks are deltas, sent once
		return []rpc.SessionUpdateParams{up(ls.turn, rpc.Update{Type: rpc.UpdateToolCallUpdated, ToolCall: out})}
	case agent.ToolEnd:
		info := ls.calls[e.CallID]
		if info == nil {
			info = &rpc.ToolCallInfo{CallID: e.CallID, Tool: e.Tool}
			ls.calls[e.CallID] = info
		}
		// Kept until the next turn: the history gets the batch's results only at its end, and an
		// editor attaching meanwhile must see this call ended (history).
		info.Status, info.Progress = rpc.StatusCompleted, ""
		delete(ls.output, e.CallID) // the result carries the output now
		if e.Result.IsError {
			info.Status = rpc.StatusFailed
		}
		info.Result = resultInfo(e.Result)
		return []rpc.SessionUpdateParams{up(ls.turn, rpc.Update{Type: rpc.UpdateToolCallCompleted, ToolCall: cloneCall(info)})}
	case agent.Compacted:
		return []rpc.SessionUpdateParams{up(e.TurnID, rpc.Update{Type: rpc.UpdateCompaction,
			Compaction: &rpc.CompactionInfo{TokensBefore: e.Before, TokensAfter: e.After, Summary: e.Summary}})}
	case agent.TurnEnd:
		ls.prog.push(ls, progressEvent{token: ls.token, kind: rpc.ProgressEnd})
		if e.Err != nil {
			info := errorInfo(e.Err)
			msg := "agentd: " + info.Message
			if info.Fix != "" {
				msg += " — " + info.Fix
			}
			for c := range ls.clients {
				c.out.pushRaw(rpc.MethodShowMessage, rpc.ShowMessageParams{Type: rpc.MessageError, Message: msg})
			}
			return []rpc.SessionUpdateParams{up(e.TurnID, rpc.Update{Type: rpc.UpdateTurnFailed, Reason: rpc.ReasonError, Error: errorInfo(e.Err)})}
		}
		return []rpc.SessionUpdateParams{up(e.TurnID, rpc.Update{Type: rpc.UpdateTurnCompleted, Reason: e.Reason})}
	}
	return nil
}

// setStatus records a tool call's status change (awaiting approval) and tells the editors.
func (ls *liveSession) setStatus(callID, status string) {
	ls.mu.Lock()
	info := ls.calls[callID]
	var u rpc.SessionUpdateParams
	if info != nil {
		info.Status = status
		u = rpc.SessionUpdateParams{TurnID: ls.turn, Update: rpc.Update{Type: rpc.UpdateToolCallUpdated, ToolCall: cloneCall(info)}}
	}
	ls.mu.Unlock()
	if info != nil {
		ls.broadcast(u)
	}
}

// progressEvent is one $/progress of a turn's token.
type progressEvent struct {
	token, kind, message string
}

// progressQueue sends a session's work-done progress in the order the turn produced it: begin,
// reports, end. One goroutine at a time drains it (started when something is queued and none
// runs), because begin waits for the editor to answer window/workDoneProgress/create, and the
// notifications then go through each editor's ordered outbox.
type progressQueue struct {
	mu      sync.Mutex
	events  []progressEvent
	running bool
	// The editors that created the current token: only they get its reports and end. Owned by
	// the draining goroutine.
	token   string
	created map[*client]bool
}

func (q *progressQueue) push(ls *liveSession, e progressEvent) {
	q.mu.Lock()
	q.events = append(q.events, e)
	if q.running {
		q.mu.Unlock()
		return
	}
	q.running = true
	q.mu.Unlock()
	go q.drain(ls)
}

func (q *progressQueue) drain(ls *liveSession) {
	for {
		q.mu.Lock()
		if len(q.events) == 0 {
			q.events, q.running = nil, false
			q.mu.Unlock()
			return
		}
		e := q.events[0]
		q.events = q.events[1:]
		q.mu.Unlock()
		q.send(ls, e)
	}
}

// send reports one progress event to the editors: begin to each attached editor that creates the
// token, report and end to those.
func (q *progressQueue) send(ls *liveSession, e progressEvent) {
	value := rpc.WorkDoneProgress{Kind: e.kind, Message: e.message}
	if e.kind == rpc.ProgressBegin {
		value.Title, value.Cancellable = "agentd", true
		q.token, q.created = e.token, map[*client]bool{}
		for _, c := range ls.clientsSnapshot() {
			ctx, cancel := context.WithTimeout(c.conn.Context(), 5*time.Second)
			err := c.conn.Call(ctx, rpc.MethodWorkDoneProgressCreate, rpc.WorkDoneProgressCreateParams{Token: e.token}, nil)
			cancel()
			if err != nil {
				slog.Debug("the editor did not create a progress token", "err", err)
				continue
			}
			q.created[c] = true
		}
	}
	if e.token != q.token {
		return // a token that was never begun
	}
	for c := range q.created {
		c.out.pushRaw(rpc.MethodProgress, rpc.ProgressParams{Token: e.token, Value: value})
	}
	if e.kind == rpc.ProgressEnd {
		q.token, q.created = "", nil
	}
}

// maxReplayedOutput bounds the output of a running call kept for editors that attach while it
// runs: the last 64 KiB, what the editors keep of a call's output too.
const maxReplayedOutput = 64 << 10

// outputTail keeps the last maxReplayedOutput bytes a running call streamed and counts the bytes
// cut before them. It holds up to twice that, so cutting copies once per maxReplayedOutput bytes.
type outputTail struct {
	buf []byte
	cut int64
}

func (o *outputTail) add(s string) {
	o.buf = append(o.buf, s...)
	if len(o.buf) > 2*maxReplayedOutput {
		drop := len(o.buf) - maxReplayedOutput
		o.cut += int64(drop)
		o.buf = append(o.buf[:0], o.buf[drop:]...)
	}
}

// text is the kept output, starting at a character boundary, after a line that says how much
// earlier output is not shown.
func (o *outputTail) text() string {
	b, cut := o.buf, o.cut
	if over := len(b) - maxReplayedOutput; over > 0 {
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

func cloneCall(c *rpc.ToolCallInfo) *rpc.ToolCallInfo {
	cp := *c
	return &cp
}

func validJSON(b json.RawMessage) json.RawMessage {
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b)) // the model's broken arguments, shown as a string
	return s
}

func (ls *liveSession) previewInfo(p *tools.Preview) *rpc.PreviewInfo {
	out := &rpc.PreviewInfo{Summary: p.Summary}
	if p.Diff != nil {
		out.UnifiedDiff = ls.unified.of(p.Diff)
	}
	if c := p.Command; c != nil {
		out.Command = &rpc.CommandPreview{Argv: c.Argv, Cwd: c.Cwd, TimeoutMs: c.TimeoutMS, Sandbox: c.Sandbox, Network: c.Network}
	}
	return out
}

func resultInfo(r tools.Result) *rpc.ResultInfo {
	out := &rpc.ResultInfo{Type: string(r.Type), IsError: r.IsError, Text: r.Text(), ElapsedMs: r.Elapsed.Milliseconds(), Truncated: r.Meta.Truncated}
	if r.Details != nil {
		if b, err := json.Marshal(r.Details); err == nil && string(b) != "null" {
			out.Details = b
		}
	}
	if out.Images = resultImages(r); len(out.Images) > 0 {
		out.Text = textAroundImages(r)
	}
	return out
}

func errorInfo(err error) *rpc.ErrorInfo {
	var me *agent.ModelError
	if errors.As(err, &me) {
		return &rpc.ErrorInfo{Kind: string(me.Kind), Message: me.Message, Fix: me.Fix}
	}
	return &rpc.ErrorInfo{Kind: "error", Message: err.Error()}
}

// outbox queues a client's notifications so a slow editor never blocks a session. Consecutive
// text or thinking deltas of one turn are merged while they wait (coalescing under pressure): the
// pieces are kept as a list and joined once, when the update is sent, so merging costs linear time
// however far behind the editor is. Every other update is delivered, in order. Seq is assigned
// when an update is sent.
//
// The queue is bounded: an editor that falls more than maxOutboxBytes (or maxOutboxItems) behind
// is detached — its connection is closed, which detaches it from its sessions and fails closed the
// reviews only it could answer — and the sessions go on without waiting for it.
type outbox struct {
	c        *client
	mu       sync.Mutex
	items    []outItem
	bytes    int // approximate size of what waits
	wake     chan struct{}
	closed   bool
	seq      map[string]int64
	detached chan struct{} // closed when the editor is detached for falling behind
	maxBytes int
	maxItems int
}

var (
	maxOutboxBytes = 16 << 20
	maxOutboxItems = 10000
)

type outItem struct {
	method string
	params any
	update *rpc.SessionUpdateParams
	parts  []string // a delta's text pieces, joined when sent
	size   int
}

func newOutbox(c *client) *outbox {
	o := &outbox{c: c, wake: make(chan struct{}, 1), seq: map[string]int64{}, detached: make(chan struct{}),
		maxBytes: maxOutboxBytes, maxItems: maxOutboxItems}
	go o.run()
	return o
}

func (o *outbox) push(u rpc.SessionUpdateParams) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	if isDelta(u.Update.Type) {
		if n := len(o.items); n > 0 {
			if last := &o.items[n-1]; last.parts != nil && last.update.Update.Type == u.Update.Type &&
				last.update.SessionID == u.SessionID && last.update.TurnID == u.TurnID {
				o.checkLocked()
				if !o.closed {
					last.parts = append(last.parts, u.Update.Text)
					last.size += len(u.Update.Text)
					o.bytes += len(u.Update.Text)
				}
				o.mu.Unlock()
				return
			}
		}
		up := new(rpc.SessionUpdateParams) // only here: a merged delta allocates nothing
		*up = u
		up.Update.Text = ""
		o.appendLocked(outItem{method: rpc.MethodSessionUpdate, update: up, parts: []string{u.Update.Text}, size: len(u.Update.Text) + itemOverhead})
		return
	}
	up := new(rpc.SessionUpdateParams)
	*up = u
	o.appendLocked(outItem{method: rpc.MethodSessionUpdate, update: up, size: updateSize(up)})
}

func (o *outbox) pushRaw(method string, params any) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.appendLocked(outItem{method: method, params: params, size: itemOverhead})
}

// appendLocked queues an item, unlocks, and wakes the sender.
func (o *outbox) appendLocked(it outItem) {
	if o.checkLocked(); o.closed {
		o.mu.Unlock()
		return
	}
	o.items = append(o.items, it)
	o.bytes += it.size
	o.mu.Unlock()
	o.signal()
}

// checkLocked detaches the editor when what already waits for it, before the update being added,
// is past the bounds: one large update (a big diff) never detaches an editor that reads. o.mu
// held; it never blocks.
func (o *outbox) checkLocked() {
	if o.bytes <= o.maxBytes && len(o.items) < o.maxItems {
		return
	}
	slog.Warn("an editor is not reading its notifications: detaching it",
		"queuedBytes", o.bytes, "queuedItems", len(o.items), "limitBytes", o.maxBytes, "limitItems", o.maxItems)
	o.closed = true
	o.items, o.bytes = nil, 0
	close(o.detached)
	go o.c.conn.Abort() // the connection ends; the server then detaches it from its sessions
}

const itemOverhead = 256 // envelope, ids and small fields of a queued notification

// updateSize estimates the wire size of an update from its variable-length parts.
func updateSize(u *rpc.SessionUpdateParams) int {
	n := itemOverhead + len(u.Update.Text) + len(u.Update.Thinking)
	if tc := u.Update.ToolCall; tc != nil {
		n += len(tc.Arguments) + len(tc.Progress) + len(tc.Activity) + len(tc.Label)
		if p := tc.Preview; p != nil {
			n += len(p.UnifiedDiff) + len(p.Summary)
		}
		if r := tc.Result; r != nil {
			n += len(r.Text) + len(r.Details)
		}
	}
	if c := u.Update.Compaction; c != nil {
		n += len(c.Summary)
	}
	return n
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.items, o.bytes = nil, 0
	o.mu.Unlock()
	o.signal()
}

func (o *outbox) run() {
	for range o.wake {
		for {
			o.mu.Lock()
			if o.closed {
				o.mu.Unlock()
				return
			}
			if len(o.items) == 0 {
				o.items = nil // release the backing array of a drained burst
				o.mu.Unlock()
				break
			}
			it := o.items[0]
			o.items[0] = outItem{}
			o.items = o.items[1:]
			o.bytes -= it.size
			params := it.params
			if it.update != nil {
				o.seq[it.update.SessionID]++
				it.update.Seq = o.seq[it.update.SessionID]
				params = it.update
			}
			o.mu.Unlock()
			if it.parts != nil { // out of the queue: no push merges into it any more
				it.update.Update.Text = joinParts(it.parts, it.size)
			}
			if err := o.c.conn.Notify(o.c.conn.Context(), it.method, params); err != nil {
				slog.Debug("notification not delivered", "method", it.method, "err", err)
			}
		}
	}
}

func joinParts(parts []string, size int) string {
	if len(parts) == 1 {
		return parts[0]
	}
	var b strings.Builder
	b.Grow(size)
	for _, p := range parts {
		b.WriteString(p)
	}
	return b.String()
}

func isDelta(t string) bool { return t == rpc.UpdateTextDelta || t == rpc.UpdateThinkingDelta }
