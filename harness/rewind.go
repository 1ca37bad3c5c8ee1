package harness

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/agent/store"
)

// Rewind and fork. A fork copies a session's journal to a new session (store.Fork): the new one
// rebuilds the same history, so the model reads the same prompt prefix and its cache still hits.
// A rewind goes back to before one of the session's turns: the files that turn and the later ones
// changed are restored as they were before it — but a file changed since by someone else is
// never overwritten: it is listed, as a revert lists it — and the conversation before the turn
// continues in a fork, from which the user sends that turn's prompt again, edited or not.

// Fork copies a session (stored or live) to a new session and returns the new ID.
func (rt *Runtime) Fork(id string) (string, error) { return rt.store.Fork(id, "") }

// RewindResult says what a rewind did.
type RewindResult struct {
	// Session is the new session: the conversation before the turn.
	Session string
	// Turn is the turn rewound to, and Prompt its prompt (to send again, edited or not).
	Turn, Prompt string
	// Restored are the files put back as they were before the turn (workspace-relative).
	Restored []string
	// Skipped are the files left as they are, with the reason (changed since by someone else).
	Skipped []store.Skip
}

// Rewind goes back to before turn turnID: it restores the files that turn and the later ones
// changed, newest first, never overwriting a file changed since, and forks the conversation
// before the turn. The session itself is left as it is (its turns are marked reverted). No turn
// may be running.
func (s *Session) Rewind(turnID string) (RewindResult, error) {
	if s.Running() != "" {
		return RewindResult{}, agent.ErrTurnRunning
	}
	n, ok := turnNumber(turnID)
	if !ok {
		return RewindResult{}, fmt.Errorf("%w %q: turn IDs are t1, t2, …", ErrUnknownTurn, turnID)
	}
	prompt, found := s.promptWords(turnID)
	if !found {
		return RewindResult{}, fmt.Errorf("%w %q: the session has no such turn", ErrUnknownTurn, turnID)
	}
	res := RewindResult{Turn: turnID, Prompt: prompt, Restored: []string{}, Skipped: []store.Skip{}}
	// The journal is synced before it is copied: the fork has every entry before the turn.
	if err := s.journal.Sync(); err != nil {
		return res, err
	}
	id, err := s.rt.store.Fork(s.ID(), turnID)
	if err != nil {
		return res, err
	}
	res.Session = id
	turns, err := s.checkpoints.Turns()
	if err != nil {
		return res, err
	}
	for _, t := range turns { // newest first
		k, ok := turnNumber(t.ID)
		if !ok || k < n || t.Reverted != nil {
			continue
		}
		r, err := s.checkpoints.Revert(t.ID)
		if err != nil {
			return res, fmt.Errorf("restoring the files of turn %s: %w", t.ID, err)
		}
		for _, p := range r.Restored {
			if !slices.Contains(res.Restored, p) {
				res.Restored = append(res.Restored, p)
			}
		}
		res.Skipped = append(res.Skipped, r.Skipped...)
	}
	return res, nil
}

// promptWords is the prompt of a turn of this session as the user wrote it, replayed or live.
func (s *Session) promptWords(turnID string) (string, bool) {
	s.turnMu.Lock()
	p, ok := s.prompts[turnID]
	s.turnMu.Unlock()
	if ok {
		return p, true
	}
	for _, t := range s.Replayed.Turns {
		if t.ID == turnID {
			return t.Words(), true
		}
	}
	return "", false
}

func turnNumber(id string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "t"))
	return n, err == nil && strings.HasPrefix(id, "t") && n > 0
}
