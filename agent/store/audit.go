package store

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/preview"
	"github.com/agentd/agentd/tools"
)

// Gate decisions as the audit log records them.
const (
	DecisionAllowed  = "allowed"
	DecisionRejected = "rejected"
	// DecisionNotAsked: no gate ran for the call (no gate configured, or the call ended before
	// the gate: unknown tool, invalid arguments, cancelled, circuit breaker).
	DecisionNotAsked = "not asked"
	// DecisionGateFailed: the gate returned an error; the call did not run.
	DecisionGateFailed = "gate failed"
	// DecisionCancelled: the turn was cancelled while the gate waited; the call did not run.
	DecisionCancelled = "cancelled"
)

// Who decided, as the audit log records it. A gate says which in GateDecision.By; when
// it does not, an allow is attributed to ByGate, a permission_denied refusal to ByPolicy and any
// other refusal to ByUser.
const (
	ByPolicy = "policy" // the approval policy (rules, approval mode) decided without asking
	ByUser   = "user"   // the user answered a prompt
	ByGrant  = "grant"  // a grant the user gave earlier ("allow for this session") covered it
	ByGate   = "gate"   // a gate that did not say who
	ByNoGate = "no gate"
)

// How the user's accept of a follow-up applies (AuditFollowUp.Accepted).
const (
	AcceptedAll     = "all"     // the change as proposed
	AcceptedEdited  = "edited"  // the user's own version, edited in the review, instead
	AcceptedPartial = "partial" // some of its hunks (AuditFollowUp.AcceptedHunks)
)

// maxAuditArgs is the most argument bytes an audit record keeps verbatim; longer arguments are
// cut (their size and SHA-256 always cover the whole).
const maxAuditArgs = 64 << 10

// AuditRecord is one line of the audit log: one tool call, written when it ended, or one
// follow-up of a call (FollowUp set), written when it was decided and applied or not.
type AuditRecord struct {
	Time    time.Time `json:"time"` // when the call (the follow-up) ended
	Session string    `json:"session"`
	Turn    string    `json:"turn,omitzero"`
	CallID  string    `json:"callId"`
	Tool    string    `json:"tool"`
	// Args are the arguments as the model sent them (insignificant whitespace dropped), when they
	// are valid JSON of at most 64 KiB. Otherwise ArgsText holds their text (cut to 64 KiB,
	// ArgsTruncated set). ArgsBytes and ArgsSHA256 always cover the exact bytes sent.
	Args          json.RawMessage `json:"args,omitzero"`
	ArgsText      string          `json:"argsText,omitzero"`
	ArgsTruncated bool            `json:"argsTruncated,omitzero"`
	ArgsBytes     int             `json:"argsBytes"`
	ArgsSHA256    string          `json:"argsSha256"`
	// Decision is one of the Decision constants; By says who made it (By constants, or what the
	// daemon's gate said); Reason is the refusal's reason or the gate's error.
	Decision string `json:"decision"`
	By       string `json:"by"`
	Reason   string `json:"reason,omitzero"`
	// GateWait is how long the gate took (a user deciding).
	GateWait time.Duration `json:"gateWaitNs,omitzero"`
	// Duration is the call's whole time, from preparation to its result (gate wait included).
	Duration time.Duration    `json:"durationNs"`
	Result   tools.ResultType `json:"result"`
	IsError  bool             `json:"isError,omitzero"`
	// ResultBytes is the size of what the model got (text and image bytes); OriginalBytes the
	// size before truncation, when the result was truncated.
	ResultBytes   int   `json:"resultBytes"`
	OriginalBytes int64 `json:"originalBytes,omitzero"`
	Truncated     bool  `json:"truncated,omitzero"`
	// FollowUp, set, makes the record one of a change the call made and could not apply on its
	// own (a command's or MCP server's change put to review after the call ran, tools.FollowUp),
	// a line of its own beside the call's (same CallID, Tool and Args; the call's line is
	// written after it). Decision, By, Reason and GateWait are then the review's, Duration the
	// time from the review's question to the change's outcome, Result ok when it was applied
	// (else the refusal's type, "" when it could not be applied), IsError an accept that could
	// not be applied, ResultBytes the size of what the model was told about it.
	FollowUp *AuditFollowUp `json:"followUp,omitzero"`
}

// AuditFollowUp is what a follow-up's audit record says about the change.
type AuditFollowUp struct {
	// Subject names the change ("Review of the created .husky/pre-commit"), Path its file (the
	// absolute path its review's permission names, else the diff's; "" when no gate saw it).
	Subject string `json:"subject"`
	Path    string `json:"path,omitzero"`
	// Applied: the change reached the workspace.
	Applied bool `json:"applied"`
	// Accepted, for an allow, is what was accepted (Accepted constants); AcceptedHunks the IDs
	// of the hunks accepted in part, of Hunks in the diff; ContentSHA256 the hash of the user's
	// edited version.
	Accepted      string   `json:"accepted,omitzero"`
	AcceptedHunks []string `json:"acceptedHunks,omitzero"`
	Hunks         int      `json:"hunks,omitzero"`
	ContentSHA256 string   `json:"contentSha256,omitzero"`
	// Outcome is what the model was told became of it.
	Outcome string `json:"outcome"`
}

// Audit records the tool calls of one session in the store's audit log (audit/<yyyy-mm-dd>.jsonl,
// UTC days, shared by every session). Wrap the session's gate with WrapGate and feed every event
// of the session to Observe. It is safe for concurrent use.
type Audit struct {
	w       *auditWriter
	session string
	log     *slog.Logger

	mu    sync.Mutex
	turn  string
	calls map[string]*auditCall // by call ID, from ToolStart to ToolEnd
	gates map[string]gateOutcome
	// followUps are the reviews of follow-ups, by followUpKey, from the gate to FollowUpEnd.
	followUps map[string]followUpReview
}

type auditCall struct {
	start time.Time
	tool  string
	args  json.RawMessage
}

type gateOutcome struct {
	decision, by, reason string
	wait                 time.Duration
}

// followUpReview is a follow-up's gate outcome and what the gate saw of the change.
type followUpReview struct {
	gateOutcome
	start time.Time
	fu    AuditFollowUp
}

func followUpKey(callID, subject string) string { return callID + "\x00" + subject }

// Audit returns the audit recorder of a session.
func (s *Store) Audit(sessionID string) *Audit {
	return &Audit{w: s.audit, session: sessionID, log: s.log,
		calls: map[string]*auditCall{}, gates: map[string]gateOutcome{}, followUps: map[string]followUpReview{}}
}

// WrapGate returns a gate that asks g and records its decision for the call. A nil g stays nil
// (no gate: calls are recorded as not asked).
func (a *Audit) WrapGate(g agent.Gate) agent.Gate {
	if g == nil {
		return nil
	}
	return func(ctx context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		start := time.Now()
		d, err := g(ctx, req)
		o := gateOutcome{wait: time.Since(start), by: d.By}
		switch {
		case ctx.Err() != nil:
			o.decision, o.reason = DecisionCancelled, context.Cause(ctx).Error()
		case err != nil:
			o.decision, o.reason = DecisionGateFailed, err.Error()
		case d.Allow:
			o.decision = DecisionAllowed
			if d.Approval != nil && d.Approval.Note != "" {
				o.reason = d.Approval.Note
			}
			if o.by == "" {
				o.by = ByGate
			}
		default:
			o.decision, o.reason = DecisionRejected, d.Reason
			if o.by == "" {
				o.by = ByUser
				if d.Type == tools.PermissionDenied {
					o.by = ByPolicy
				}
			}
		}
		// A follow-up (a command's change put to review after it ran) gets a record of its own
		// (at its FollowUpEnd); the call's record keeps the decision about the call itself.
		switch {
		case req.Call == nil:
		case req.FollowUp:
			r := followUpReview{gateOutcome: o, start: start, fu: reviewed(req, d, err == nil && ctx.Err() == nil)}
			a.mu.Lock()
			a.followUps[followUpKey(req.Call.ID, req.Subject)] = r
			a.mu.Unlock()
		default:
			a.mu.Lock()
			a.gates[req.Call.ID] = o
			a.mu.Unlock()
		}
		return d, err
	}
}

// reviewed is what a follow-up's question and its decision say about the change: its file,
// and for an allow what was accepted.
func reviewed(req agent.GateRequest, d agent.GateDecision, decided bool) AuditFollowUp {
	fu := AuditFollowUp{Subject: req.Subject}
	if pm, ok := req.Tool.(tools.PermissionMetadata); ok {
		if paths := pm.Permission(req.Call).Paths; len(paths) > 0 {
			fu.Path = paths[0]
		}
	}
	var diff *preview.Diff
	if req.Preview != nil {
		diff = req.Preview.Diff
	}
	if diff != nil {
		fu.Hunks = len(diff.Hunks)
		if fu.Path == "" {
			fu.Path = diff.Path
		}
	}
	if !decided || !d.Allow {
		return fu
	}
	fu.Accepted = AcceptedAll
	switch ap := d.Approval; {
	case ap == nil:
	case ap.Content != nil && (diff == nil || *ap.Content != diff.New):
		sum := sha256.Sum256([]byte(*ap.Content))
		fu.Accepted, fu.ContentSHA256 = AcceptedEdited, hex.EncodeToString(sum[:])
	case ap.Hunks != nil && (diff == nil || !allHunks(diff, ap.Hunks)):
		fu.Accepted, fu.AcceptedHunks = AcceptedPartial, slices.Clone(ap.Hunks)
	}
	return fu
}

// allHunks reports whether ids name every hunk of d.
func allHunks(d *preview.Diff, ids []string) bool {
	for _, h := range d.Hunks {
		if !slices.Contains(ids, h.ID) {
			return false
		}
	}
	return true
}

// Observe follows the session's events: TurnStart and TurnEnd set the turn, ToolStart remembers
// the arguments, ToolEnd writes the call's record.
func (a *Audit) Observe(e agent.Event) {
	switch e := e.(type) {
	case agent.TurnStart:
		a.mu.Lock()
		a.turn = e.TurnID
		a.mu.Unlock()
	case agent.TurnEnd:
		a.mu.Lock()
		if a.turn == e.TurnID {
			a.turn = ""
		}
		a.mu.Unlock()
	case agent.ToolStart:
		a.mu.Lock()
		a.calls[e.CallID] = &auditCall{start: time.Now(), tool: e.Tool, args: e.Args}
		a.mu.Unlock()
	case agent.FollowUpEnd:
		a.mu.Lock()
		key := followUpKey(e.CallID, e.Subject)
		r, asked := a.followUps[key]
		delete(a.followUps, key)
		c := a.calls[e.CallID]
		turn := a.turn
		a.mu.Unlock()
		rec := a.followUpRecord(turn, e, c, r, asked)
		if err := a.w.write(rec); err != nil {
			a.log.Error("store: cannot write the audit log", "session", a.session, "call", e.CallID, "followUp", e.Subject, "err", err)
		}
	case agent.ToolEnd:
		a.mu.Lock()
		c := a.calls[e.CallID]
		g, asked := a.gates[e.CallID]
		delete(a.calls, e.CallID)
		delete(a.gates, e.CallID)
		turn := a.turn
		a.mu.Unlock()
		rec := a.record(turn, e, c, g, asked)
		if err := a.w.write(rec); err != nil {
			a.log.Error("store: cannot write the audit log", "session", a.session, "call", e.CallID, "err", err)
		}
	}
}

func (a *Audit) record(turn string, e agent.ToolEnd, c *auditCall, g gateOutcome, asked bool) AuditRecord {
	r := e.Result
	rec := AuditRecord{Time: time.Now().UTC(), Session: a.session, Turn: turn, CallID: e.CallID, Tool: e.Tool,
		Decision: DecisionNotAsked, By: ByNoGate, Duration: r.Elapsed, Result: r.Type, IsError: r.IsError,
		OriginalBytes: r.Meta.OriginalSize, Truncated: r.Meta.Truncated}
	if asked {
		rec.Decision, rec.By, rec.Reason, rec.GateWait = g.decision, g.by, g.reason, g.wait
	}
	if c != nil {
		if rec.Duration == 0 {
			rec.Duration = time.Since(c.start)
		}
		setArgs(&rec, c.args)
	}
	for _, b := range r.Content {
		rec.ResultBytes += len(b.Text) + len(b.Data)
	}
	return rec
}

// followUpRecord is the record of one follow-up of a call (AuditRecord.FollowUp).
func (a *Audit) followUpRecord(turn string, e agent.FollowUpEnd, c *auditCall, r followUpReview, asked bool) AuditRecord {
	now := time.Now()
	rec := AuditRecord{Time: now.UTC(), Session: a.session, Turn: turn, CallID: e.CallID,
		Decision: DecisionNotAsked, By: ByNoGate, Result: e.Type, ResultBytes: len(e.Text)}
	fu := AuditFollowUp{Subject: e.Subject}
	if asked {
		rec.Decision, rec.By, rec.Reason, rec.GateWait = r.decision, r.by, r.reason, r.wait
		rec.Duration = now.Sub(r.start)
		fu = r.fu
	}
	fu.Applied, fu.Outcome = e.Applied, strings.TrimSpace(e.Text)
	if e.Applied {
		rec.Result = tools.OK
	}
	rec.IsError = !e.Applied && rec.Decision == DecisionAllowed
	if c != nil {
		rec.Tool = c.tool
		setArgs(&rec, c.args)
	}
	rec.FollowUp = &fu
	return rec
}

func setArgs(rec *AuditRecord, args json.RawMessage) {
	sum := sha256.Sum256(args)
	rec.ArgsBytes, rec.ArgsSHA256 = len(args), hex.EncodeToString(sum[:])
	if len(args) == 0 {
		return
	}
	if len(args) <= maxAuditArgs && json.Valid(args) {
		rec.Args = args
		return
	}
	text := args
	if len(text) > maxAuditArgs {
		cut := maxAuditArgs
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut-- // do not end inside a character
		}
		text, rec.ArgsTruncated = text[:cut], true
	}
	rec.ArgsText = string(text)
}

// ReadAudit returns the audit records of one UTC day. Lines that do not parse are skipped.
func (s *Store) ReadAudit(day time.Time) ([]AuditRecord, error) {
	f, err := os.Open(filepath.Join(s.dir, auditDir, day.UTC().Format(time.DateOnly)+".jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditRecord
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var r AuditRecord
			if json.Unmarshal(line, &r) == nil {
				out = append(out, r)
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// auditWriter appends records to audit/<day>.jsonl, one write call per line on an O_APPEND file,
// so lines from concurrent writers (even other processes) never interleave.
type auditWriter struct {
	dir string
	log *slog.Logger

	mu  sync.Mutex
	day string
	f   *os.File
}

func (w *auditWriter) write(rec AuditRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	day := rec.Time.UTC().Format(time.DateOnly)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil || w.day != day {
		if w.f != nil {
			w.f.Close()
			w.f = nil
		}
		f, err := os.OpenFile(filepath.Join(w.dir, day+".jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		w.f, w.day = f, day
	}
	n, err := w.f.Write(line)
	if err != nil && n > 0 && n < len(line) {
		// Finish the torn line so the next record starts on its own line.
		_, _ = w.f.Write([]byte{'\n'})
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

func (w *auditWriter) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
