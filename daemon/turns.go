package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/rpc"
)

// A turn's changes after the fact: turn/list, turn/changes and turn/undo over the session's
// checkpoints (harness/turns.go).

func (c *client) turnList(params []byte) (any, error) {
	var p rpc.TurnListParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	turns, err := ls.h.Turns()
	if err != nil {
		return nil, err
	}
	out := rpc.TurnListResult{Turns: []rpc.TurnSummary{}}
	for _, t := range turns {
		out.Turns = append(out.Turns, rpc.TurnSummary{TurnID: t.ID, Prompt: t.Prompt,
			CreatedAt: t.Created.UTC().Format(time.RFC3339), Files: t.Files, Reverted: t.Reverted})
	}
	return out, nil
}

func (c *client) turnChanges(params []byte) (any, error) {
	var p rpc.TurnChangesParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	turn, files, err := ls.h.TurnChanges(p.TurnID)
	if err != nil {
		return nil, turnError(err)
	}
	out := rpc.TurnChangesResult{TurnID: turn, Files: []rpc.TurnChange{}}
	for _, f := range files {
		tc := rpc.TurnChange{Path: f.Rel, URI: fileURI(f.Abs), Status: f.Status, Diff: f.Diff.Unified(3),
			Hunks: []rpc.TurnHunk{}, ChangedSince: f.ChangedSince, Reason: f.Reason}
		for _, h := range f.Diff.Hunks {
			tc.Hunks = append(tc.Hunks, rpc.TurnHunk{ID: h.ID, Header: hunkHeader(h.OldStart, h.OldLines, h.NewStart, h.NewLines),
				OldStart: h.OldStart, OldLines: h.OldLines, NewStart: h.NewStart, NewLines: h.NewLines})
		}
		out.Files = append(out.Files, tc)
	}
	return out, nil
}

// hunkHeader is a hunk's unified-diff header without context: "@@ -3,2 +3,4 @@" (a start of 0
// for an empty side, as diff -U0 writes it).
func hunkHeader(os, ol, ns, nl int) string {
	if ol == 0 {
		os--
	}
	if nl == 0 {
		ns--
	}
	return fmt.Sprintf("@@ -%d,%d +%d,%d @@", os, ol, ns, nl)
}

func (c *client) turnUndo(ctx context.Context, params []byte) (any, error) {
	var p rpc.TurnUndoParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	ls, err := c.attachedSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	if p.TurnID == "" {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "turnId is required (turn/changes names the turn)")
	}
	if ls.h.Running() != "" {
		return nil, rpc.Errorf(rpc.CodeTurnRunning, "a turn is running: cancel it or wait before undoing")
	}
	var files []string
	for _, u := range p.Files {
		path, ok := fileURIPath(u)
		if !ok {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "files: %q is not a file: URI", u)
		}
		files = append(files, path)
	}
	hunks := map[string][]string{}
	for u, ids := range p.Hunks {
		path, ok := fileURIPath(u)
		if !ok {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "hunks: %q is not a file: URI", u)
		}
		hunks[path] = append(hunks[path], ids...)
	}
	res, err := ls.h.UndoTurn(ctx, p.TurnID, files, hunks)
	if err != nil {
		return nil, turnError(err)
	}
	out := rpc.TurnUndoResult{Undone: res.Undone, Skipped: []rpc.RevertSkip{}}
	for _, s := range res.Skipped {
		out.Skipped = append(out.Skipped, rpc.RevertSkip{Path: s.Path, Reason: s.Reason})
	}
	return out, nil
}

// turnError maps the harness's unknown turn/file/hunk errors to invalid params.
func turnError(err error) error {
	if errors.Is(err, harness.ErrUnknownTurn) || errors.Is(err, harness.ErrUnknownFile) || errors.Is(err, harness.ErrUnknownHunk) {
		return rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
	}
	return err
}
