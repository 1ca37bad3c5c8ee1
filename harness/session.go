package harness

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentd/agentd/agent"
)

// Session is a live session, the one every front end serves: its harness, its agent loop
// (started at the first prompt, so a stored session can be attached and read while the model
// server is down), its transcript and the front ends watching it. Front ends prompt, steer,
// cancel and close through it, and attach to read a snapshot of the transcript and every update
// after it; they translate both to their wire and keep no conversation state of their own.
type Session struct {
	*Harness
	ask Asker

	// startMu serialises starting the loop (which asks the model server for its capabilities)
	// without holding mu, which the loop's events take.
	startMu sync.Mutex

	mu       sync.Mutex
	loop     *agent.Session
	tr       transcript
	watchers map[*watcher]struct{}
	running  string // the running turn's ID
	turns    int    // turns started, replayed ones included
	updated  time.Time
}

// Update is one change of the transcript, in the order the session made them: the event that
// made it (nil for a change of a call's status the gate made: a question asked), the turn it
// belongs to, and for tool events the call as it is after the change (a copy).
type Update struct {
	Event agent.Event
	Turn  string
	Call  *ToolCall
}

type watcher struct{ fn func(Update) }

// NewSession makes the live session of an opened harness. ask answers the calls the policy
// leaves to the user (nil: nobody can be asked, such calls are not run).
func NewSession(h *Harness, ask Asker) *Session {
	s := &Session{Harness: h, ask: ask, watchers: map[*watcher]struct{}{}, updated: h.Replayed.Updated}
	if s.updated.IsZero() {
		s.updated = time.Now()
	}
	reasons := map[string]string{}
	for _, t := range h.Replayed.Turns {
		reasons[t.ID] = t.Reason
		s.tr.started(t.Start())
	}
	s.turns = len(h.Replayed.Turns)
	s.tr.replay(h.Replayed.History, h.Replayed.HistoryTurns, reasons, nil)
	return s
}

// Snapshot is the transcript when a front end attached, with the session's state.
type Snapshot struct {
	Turns []Turn
	// Running is the running turn's ID ("" : none).
	Running string
}

// Attach returns the transcript and calls fn with every update after it, in order, until
// detach is called: nothing is missed between the two and nothing is in both. fn is called
// with the session's lock held, from the loop's goroutine or the gate's: it must not block nor
// call the session.
func (s *Session) Attach(fn func(Update)) (snap Snapshot, detach func()) {
	w := &watcher{fn: fn}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers[w] = struct{}{}
	return Snapshot{Turns: s.tr.clone(), Running: s.running}, func() {
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
	}
}

// Transcript returns the turns as they are now.
func (s *Session) Transcript() []Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tr.clone()
}

// Running returns the running turn's ID ("" : none).
func (s *Session) Running() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// TurnCount is the number of turns started, replayed ones included.
func (s *Session) TurnCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turns
}

// Updated is when the session last changed.
func (s *Session) Updated() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updated
}

// Started reports whether the agent loop runs (a first prompt started it).
func (s *Session) Started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loop != nil
}

// start starts the agent loop at the first prompt.
func (s *Session) start(ctx context.Context) (*agent.Session, error) {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	s.mu.Lock()
	loop := s.loop
	s.mu.Unlock()
	if loop != nil {
		return loop, nil
	}
	var ask Asker
	if s.ask != nil {
		ask = asking{s}
	}
	loop, err := s.Harness.Start(ctx, ask, s.event)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.loop = loop
	s.mu.Unlock()
	return loop, nil
}

// Start starts the agent loop now rather than at the first prompt (a front end that reports a
// model server that is down when the session opens).
func (s *Session) Start(ctx context.Context) error {
	_, err := s.start(ctx)
	return err
}

// Prompt starts a turn with the user's text and returns its ID (agent.ErrTurnRunning while one
// runs).
func (s *Session) Prompt(ctx context.Context, text string) (string, error) {
	loop, err := s.start(ctx)
	if err != nil {
		return "", err
	}
	return loop.Prompt(text)
}

// PromptWithContext starts a turn with the user's text and editor context: its text appended for
// the model, its labels shown beside the user's words (agent.Session.PromptWithContext).
func (s *Session) PromptWithContext(ctx context.Context, text string, context agent.EditorContext) (string, error) {
	loop, err := s.start(ctx)
	if err != nil {
		return "", err
	}
	return loop.PromptWithContext(text, context)
}

// Steer sends the user's text to the running turn (or starts one).
func (s *Session) Steer(ctx context.Context, text string) (string, error) {
	loop, err := s.start(ctx)
	if err != nil {
		return "", err
	}
	return loop.Steer(text)
}

// Cancel cancels the running turn and reports whether one was running.
func (s *Session) Cancel() bool {
	s.mu.Lock()
	loop := s.loop
	s.mu.Unlock()
	return loop != nil && loop.Cancel()
}

// SetModel switches the session to another model between turns: the loop stops, and the next
// prompt starts it again on the new model with the conversation so far (the context window is
// chosen again, for that model). The change is journaled.
func (s *Session) SetModel(model string) error {
	if model == "" {
		return errors.New("no model named")
	}
	s.startMu.Lock()
	defer s.startMu.Unlock()
	s.mu.Lock()
	loop, running, turns := s.loop, s.running, s.turns
	s.mu.Unlock()
	if running != "" {
		return agent.ErrTurnRunning
	}
	client, err := s.rt.opts.Models(s.host, model)
	if err != nil {
		return err
	}
	if loop != nil {
		msgs, turnOf := loop.HistoryTurns()
		loop.Close()
		s.restart = &restartPoint{history: msgs, turnOf: turnOf, turns: turns}
		s.mu.Lock()
		s.loop = nil
		s.mu.Unlock()
	}
	s.holdModel(nil)
	s.Harness.mu.Lock()
	s.model = client
	s.settings.Model, s.settings.NumCtx = model, 0
	settings := s.settings
	s.Harness.mu.Unlock()
	return s.journal.Append(agent.Entry{Type: agent.EntrySession, Time: time.Now().UTC(), Session: &settings})
}

// restartPoint is the conversation a loop restarted by SetModel resumes from.
type restartPoint struct {
	history []agent.Message
	turnOf  []string
	turns   int
}

// Close stops the loop (cancelling its turn) and closes the harness: the journal is synced.
func (s *Session) Close() error {
	s.startMu.Lock()
	s.mu.Lock()
	loop := s.loop
	s.mu.Unlock()
	s.startMu.Unlock()
	if loop != nil {
		loop.Close()
	}
	return s.Harness.Close()
}

// event reduces one event of the loop and tells the watchers.
func (s *Session) event(e agent.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updated = time.Now()
	turn := s.running
	switch e := e.(type) {
	case agent.TurnStart:
		s.running, turn = e.TurnID, e.TurnID
		s.turns++
	case agent.TurnEnd:
		s.running = ""
		turn = e.TurnID
	case agent.MessageDelta:
		turn = e.TurnID
	case agent.MessageEnd:
		turn = e.TurnID
	case agent.UserMessage:
		turn = e.TurnID
	}
	call := s.tr.apply(e)
	if c, ok := e.(agent.Compacted); ok {
		s.compacted(c)
	}
	u := Update{Event: e, Turn: turn}
	if call != nil {
		u.Call = call.clone(false)
	}
	s.notify(u)
}

// compacted rebuilds the transcript from the compacted history (the earlier turns are a summary
// now, older tool outputs are elided), keeping the running turn's calls as they are. s.mu held.
func (s *Session) compacted(agent.Compacted) {
	msgs, turnOf := s.loop.HistoryTurns()
	reasons := map[string]string{}
	for _, t := range s.tr.turns {
		reasons[t.ID] = t.Reason
	}
	s.tr.replay(msgs, turnOf, reasons, s.tr.calls)
}

func (s *Session) notify(u Update) {
	for w := range s.watchers {
		w.fn(u)
	}
}

// setStatus records a status the gate gave a call (a question asked) and tells the watchers.
func (s *Session) setStatus(callID, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.tr.calls[callID]
	if c == nil || c.Result != nil {
		return
	}
	c.Status = status
	s.notify(Update{Turn: s.running, Call: c.clone(false)})
}

// asking is the gate's Asker of a live session: the call awaits the user's answer in the
// transcript while the front end's Asker asks.
type asking struct{ s *Session }

// AsksTogether passes on whether the front end's Asker shows every file change of a reply at
// once (TogetherAsker).
func (a asking) AsksTogether() bool { return asksTogether(a.s.ask) }

func (a asking) Ask(ctx context.Context, q Question) (Answer, error) {
	a.s.setStatus(q.Call.Call.ID, ToolAwaiting)
	return a.s.ask.Ask(ctx, q)
}
