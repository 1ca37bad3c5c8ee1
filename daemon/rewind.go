package daemon

import (
	"encoding/json"
	"errors"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/rpc"
)

// sessionFork copies a session and attaches the editor to the copy.
func (c *client) sessionFork(params json.RawMessage) (any, error) {
	var p rpc.SessionForkParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	if ls.h.Running() != "" {
		return nil, rpc.Errorf(rpc.CodeTurnRunning, "a turn is running: cancel it before forking")
	}
	id, err := c.srv.rt.Fork(ls.h.ID())
	if err != nil {
		return nil, err
	}
	fork, err := c.srv.session(id, c)
	if err != nil {
		return nil, err
	}
	fork.attach(c)
	return rpc.SessionForkResult{Session: fork.info()}, nil
}

// sessionRewind goes back to before a turn and attaches the editor to the session that continues
// from there.
func (c *client) sessionRewind(params json.RawMessage) (any, error) {
	var p rpc.SessionRewindParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	res, err := ls.h.Rewind(p.TurnID)
	switch {
	case errors.Is(err, agent.ErrTurnRunning):
		return nil, rpc.Errorf(rpc.CodeTurnRunning, "a turn is running: cancel it before rewinding")
	case errors.Is(err, harness.ErrUnknownTurn):
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
	case err != nil:
		return nil, err
	}
	fork, err := c.srv.session(res.Session, c)
	if err != nil {
		return nil, err
	}
	fork.attach(c)
	out := rpc.SessionRewindResult{Session: fork.info(), TurnID: res.Turn, Prompt: res.Prompt, Restored: res.Restored,
		Skipped: []rpc.RevertSkip{}}
	for _, s := range res.Skipped {
		out.Skipped = append(out.Skipped, rpc.RevertSkip{Path: s.Path, Reason: s.Reason})
	}
	return out, nil
}
