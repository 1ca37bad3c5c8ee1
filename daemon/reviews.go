package daemon

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/preview"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools"
	"go.lsp.dev/protocol"
)

// review is one pending approval shown to the attached editors.
type review struct {
	ls     *liveSession
	params rpc.ReviewRequestedParams
	preq   policy.Request
	grants []policy.Grant      // the session scopes offered, aligned with params.Scopes
	answer chan harness.Answer // receives exactly one answer

	mu       sync.Mutex
	resolved bool
	// states are the editors' per-hunk decisions so far (review/hunkState): decided hunks only.
	states map[string]rpc.HunkState
}

// settle resolves the review once: the first answer wins. It tells every attached editor.
func (r *review) settle(a harness.Answer, outcome, by string) bool {
	r.mu.Lock()
	if r.resolved {
		r.mu.Unlock()
		return false
	}
	r.resolved = true
	r.mu.Unlock()
	r.answer <- a
	ls := r.ls
	ls.mu.Lock()
	delete(ls.pending, r.params.ReviewID)
	ls.mu.Unlock()
	note := rpc.ReviewResolvedParams{ReviewID: r.params.ReviewID, SessionID: ls.h.ID(), Outcome: outcome, By: by}
	if a.Decision == harness.AnswerAccept || a.Decision == harness.AnswerReject {
		note.HunkReasons = a.HunkReasons
	}
	if a.Decision == harness.AnswerAccept {
		note.Hunks = a.Hunks
		if note.Hunks == nil && r.params.File != nil {
			for _, h := range r.params.File.Hunks {
				note.Hunks = append(note.Hunks, h.ID)
			}
		}
	}
	for _, c := range ls.clientsSnapshot() {
		c.out.pushRaw(rpc.MethodReviewResolved, note)
	}
	// Forget resolved reviews after a while, so a late decision gets "already resolved".
	time.AfterFunc(10*time.Minute, func() {
		ls.srv.mu.Lock()
		delete(ls.srv.reviews, r.params.ReviewID)
		ls.srv.mu.Unlock()
	})
	return true
}

// editorAsker asks through reviews.
type editorAsker struct {
	ls *liveSession
}

// AsksTogether: an editor shows every file change of a reply at once.
func (e *editorAsker) AsksTogether() bool { return true }

func (e *editorAsker) Ask(ctx context.Context, q harness.Question) (harness.Answer, error) {
	ls := e.ls
	srv := ls.srv
	r, err := ls.newReview(q)
	if err != nil {
		return harness.Answer{}, err
	}
	var reviewers []*client
	for _, c := range ls.clientsSnapshot() {
		if c.reviews() {
			reviewers = append(reviewers, c)
		}
	}
	if len(reviewers) == 0 {
		// Fail closed: nobody can see the change.
		r.settle(harness.Answer{}, "rejected", "disconnect")
		<-r.answer
		return harness.Answer{Decision: harness.AnswerUnavailable, By: "no editor",
			Reason: "no one was asked: no editor that can review changes is attached"}, nil
	}
	for _, c := range reviewers {
		c.out.pushRaw(rpc.MethodReviewRequested, r.params)
	}
	if q.Call.Posted != nil {
		// The review is up: the next file change of the reply can be put up beside it.
		q.Call.Posted()
	}
	var timeout <-chan time.Time
	if d := srv.reviewTimeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case a := <-r.answer:
		return a, nil
	case <-timeout:
		if r.settle(harness.Answer{}, "rejected", "timeout") {
			<-r.answer
			return harness.Answer{Decision: harness.AnswerUnavailable, By: "timeout",
				Reason: fmt.Sprintf("the user was asked but made no decision within %s (the review timeout)", srv.reviewTimeout)}, nil
		}
		return <-r.answer, nil
	case <-ctx.Done():
		if r.settle(harness.Answer{}, "cancelled", "turnEnded") {
			<-r.answer
		}
		return harness.Answer{}, ctx.Err()
	}
}

// newReview builds and registers a review for a question.
func (ls *liveSession) newReview(q harness.Question) (*review, error) {
	srv := ls.srv
	srv.mu.Lock()
	srv.nextID++
	id := fmt.Sprintf("r-%d", srv.nextID)
	srv.mu.Unlock()
	call := q.Call.Call
	p := rpc.ReviewRequestedParams{
		ReviewID: id, SessionID: ls.h.ID(), TurnID: ls.h.Running(), CallID: call.ID, Tool: call.Name,
		Label: q.Call.Label, Kind: q.Kind, Why: q.Verdict.Reason, Scopes: []rpc.GrantScope{},
	}
	if d := srv.reviewTimeout; d > 0 {
		p.TimeoutMs = d.Milliseconds()
	}
	if pv := q.Call.Preview; pv != nil {
		if pv.Diff != nil {
			p.File = ls.fileReview(pv.Diff)
		}
		if c := pv.Command; c != nil {
			p.Command = &rpc.CommandPreview{Argv: c.Argv, Cwd: c.Cwd, TimeoutMs: c.TimeoutMS, Sandbox: c.Sandbox, Network: c.Network}
		}
	}
	p.MCP = mcpReview(q.Call.Tool, q.Call.Call)
	for _, g := range q.Grants {
		p.Scopes = append(p.Scopes, ls.scopeOf(g))
	}
	r := &review{ls: ls, params: p, preq: q.Request, grants: q.Grants, answer: make(chan harness.Answer, 1)}
	srv.mu.Lock()
	srv.reviews[id] = r
	srv.mu.Unlock()
	ls.mu.Lock()
	ls.pending[id] = r
	ls.mu.Unlock()
	return r, nil
}

// fileReview describes a file change: hunks, unified diff, and the edits that apply them to the
// text the change was computed against (the editor's buffer when the document is open).
func (ls *liveSession) fileReview(d *preview.Diff) *rpc.FileReview {
	abs := d.Path // absolute for a file in another workspace root (builtin's env.show)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(ls.h.Workspace(), d.Path)
	}
	f := &rpc.FileReview{URI: fileURI(abs), Path: d.Path, Created: d.Created, Deleted: d.Deleted,
		UnifiedDiff: ls.unified.of(d), Hunks: []rpc.Hunk{}, Edit: rpc.FileEdit{Edits: []protocol.TextEdit{}}}
	if doc, ok := ls.srv.overlay.get(tools.Canonical(abs)); ok {
		f.URI, f.Version = doc.uri, doc.version
	}
	for _, h := range d.Hunks {
		f.Hunks = append(f.Hunks, rpc.Hunk{ID: h.ID, OldStart: h.OldStart, OldLines: h.OldLines, NewStart: h.NewStart,
			NewLines: h.NewLines, Removed: stripEOL(h.Removed), Added: stripEOL(h.Added)})
	}
	for _, e := range d.TextEdits() {
		f.Edit.Edits = append(f.Edit.Edits, lspEdit(e))
	}
	return f
}

// unifiedMemo remembers the unified text of the last diff it rendered: a reviewed edit's diff is
// shown twice, in the call's preview update and in its review, and rendered once. It keeps one
// diff alive, until the next one is shown.
type unifiedMemo struct {
	mu   sync.Mutex
	diff *preview.Diff
	text string
}

// of returns d.Unified(3), rendered once for the diff shown last.
func (m *unifiedMemo) of(d *preview.Diff) string {
	m.mu.Lock()
	if m.diff == d {
		defer m.mu.Unlock()
		return m.text
	}
	m.mu.Unlock()
	text := d.Unified(3)
	m.mu.Lock()
	m.diff, m.text = d, text
	m.mu.Unlock()
	return text
}

func lspEdit(e preview.TextEdit) protocol.TextEdit {
	return protocol.TextEdit{
		Range: protocol.Range{
			Start: protocol.Position{Line: e.Range.Start.Line, Character: e.Range.Start.Character},
			End:   protocol.Position{Line: e.Range.End.Line, Character: e.Range.End.Character},
		},
		NewText: e.NewText,
	}
}

func stripEOL(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(strings.TrimSuffix(l, "\n"), "\r")
	}
	return out
}

// scopeOf describes a grant for the wire (paths workspace-relative).
func (ls *liveSession) scopeOf(g policy.Grant) rpc.GrantScope {
	switch g.Scope {
	case policy.ScopeTool:
		return rpc.GrantScope{Kind: rpc.ScopeTool, Tool: g.Tool, Label: "all " + g.Tool + " calls in this session"}
	case policy.ScopeCommand:
		// The one wording of a command grant; the editors show it as it is.
		label := "commands starting with `" + strings.Join(g.Prefix, " ") + "`"
		if g.Exact {
			label = "this exact command: `" + strings.Join(g.Prefix, " ") + "`"
		}
		return rpc.GrantScope{Kind: rpc.ScopeCommand, CommandPrefix: g.Prefix, Label: label}
	default:
		rel := g.Path
		if within(ls.h.Workspace(), g.Path) {
			rel = strings.TrimPrefix(strings.TrimPrefix(g.Path, ls.h.Workspace()), "/")
		}
		if rel == "" {
			rel = "."
		}
		return rpc.GrantScope{Kind: rpc.ScopePath, PathPrefix: rel, Label: "changes under " + rel}
	}
}

// reviewDecide answers a review. The first editor to answer wins.
func (c *client) reviewDecide(params []byte) (any, error) {
	p, err := rpc.DecodeDecide(params)
	if err != nil {
		return nil, err
	}
	c.srv.mu.Lock()
	r := c.srv.reviews[p.ReviewID]
	c.srv.mu.Unlock()
	if r == nil {
		return nil, rpc.Errorf(rpc.CodeUnknownReview, "unknown review %s", p.ReviewID)
	}
	r.ls.mu.Lock()
	_, attached := r.ls.clients[c]
	r.ls.mu.Unlock()
	if !attached {
		return nil, rpc.Errorf(rpc.CodeUnknownReview, "review %s belongs to a session this connection is not attached to", p.ReviewID)
	}
	r.mu.Lock()
	resolved := r.resolved
	r.mu.Unlock()
	if resolved {
		return nil, rpc.Errorf(rpc.CodeReviewResolved, "review %s is already resolved", p.ReviewID)
	}
	d := p.Decision
	// A reason per hunk names a hunk of this file change (not an accepted one: rpc checked that).
	if d.HunkReasons != nil {
		if r.params.File == nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "hunkReasons given for a review that is not a file change")
		}
		for _, id := range slices.Sorted(maps.Keys(d.HunkReasons)) {
			if !slices.ContainsFunc(r.params.File.Hunks, func(h rpc.Hunk) bool { return h.ID == id }) {
				return nil, rpc.Errorf(rpc.CodeInvalidParams, "hunkReasons: review %s has no hunk %q", p.ReviewID, id)
			}
		}
	}
	var a harness.Answer
	outcome := "accepted"
	switch d.Type {
	case rpc.DecisionAccept:
		if d.Hunks != nil {
			if r.params.File == nil {
				return nil, rpc.Errorf(rpc.CodeInvalidParams, "hunks given for a review that is not a file change")
			}
			for _, id := range d.Hunks {
				if !slices.ContainsFunc(r.params.File.Hunks, func(h rpc.Hunk) bool { return h.ID == id }) {
					return nil, rpc.Errorf(rpc.CodeInvalidParams, "review %s has no hunk %q", p.ReviewID, id)
				}
			}
		}
		if d.Content != nil && r.params.File == nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "content given for a review that is not a file change")
		}
		a = harness.Answer{Decision: harness.AnswerAccept, Hunks: d.Hunks, Reason: d.Reason, HunkReasons: d.HunkReasons, Content: d.Content}
	case rpc.DecisionAcceptForSession:
		i := slices.IndexFunc(r.params.Scopes, func(s rpc.GrantScope) bool { return sameScope(s, *d.Scope) })
		if i < 0 {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "scope not offered by review %s", p.ReviewID)
		}
		// The grant is added here, before the answer, so it can settle other pending reviews.
		if _, err := r.ls.h.Policy.Grants().Add(r.grants[i]); err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "grant refused: %v", err)
		}
		a = harness.Answer{Decision: harness.AnswerAcceptForSession}
	case rpc.DecisionReject:
		a, outcome = harness.Answer{Decision: harness.AnswerReject, Reason: d.Reason, HunkReasons: d.HunkReasons}, "rejected"
	case rpc.DecisionCancelTurn:
		a, outcome = harness.Answer{Decision: harness.AnswerCancelTurn}, "cancelled"
	}
	if !r.settle(a, outcome, "editor") {
		return nil, rpc.Errorf(rpc.CodeReviewResolved, "review %s is already resolved", p.ReviewID)
	}
	settled := []string{}
	if d.Type == rpc.DecisionAcceptForSession {
		settled = r.ls.settleCovered()
	}
	return rpc.ReviewDecideResult{Outcome: outcome, Settled: settled}, nil
}

// settleCovered accepts the pending reviews the session's policy now allows (after a grant).
func (ls *liveSession) settleCovered() []string {
	ls.mu.Lock()
	var pending []*review
	for _, r := range ls.pending {
		pending = append(pending, r)
	}
	ls.mu.Unlock()
	var reqs []policy.Request
	for _, r := range pending {
		reqs = append(reqs, r.preq)
	}
	var out []string
	for _, i := range ls.h.Policy.Settles(reqs) {
		if pending[i].settle(harness.Answer{Decision: harness.AnswerAccept, By: "grant"}, "accepted", "grant") {
			out = append(out, pending[i].params.ReviewID)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

func sameScope(a, b rpc.GrantScope) bool {
	return a.Kind == b.Kind && a.Tool == b.Tool && a.PathPrefix == b.PathPrefix && slices.Equal(a.CommandPrefix, b.CommandPrefix)
}

func (c *client) reviewList(params []byte) (any, error) {
	var p rpc.ReviewListParams
	if err := rpc.Decode(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	return rpc.ReviewListResult{Reviews: ls.pendingReviews()}, nil
}

func (ls *liveSession) pendingReviews() []rpc.ReviewRequestedParams {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	out := []rpc.ReviewRequestedParams{}
	for _, r := range ls.pending {
		p := r.params
		r.mu.Lock()
		if len(r.states) > 0 {
			p.HunkStates = maps.Clone(r.states)
		}
		r.mu.Unlock()
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b rpc.ReviewRequestedParams) int { return strings.Compare(a.ReviewID, b.ReviewID) })
	return out
}

// reviewHunkState records an editor's per-hunk decisions on a pending file review and relays the
// review's decided hunks to the session's other reviewing editors. It decides nothing: only
// review/decide settles the review. Everything is checked before anything changes.
func (c *client) reviewHunkState(params []byte) (any, error) {
	var p rpc.ReviewHunkStateParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	if p.ReviewID == "" {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "reviewId is required")
	}
	if len(p.Hunks) == 0 {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "hunks is empty: nothing to change")
	}
	c.srv.mu.Lock()
	r := c.srv.reviews[p.ReviewID]
	c.srv.mu.Unlock()
	if r == nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "unknown review %s", p.ReviewID)
	}
	ls := r.ls
	ls.mu.Lock()
	_, attached := ls.clients[c]
	ls.mu.Unlock()
	if !attached {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "review %s belongs to a session this connection is not attached to", p.ReviewID)
	}
	if r.params.File == nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "review %s is not a file change: it has no hunks", p.ReviewID)
	}
	for _, id := range slices.Sorted(maps.Keys(p.Hunks)) {
		st := p.Hunks[id]
		if !slices.ContainsFunc(r.params.File.Hunks, func(h rpc.Hunk) bool { return h.ID == id }) {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "review %s has no hunk %q", p.ReviewID, id)
		}
		switch st.State {
		case rpc.HunkPending, rpc.HunkAccepted:
			if st.Reason != "" {
				return nil, rpc.Errorf(rpc.CodeInvalidParams, "hunk %q: a reason goes with a rejected hunk, not %q", id, st.State)
			}
		case rpc.HunkRejected:
			if st.Reason != "" && strings.TrimSpace(st.Reason) == "" {
				return nil, rpc.Errorf(rpc.CodeInvalidParams, "hunk %q: the reason is blank: leave it out", id)
			}
		default:
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "hunk %q: unknown state %q (want pending, accepted or rejected)", id, st.State)
		}
	}
	// Under r.mu: a settle cannot slip between the check and the relay, and relays of concurrent
	// changes reach every editor in the order they were applied.
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.resolved {
		return nil, rpc.Errorf(rpc.CodeReviewResolved, "review %s is already resolved", p.ReviewID)
	}
	if r.states == nil {
		r.states = map[string]rpc.HunkState{}
	}
	for id, st := range p.Hunks {
		if st.State == rpc.HunkPending {
			delete(r.states, id)
		} else {
			r.states[id] = st
		}
	}
	note := rpc.ReviewHunkStatesParams{ReviewID: p.ReviewID, SessionID: ls.h.ID(), Hunks: maps.Clone(r.states)}
	for _, o := range ls.clientsSnapshot() {
		if o != c && o.reviews() {
			o.out.pushRaw(rpc.MethodReviewHunkStates, note)
		}
	}
	return rpc.ReviewHunkStateResult{Hunks: maps.Clone(r.states)}, nil
}
