package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/agent/textcall"
	"github.com/agentd/agentd/tools"
)

// SessionConfig configures a session.
type SessionConfig struct {
	ID    string
	Model Model
	// Info is the model's description (Model.Info), read once when the session starts.
	Info ModelInfo
	// NumCtx is the context window, chosen once for the session and sent with every request.
	NumCtx int
	// ReplyBudget caps each reply (num_predict). Default: a quarter of NumCtx, at most 8192.
	ReplyBudget int
	// Think turns thinking on for models that have it.
	Think bool
	// Kernel configures the tool pipeline (registry, gate, middleware, …).
	Kernel Config
	// Journal persists the session; nil keeps it in memory only.
	Journal Journal
	// Sink receives every event of the session.
	Sink Sink
	// Facts describe the workspace: the context block at the start of the first user message of
	// every request (ContextBlock), never the system prompt, which stays the same in every folder.
	Facts WorkspaceFacts
	// History resumes a stored session (starting with its system message); nil starts a new one.
	History []Message
	// HistoryTurns is the turn each message of History joined (Replayed.HistoryTurns).
	HistoryTurns []string
	// Turns is the number of turns the resumed session already had (turn IDs continue from it).
	Turns int
	// MaxSteps caps model calls per turn (default 60); MaxTurnTime caps a turn's duration
	// (default 60 minutes).
	MaxSteps    int
	MaxTurnTime time.Duration
	// CompactAt is the fraction of NumCtx at which history is compacted (default 0.75).
	CompactAt float64
	// MaxUnreadCalls: after this many replies in a row whose tool calls could not be read (a
	// malformed call, a call written only in the reasoning, or one the server failed to parse),
	// the turn ends with an ErrBadToolCall error; before that each one is answered with a nudge
	// that says what was wrong (default DefaultMaxUnreadCalls).
	MaxUnreadCalls int
	// TurnNote, if set, is called by the loop as each turn starts (however it was started: a
	// prompt, a steer with no turn running, steering left over from the last turn). A non-empty
	// note joins the turn before its prompt, as its own user-role message marked Note: what
	// agentd tells the model (the harness's note about changes the user undid since the last
	// turn). Earlier messages are not rewritten, so the prompt prefix stays cache-stable, and
	// the prompt stays the user's own words (TurnStart, the journal).
	TurnNote func() string
}

// ErrTurnRunning is returned by Prompt while a turn runs (use Steer).
var ErrTurnRunning = errors.New("a turn is already running")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("session closed")

// Messages the loop sends to the model on its own (marked KindNudge). Journals written before
// Message.Kind are recognised by the texts of nudgeCut and legacyNudgeEmpty (Replay), which never
// change.
const (
	legacyNudgeEmpty = "Your last reply was empty. If you meant to call a tool, the call was malformed: call it again with valid JSON arguments. Otherwise, answer the user."
	nudgeCut         = "Your reply was cut off by the length limit. Continue from where it stopped, more briefly."
)

// DefaultMaxUnreadCalls is how many replies in a row may attempt tool calls that cannot be read
// (SessionConfig.MaxUnreadCalls).
const DefaultMaxUnreadCalls = 3

// Session runs the agent loop for one conversation. One goroutine owns the loop state; Prompt,
// Steer, Cancel and Close may be called from any goroutine.
//
// A turn is a state machine: model → tools → (compact) → model … → done, with step and time
// limits. Each phase is one method.
type Session struct {
	cfg       SessionConfig
	kernel    *Kernel
	defs      []tools.Definition
	names     []string
	textTools bool // the model gets tools as text in the system prompt and calls them as text

	turns chan turnRequest
	done  chan struct{}

	// mu guards what other goroutines read or signal; the loop goroutine is the only writer of
	// history.
	mu       sync.Mutex
	history  []Message
	turnOf   []string // turnOf[i]: the turn history[i] joined ("" for the system prompt or unknown)
	running  string   // ID of the running turn, "" when idle
	cancel   context.CancelFunc
	queue    []string      // steering messages not yet seen by the model
	steerSig chan struct{} // signalled when queue grows
	turnSeq  int
	closed   bool

	// Owned by the loop goroutine.
	lastTokens int // prompt+output tokens of the last model call, as the server counted them
	lastCount  int // len(history) when lastTokens was measured
}

type turnRequest struct {
	id     string
	prompt string
	// context is editor context appended to the prompt for the model (PromptWithContext).
	context EditorContext
}

// EditorContext is editor context sent with a prompt (the active file, a selection, mentions):
// Text is appended to the prompt for the model; Labels name its pieces as the editors show them
// beside the user's words ("cart.go", "cart.go:3-5", "@greet.go"), live and replayed alike.
type EditorContext struct {
	Text   string
	Labels []string
}

// NewSession starts a session's goroutine.
func NewSession(cfg SessionConfig) (*Session, error) {
	if cfg.Model == nil || cfg.Kernel.Registry == nil {
		return nil, errors.New("agent: session needs a model and a tool registry")
	}
	if cfg.NumCtx <= 0 {
		return nil, errors.New("agent: session needs NumCtx")
	}
	if cfg.ReplyBudget <= 0 {
		cfg.ReplyBudget = min(cfg.NumCtx/4, 8192)
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 60
	}
	if cfg.MaxTurnTime <= 0 {
		cfg.MaxTurnTime = 60 * time.Minute
	}
	if cfg.CompactAt <= 0 || cfg.CompactAt >= 1 {
		cfg.CompactAt = 0.75
	}
	if cfg.MaxUnreadCalls <= 0 {
		cfg.MaxUnreadCalls = DefaultMaxUnreadCalls
	}
	s := &Session{
		cfg:       cfg,
		kernel:    NewKernel(cfg.Kernel, cfg.Sink),
		defs:      cfg.Kernel.Registry.Definitions(),
		names:     cfg.Kernel.Registry.Names(),
		textTools: !cfg.Info.Tools,
		turns:     make(chan turnRequest, 1),
		done:      make(chan struct{}),
		steerSig:  make(chan struct{}, 1),
		turnSeq:   cfg.Turns,
	}
	if cfg.Think && !cfg.Info.Thinking {
		// The request goes without thinking (callModel); the user asked for it, so say why.
		slog.Warn(fmt.Sprintf("thinking is off: %s does not have the thinking capability (see `ollama show %s`), so --think / `think on` has no effect", cfg.Info.Name, cfg.Info.Name),
			"session", cfg.ID, "model", cfg.Info.Name)
	}
	if len(cfg.History) > 0 {
		s.history = append([]Message(nil), cfg.History...)
		s.turnOf = make([]string, len(s.history))
		copy(s.turnOf, cfg.HistoryTurns)
		s.textTools = s.textTools || strings.Contains(s.history[0].Content, "<tool_call>")
	} else {
		s.appendMessage("", Message{Role: RoleSystem, Content: SystemPrompt(s.defs, s.textTools)})
	}
	go s.loop()
	return s, nil
}

// ID returns the session's ID.
func (s *Session) ID() string { return s.cfg.ID }

// Kernel returns the session's kernel (for its breaker state and registry).
func (s *Session) Kernel() *Kernel { return s.kernel }

// Prompt starts a turn and returns its ID at once; the turn reports through the sink.
func (s *Session) Prompt(text string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	if s.running != "" {
		return "", ErrTurnRunning
	}
	return s.startLocked(text, EditorContext{}), nil
}

// PromptWithContext starts a turn with the user's text and editor context (the active file, a
// selection, mentions) appended for the model; the turn's prompt as the user wrote it — shown in
// the session list and the transcript, given back by a rewind — is text alone, and the turn
// records the context's labels (TurnStart.Context).
func (s *Session) PromptWithContext(text string, context EditorContext) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	if s.running != "" {
		return "", ErrTurnRunning
	}
	return s.startLocked(text, context), nil
}

func (s *Session) startLocked(text string, context EditorContext) string {
	s.turnSeq++
	id := "t" + strconv.Itoa(s.turnSeq)
	s.running = id
	s.turns <- turnRequest{id: id, prompt: text, context: context}
	return id
}

// Steer queues a message into the running turn: no new tool call starts, interruptible calls are
// cancelled, and the model reads the message next. With no turn running it starts one.
func (s *Session) Steer(text string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	if s.running == "" {
		return s.startLocked(text, EditorContext{}), nil
	}
	s.queue = append(s.queue, text)
	select {
	case s.steerSig <- struct{}{}:
	default:
	}
	return s.running, nil
}

// Cancel stops the running turn. It reports whether a turn was running.
func (s *Session) Cancel() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == "" || s.cancel == nil {
		return s.running != ""
	}
	s.cancel()
	return true
}

// Running returns the running turn's ID, or "".
func (s *Session) Running() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// History returns a copy of the model's history.
func (s *Session) History() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.history...)
}

// HistoryTurns returns a copy of the model's history and, for each message, the ID of the turn
// it joined: steering and the loop's own nudges belong to the turn they were sent in ("" for the
// system prompt, and for messages of a resumed journal that did not record it).
func (s *Session) HistoryTurns() ([]Message, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.history...), append([]string(nil), s.turnOf...)
}

// Close cancels the running turn, waits for the loop to stop and syncs the journal.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.closed = true
	if s.cancel != nil {
		s.cancel()
	}
	close(s.turns)
	s.mu.Unlock()
	<-s.done
}

// loop is the session's goroutine.
func (s *Session) loop() {
	defer close(s.done)
	for req := range s.turns {
		s.runTurn(req)
	}
	s.sync()
}

// runTurn drives one turn to its end.
func (s *Session) runTurn(req turnRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.MaxTurnTime)
	s.mu.Lock()
	s.cancel = cancel
	closed := s.closed
	s.mu.Unlock()
	if closed {
		cancel()
	}
	defer cancel()

	start := TurnStart{TurnID: req.id, Prompt: req.prompt}
	if req.context.Text != "" {
		start.Prompt, start.Typed = req.prompt+req.context.Text, req.prompt
	}
	if len(req.context.Labels) > 0 {
		start.Context = slices.Clone(req.context.Labels)
	}
	prompt := start.Prompt
	s.journal(Entry{Type: EntryTurnStart, TurnID: req.id, Prompt: prompt, Typed: start.Typed, Context: start.Context})
	s.kernel.Emit(start)
	if s.cfg.TurnNote != nil {
		if note := s.cfg.TurnNote(); note != "" {
			s.appendMessage(req.id, Message{Role: RoleUser, Content: note, Note: true})
		}
	}
	s.appendMessage(req.id, Message{Role: RoleUser, Content: prompt})

	reason, err := s.steps(ctx, req.id)
	if err == nil && ctx.Err() != nil {
		reason = "cancelled"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = "time_exhausted"
		}
	}
	end := Entry{Type: EntryTurnEnd, TurnID: req.id, Reason: reason}
	if err != nil {
		end.Error = err.Error()
	}
	s.journal(end)
	s.sync()

	s.mu.Lock()
	s.running, s.cancel = "", nil
	// Steering that arrived after the model's last look starts the next turn.
	pending := s.queue
	s.queue = nil
	if len(pending) > 0 && !s.closed {
		s.startLocked(strings.Join(pending, "\n\n"), EditorContext{})
	}
	s.mu.Unlock()
	s.kernel.Emit(TurnEnd{TurnID: req.id, Reason: reason, Err: err})
}

// steps alternates model calls and tool batches until the turn ends.
func (s *Session) steps(ctx context.Context, turnID string) (reason string, err error) {
	// overflowed: the last request did not fit the window and the history was compacted for the
	// retry. A request is never sent again unchanged after it failed: a second overflow in a row,
	// or a compaction that changed nothing, ends the turn.
	nudged, continued, overflowed := false, 0, false
	unread := 0 // replies in a row whose tool calls could not be read
	for step := 1; ; step++ {
		if ctx.Err() != nil {
			return "cancelled", nil
		}
		if step > s.cfg.MaxSteps {
			return "steps_exhausted", nil
		}
		s.drainSteering(turnID)
		if s.needsCompaction() && !overflowed {
			s.compact(ctx, turnID, false)
		}
		resp, err := s.callModel(ctx, turnID, step)
		if err != nil {
			var me *ModelError
			switch {
			case ctx.Err() != nil:
				return "cancelled", nil
			case errors.As(err, &me) && me.Kind == ErrNoToolSupport && !s.textTools:
				s.switchToTextTools(turnID)
				continue
			case errors.As(err, &me) && me.Kind == ErrContextOverflow:
				if overflowed {
					return "error", s.overflowError(me, true)
				}
				changed := s.compact(ctx, turnID, true)
				if ctx.Err() != nil {
					return "cancelled", nil
				}
				if !changed {
					return "error", s.overflowError(me, false)
				}
				overflowed = true
				continue
			case errors.As(err, &me) && me.Kind == ErrBadToolCall:
				// The server's parser could not read the model's call: nothing came back, so
				// the model is told what it wrote and what was wrong.
				if unread++; unread >= s.cfg.MaxUnreadCalls {
					return "error", s.unreadError(unread, serverProblem(me))
				}
				s.nudgeUnread(turnID, unreadCalls{server: me}, unread)
				continue
			}
			return "error", err
		}
		overflowed = false
		calls, bad := s.takeCalls(turnID, &resp.Message)
		s.appendMessage(turnID, resp.Message)
		s.kernel.Emit(ReplyRecorded{TurnID: turnID, Message: resp.Message})
		if bad.none() {
			unread = 0
		} else {
			unread++
		}

		switch {
		case resp.DoneReason == "length" && len(calls) > 0:
			s.appendResults(turnID, calls, s.kernel.VoidCalls(calls))
			continue
		case resp.DoneReason == "length" && continued < 2:
			continued++
			s.appendMessage(turnID, Message{Role: RoleUser, Content: nudgeCut, Kind: KindNudge})
			continue
		case len(calls) == 0 && !bad.none():
			if unread >= s.cfg.MaxUnreadCalls {
				return "error", s.unreadError(unread, bad.first())
			}
			s.nudgeUnread(turnID, bad, unread)
			continue
		case len(calls) == 0 && bad.empty && !nudged:
			nudged = true
			s.appendMessage(turnID, Message{Role: RoleUser, Content: s.nudgeEmpty(), Kind: KindNudge})
			continue
		case len(calls) == 0:
			if s.hasSteering() {
				continue
			}
			return "done", nil
		}
		br := s.kernel.RunBatch(ctx, calls, s.steerSig)
		s.appendResults(turnID, calls, br.Results)
		s.sync()
		if !bad.none() && !br.Halt && !br.Terminate {
			// Some calls of the reply ran, another could not be read: the model is told after
			// the results.
			if unread >= s.cfg.MaxUnreadCalls {
				return "error", s.unreadError(unread, bad.first())
			}
			s.nudgeUnread(turnID, bad, unread)
		}
		if br.Halt {
			// A call was refused in a way the model cannot change (GateDecision.EndTurn): the
			// model reads the result when the conversation continues, not now.
			return "blocked", nil
		}
		if br.Terminate {
			return "terminated", nil
		}
	}
}

// overflowError is the turn's error when the conversation does not fit the window: after one
// compaction and retry (compacted), or when compaction could not shrink anything. It names the
// window in use and the model's trained length; the adapter's fix names the setting.
func (s *Session) overflowError(me *ModelError, compacted bool) error {
	trained := s.cfg.Info.ContextLength
	limit := "an unknown context length"
	if trained > 0 {
		limit = fmt.Sprintf("%d tokens", trained)
	}
	how := "even after compacting the history"
	if !compacted {
		how = "and compacting the history cannot shrink it"
	}
	e := &ModelError{Kind: ErrContextOverflow, Status: me.Status, Err: me, Fix: me.Fix,
		Message: fmt.Sprintf("the conversation does not fit the context window in use (%d tokens) %s; the model %s was trained for %s (server: %s)",
			s.cfg.NumCtx, how, s.cfg.Info.Name, limit, me.Message)}
	switch {
	case TooShort(trained, s.defs, s.textTools):
		// A new session would overflow as soon: the model itself is too short for the work.
		e.Fix = fmt.Sprintf("%s was trained for only %d tokens, and agentd's own prompt takes about %d of them: too little room to work, which no new session or setting changes; use a model trained for a longer context (e.g. qwen3:8b, 40,960 tokens)",
			s.cfg.Info.Name, trained, StaticTokens(s.defs, s.textTools))
	case trained > 0 && s.cfg.NumCtx >= trained:
		e.Fix = "the window is already the model's trained length: start a new session, or ask for less at a time (smaller files, narrower searches)"
	}
	return e
}

// callModel sends the history and streams the reply.
func (s *Session) callModel(ctx context.Context, turnID string, step int) (*ModelResponse, error) {
	req := &ModelRequest{
		Messages:   s.requestMessages(),
		Think:      s.cfg.Think && s.cfg.Info.Thinking,
		NumCtx:     s.cfg.NumCtx,
		NumPredict: s.cfg.ReplyBudget,
	}
	if !s.textTools {
		req.Tools = s.defs
	}
	s.kernel.Emit(MessageStart{TurnID: turnID, Step: step})
	var text strings.Builder
	resp, err := s.cfg.Model.Chat(ctx, req, func(d Delta) {
		text.WriteString(d.Text)
		s.kernel.Emit(MessageDelta{TurnID: turnID, Text: d.Text, Thinking: d.Thinking})
	})
	if err != nil {
		if partial := text.String(); partial != "" && ctx.Err() != nil {
			// The user saw this text stream before cancelling: keep it in the history.
			s.appendMessage(turnID, Message{Role: RoleAssistant, Content: partial})
		}
		s.kernel.Emit(MessageEnd{TurnID: turnID, DoneReason: "error"})
		return nil, err
	}
	s.lastTokens = resp.Usage.PromptTokens + resp.Usage.OutputTokens
	s.lastCount = len(req.Messages) + 1
	s.journal(Entry{Type: EntryUsage, TurnID: turnID, Usage: &resp.Usage})
	s.kernel.Emit(MessageEnd{TurnID: turnID, Message: resp.Message, DoneReason: resp.DoneReason, Usage: resp.Usage})
	return resp, nil
}

// takeCalls returns the tool calls of a reply: native ones, or else the ones written as text, and
// the attempts that could not be run (see unreadCalls). Calls written in the reasoning (the
// thinking stream, or <think>…</think> in the text) never run: when the reply itself has no call,
// they are reported, so the model is told to write the call in its reply. It gives every call an
// ID unique in the turn and records the calls in the message.
func (s *Session) takeCalls(turnID string, m *Message) ([]ToolCall, unreadCalls) {
	calls := m.ToolCalls
	var bad unreadCalls
	if len(calls) == 0 {
		f := textcall.Parse(m.Content, s.names)
		for _, p := range f.Calls {
			calls = append(calls, ToolCall{Name: p.Name, Arguments: p.Arguments})
		}
		if len(f.Calls) > 0 && !s.textTools {
			// A model with native tools wrote its calls as text: record them natively, so the
			// history renders as the model's template expects.
			m.Content = f.Rest
		}
		bad.problems = f.Problems
		if len(calls) == 0 && len(f.Problems) == 0 {
			bad.reasoning = f.Reasoning
			if m.Thinking != "" {
				th := textcall.Parse(m.Thinking, s.names)
				for _, c := range th.Calls {
					bad.reasoning = append(bad.reasoning, textcall.Problem{Format: c.Format, Name: c.Name})
				}
				bad.reasoning = append(append(bad.reasoning, th.Problems...), th.Reasoning...)
			}
			bad.empty = len(bad.reasoning) == 0 && f.Text == ""
		}
	}
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("call_%s_%d", turnID, i+1)
		}
	}
	calls = s.kernel.uniqueIDs(calls)
	m.ToolCalls = calls
	return calls, bad
}

// appendResults adds one tool message per result, in the model's order.
func (s *Session) appendResults(turnID string, calls []ToolCall, results []tools.Result) {
	for i, r := range results {
		m := Message{Role: RoleTool, ToolCallID: calls[i].ID, ToolName: calls[i].Name, Content: resultText(r),
			IsError: r.IsError, ErrorType: r.Type}
		for _, b := range r.Content {
			if b.Type == "image" {
				m.Images = append(m.Images, b.Data)
			}
		}
		s.appendMessage(turnID, m)
	}
}

// resultText is what the model reads of a result: errors are labelled with their type.
func resultText(r tools.Result) string {
	t := r.Text()
	if r.IsError {
		return "Error (" + string(r.Type) + "): " + t
	}
	if t == "" {
		return "(no output)"
	}
	return t
}

// ResultOf is the typed result a tool message of the history records (the inverse of
// resultText): its type, whether it failed, and the tool's own text. A journal written before
// tool messages recorded their type gives an ok result of the text the model read.
func ResultOf(m Message) tools.Result {
	r := tools.Result{CallID: m.ToolCallID, Tool: m.ToolName, Type: tools.OK, IsError: m.IsError}
	text := m.Content
	if m.IsError {
		r.Type = m.ErrorType
		text = strings.TrimPrefix(text, "Error ("+string(m.ErrorType)+"): ")
	} else if text == "(no output)" {
		text = ""
	}
	if text != "" {
		r.Content = []tools.Block{{Type: "text", Text: text}}
	}
	return r
}

// requestMessages is the history as sent to the model. In text-tool mode, tool results become
// user messages and calls stay in the assistant's text, because templates of models without tool
// support drop tool roles. The conversion is deterministic, so the prefix stays stable.
func (s *Session) requestMessages() []Message {
	// The loop goroutine is the only writer of history: it may read it without a copy. The cap is
	// clipped so that an append by the loop can never write into a slice a request still holds.
	h := withContext(s.history[:len(s.history):len(s.history)], ContextBlock(s.cfg.Facts))
	if !s.textTools {
		return h
	}
	out := make([]Message, len(h))
	for i, m := range h {
		switch {
		case m.Role == RoleTool:
			out[i] = Message{Role: RoleUser, Images: m.Images,
				Content: "Result of " + m.ToolName + " (" + m.ToolCallID + "):\n" + m.Content}
		case m.Role == RoleAssistant && len(m.ToolCalls) > 0:
			m.ToolCalls = nil
			out[i] = m
		default:
			out[i] = m
		}
	}
	return out
}

func (s *Session) switchToTextTools(turnID string) {
	slog.Info("model has no native tool calling: switching to text tool calls", "session", s.cfg.ID, "model", s.cfg.Info.Name)
	s.textTools = true
	s.mu.Lock()
	s.history[0] = Message{Role: RoleSystem, Content: SystemPrompt(s.defs, true)}
	h := append([]Message(nil), s.history...)
	turns := append([]string(nil), s.turnOf...)
	s.mu.Unlock()
	s.journal(Entry{Type: EntryCompaction, TurnID: turnID, Messages: h, TurnIDs: turns})
}

func (s *Session) drainSteering(turnID string) {
	s.mu.Lock()
	q := s.queue
	s.queue = nil
	s.mu.Unlock()
	for _, text := range q {
		s.appendMessage(turnID, Message{Role: RoleUser, Content: text})
		s.kernel.Emit(UserMessage{TurnID: turnID, Text: text})
	}
}

func (s *Session) hasSteering() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) > 0
}

// appendMessage adds a message to the history and the journal. Only the loop goroutine (or
// NewSession before it starts) calls it.
func (s *Session) appendMessage(turnID string, m Message) {
	s.mu.Lock()
	s.history = append(s.history, m)
	s.turnOf = append(s.turnOf, turnID)
	s.mu.Unlock()
	s.journal(Entry{Type: EntryMessage, TurnID: turnID, Message: &m})
}

func (s *Session) journal(e Entry) {
	if s.cfg.Journal == nil {
		return
	}
	e.Time = time.Now().UTC()
	if err := s.cfg.Journal.Append(e); err != nil {
		slog.Error("session journal append failed", "session", s.cfg.ID, "err", err)
	}
}

func (s *Session) sync() {
	if s.cfg.Journal == nil {
		return
	}
	if err := s.cfg.Journal.Sync(); err != nil {
		slog.Error("session journal sync failed", "session", s.cfg.ID, "err", err)
	}
}
