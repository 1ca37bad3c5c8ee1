package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools"
)

// liveSession is a loaded session as the editors see it: the harness's live session (which owns
// the loop and the transcript), the editors attached to it, their pending reviews and the
// turn's work-done progress. It translates; it keeps no conversation state of its own.
type liveSession struct {
	srv *Server
	h   *harness.Session

	mu      sync.Mutex
	clients map[*client]func() // attached editors, with what detaches them from the session
	pending map[string]*review
	token   string // work-done progress token of the running turn (the session's watcher writes it)

	prog progressQueue

	unified unifiedMemo // the unified text of the last diff shown (reviews.go)
}

// newLiveSession wraps an opened harness; register adds it to the server.
func (s *Server) newLiveSession(h *harness.Harness) *liveSession {
	ls := &liveSession{srv: s, clients: map[*client]func(){}, pending: map[string]*review{}}
	ls.h = harness.NewSession(h, &editorAsker{ls: ls})
	// The turn's work-done progress, once per session whatever editors are attached.
	ls.h.Attach(ls.progress)
	return ls
}

func (s *Server) newLive(h *harness.Harness) *liveSession {
	ls := s.newLiveSession(h)
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
	ls = s.newLiveSession(h)
	s.sessions[id] = ls
	return ls, nil
}

// attach adds an editor and returns the transcript it reads as its history: every later change
// reaches it as an update, none is in both (harness.Session.Attach). Attaching again replaces the
// editor's earlier attachment.
func (ls *liveSession) attach(c *client) harness.Snapshot {
	ls.mu.Lock()
	old := ls.clients[c]
	delete(ls.clients, c)
	ls.mu.Unlock()
	if old != nil {
		old()
	}
	id := ls.h.ID()
	snap, detach := ls.h.Attach(func(u harness.Update) {
		for _, p := range ls.wire(u) {
			p.SessionID = id
			c.out.push(p)
		}
		if e, ok := u.Event.(agent.TurnEnd); ok && e.Err != nil {
			info := errorInfo(e.Err)
			msg := "agentd: " + info.Message
			if info.Fix != "" {
				msg += " — " + info.Fix
			}
			c.out.pushRaw(rpc.MethodShowMessage, rpc.ShowMessageParams{Type: rpc.MessageError, Message: msg})
		}
	})
	ls.mu.Lock()
	ls.clients[c] = detach
	ls.mu.Unlock()
	c.mu.Lock()
	c.attached[id] = ls
	c.mu.Unlock()
	return snap
}

// detach removes an editor. Reviews nobody attached can answer any more are rejected: fail closed.
func (ls *liveSession) detach(c *client) {
	ls.mu.Lock()
	stop := ls.clients[c]
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
	if stop != nil {
		stop()
	}
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

func (ls *liveSession) progressToken() string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.token
}

func (ls *liveSession) close() { ls.h.Close() }

// info describes the session for the wire.
func (ls *liveSession) info() rpc.SessionInfo {
	h := ls.h
	st := h.Settings() // SetMode and Start change them meanwhile
	return rpc.SessionInfo{
		SessionID: h.ID(), Title: h.Title, WorkspaceFolder: fileURI(h.Workspace()), Model: st.Model,
		ApprovalMode: st.ApprovalMode, ContextLength: st.NumCtx,
		CreatedAt: st.Created.UTC().Format(time.RFC3339), UpdatedAt: h.Updated().UTC().Format(time.RFC3339),
		Turns: h.TurnCount(), Running: h.Running() != "", Attached: ls.attachedCount(),
		Instructions: instructionsInfo(h.Harness), Warnings: sessionWarnings(h.Harness),
	}
}

// history renders the transcript an editor attached to.
func (ls *liveSession) history(snap harness.Snapshot) []rpc.HistoryItem {
	var out []rpc.HistoryItem
	for _, t := range snap.Turns {
		for _, it := range t.Items {
			switch it.Kind {
			case harness.ItemUser:
				out = append(out, rpc.HistoryItem{Type: rpc.HistoryUser, TurnID: t.ID, Text: it.Text, Context: it.Context})
			case harness.ItemAgent:
				out = append(out, rpc.HistoryItem{Type: rpc.HistoryAssistant, TurnID: t.ID, Text: it.Text, Thinking: it.Thinking})
			case harness.ItemCompaction:
				out = append(out, rpc.HistoryItem{Type: rpc.HistoryCompaction, TurnID: t.ID,
					Compaction: &rpc.CompactionInfo{Summary: it.Text}})
			case harness.ItemTool:
				info := ls.callInfo(it.Tool)
				info.Progress = it.Tool.Output // what a running call streamed before this editor attached
				out = append(out, rpc.HistoryItem{Type: rpc.HistoryTool, TurnID: t.ID, ToolCall: info})
			}
		}
	}
	return out
}

// callInfo is a call for the wire.
func (ls *liveSession) callInfo(c *harness.ToolCall) *rpc.ToolCallInfo {
	info := &rpc.ToolCallInfo{CallID: c.ID, Tool: c.Tool, Label: c.Label, Status: callStatus(c.Status), Arguments: c.Args,
		Activity: c.Activity, WaitsFor: c.WaitsFor, MCP: mcpCallOf(ls.h.Harness, c.Tool)}
	if c.Preview != nil {
		info.Preview = ls.previewInfo(c.Preview)
	}
	if c.Result != nil {
		info.Result = resultInfo(*c.Result)
	}
	return info
}

func callStatus(s string) string {
	switch s {
	case harness.ToolAwaiting:
		return rpc.StatusAwaitingApproval
	case harness.ToolRunning:
		return rpc.StatusRunning
	case harness.ToolCompleted:
		return rpc.StatusCompleted
	case harness.ToolFailed:
		return rpc.StatusFailed
	}
	return rpc.StatusPending
}

// wire translates one update of the session to session/update notifications.
func (ls *liveSession) wire(u harness.Update) []rpc.SessionUpdateParams {
	up := func(turn string, w rpc.Update) rpc.SessionUpdateParams {
		return rpc.SessionUpdateParams{TurnID: turn, Update: w}
	}
	if u.Event == nil && u.Call != nil { // a status the gate gave the call: a question asked
		return []rpc.SessionUpdateParams{up(u.Turn, rpc.Update{Type: rpc.UpdateToolCallUpdated, ToolCall: ls.callInfo(u.Call)})}
	}
	switch e := u.Event.(type) {
	case agent.TurnStart:
		return []rpc.SessionUpdateParams{up(e.TurnID, rpc.Update{Type: rpc.UpdateTurnStarted}),
			up(e.TurnID, rpc.Update{Type: rpc.UpdateUserMessage, Text: e.Words(), Context: e.Context})}
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
		use := e.Usage
		pct, numCtx := 0, ls.h.Settings().NumCtx
		if numCtx > 0 {
			pct = (use.PromptTokens + use.OutputTokens) * 100 / numCtx
		}
		return []rpc.SessionUpdateParams{
			up(e.TurnID, rpc.Update{Type: rpc.UpdateMessageCompleted, Text: e.Message.Content, Thinking: e.Message.Thinking}),
			up(e.TurnID, rpc.Update{Type: rpc.UpdateUsage, Usage: &rpc.UsageInfo{PromptTokens: use.PromptTokens, OutputTokens: use.OutputTokens, CachedTokens: use.CachedTokens,
				PromptMs: use.PromptDuration.Milliseconds(), OutputMs: use.OutputDuration.Milliseconds(), LoadMs: use.LoadDuration.Milliseconds(),
				ContextLength: numCtx, ContextPercent: pct}}),
		}
	case agent.ToolStart:
		return []rpc.SessionUpdateParams{up(u.Turn, rpc.Update{Type: rpc.UpdateToolCallStarted, ToolCall: ls.callInfo(u.Call)})}
	case agent.ToolUpdate:
		if u.Call == nil {
			return nil
		}
		info := ls.callInfo(u.Call)
		if e.Progress != nil {
			info.Progress = e.Progress.Text // progress chunks are deltas, sent once
		}
		return []rpc.SessionUpdateParams{up(u.Turn, rpc.Update{Type: rpc.UpdateToolCallUpdated, ToolCall: info})}
	case agent.ToolEnd:
		return []rpc.SessionUpdateParams{up(u.Turn, rpc.Update{Type: rpc.UpdateToolCallCompleted, ToolCall: ls.callInfo(u.Call)})}
	case agent.Compacted:
		return []rpc.SessionUpdateParams{up(e.TurnID, rpc.Update{Type: rpc.UpdateCompaction,
			Compaction: &rpc.CompactionInfo{TokensBefore: e.Before, TokensAfter: e.After, Summary: e.Summary}})}
	case agent.TurnEnd:
		if e.Err != nil {
			return []rpc.SessionUpdateParams{up(e.TurnID, rpc.Update{Type: rpc.UpdateTurnFailed, Reason: rpc.ReasonError, Error: errorInfo(e.Err)})}
		}
		return []rpc.SessionUpdateParams{up(e.TurnID, rpc.Update{Type: rpc.UpdateTurnCompleted, Reason: e.Reason})}
	}
	return nil
}

// progress reports a turn as work-done progress: begin at its start, the running calls'
// activities, end at its end.
func (ls *liveSession) progress(u harness.Update) {
	switch e := u.Event.(type) {
	case agent.TurnStart:
		token := "agentd/" + ls.h.ID() + "/" + e.TurnID
		ls.mu.Lock()
		ls.token = token
		ls.mu.Unlock()
		ls.prog.push(ls, progressEvent{token: token, kind: rpc.ProgressBegin, message: "Thinking…"})
	case agent.ToolUpdate:
		if e.Activity != "" && e.Preview == nil && e.Progress == nil {
			ls.prog.push(ls, progressEvent{token: ls.progressToken(), kind: rpc.ProgressReport, message: e.Activity})
		}
	case agent.TurnEnd:
		ls.prog.push(ls, progressEvent{token: ls.progressToken(), kind: rpc.ProgressEnd})
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
