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
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/agent"
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

// maxAuditArgs is the most argument bytes an audit record keeps verbatim; longer arguments are
// cut (their size and SHA-256 always cover the whole).
const maxAuditArgs = 64 << 10

// AuditRecord is one line of the audit log: one tool call, written when it ended.
type AuditRecord struct {
	Time    time.Time `json:"time"` // when the call ended
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

// Audit returns the audit recorder of a session.
func (s *Store) Audit(sessionID string) *Audit {
	return &Audit{w: s.audit, session: sessionID, log: s.log,
		calls: map[string]*auditCall{}, gates: map[string]gateOutcome{}}
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
		// A follow-up (a command's change put to review after it ran) is told to the model in
		// the call's result; the call's record keeps the decision about the call itself.
		if req.Call != nil && !req.FollowUp {
			a.mu.Lock()
			a.gates[req.Call.ID] = o
			a.mu.Unlock()
		}
		return d, err
	}
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
