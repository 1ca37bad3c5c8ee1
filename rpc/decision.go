package rpc

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// DecodeDecide decodes review/decide params strictly: unknown fields anywhere, and fields that do
// not belong to the decision's type, are errors. A decision is never guessed.
func DecodeDecide(params json.RawMessage) (ReviewDecideParams, error) {
	var p ReviewDecideParams
	if err := DecodeStrict(params, &p); err != nil {
		return p, err
	}
	if p.ReviewID == "" {
		return p, Errorf(CodeInvalidParams, "invalid decision: reviewId is required")
	}
	if err := p.Decision.Validate(); err != nil {
		return p, Errorf(CodeInvalidParams, "invalid decision: %v", err)
	}
	return p, nil
}

// Validate checks that a decision is one of the closed set, with only the fields its type takes.
func (d Decision) Validate() error {
	switch d.Type {
	case DecisionAccept:
		if d.Scope != nil {
			return fmt.Errorf("accept takes only hunks and a reason")
		}
		if d.Reason != "" && d.Hunks == nil {
			return fmt.Errorf("a reason goes with a partial accept (hunks) or a reject")
		}
		if d.Hunks != nil && len(d.Hunks) == 0 {
			return fmt.Errorf("accept with an empty hunk list: use reject")
		}
		for i, h := range d.Hunks {
			if h == "" || slices.Contains(d.Hunks[:i], h) {
				return fmt.Errorf("hunk IDs must be non-empty and distinct")
			}
		}
		if d.HunkReasons != nil && d.Hunks == nil {
			return fmt.Errorf("an accept without hunks accepts every hunk: hunkReasons go with a partial accept (hunks) or a reject")
		}
		if d.Content != nil && d.Hunks != nil {
			return fmt.Errorf("content is the user's whole version of the file: it goes without hunks")
		}
		if err := d.validHunkReasons(); err != nil {
			return err
		}
	case DecisionAcceptForSession:
		if d.HunkReasons != nil || d.Content != nil {
			return fmt.Errorf("acceptForSession takes only a scope")
		}
		if d.Hunks != nil || d.Reason != "" {
			return fmt.Errorf("acceptForSession takes only a scope")
		}
		if d.Scope == nil {
			return fmt.Errorf("acceptForSession needs a scope")
		}
		return d.Scope.Validate()
	case DecisionReject:
		if d.Hunks != nil || d.Scope != nil || d.Content != nil {
			return fmt.Errorf("reject takes only a reason and hunkReasons")
		}
		if err := d.validHunkReasons(); err != nil {
			return err
		}
	case DecisionCancelTurn:
		if d.Hunks != nil || d.Scope != nil || d.Reason != "" || d.HunkReasons != nil || d.Content != nil {
			return fmt.Errorf("cancelTurn takes no other field")
		}
	case "":
		return fmt.Errorf("decision type is required")
	default:
		return fmt.Errorf("unknown decision type %q (want accept, acceptForSession, reject or cancelTurn)", d.Type)
	}
	return nil
}

// validHunkReasons checks the reasons per hunk a partial accept or a reject carries: each names a
// hunk (non-empty ID) that the decision does not accept, with a non-blank reason. Whether the
// review has that hunk is the daemon's check.
func (d Decision) validHunkReasons() error {
	if d.HunkReasons != nil && len(d.HunkReasons) == 0 {
		return fmt.Errorf("hunkReasons is empty: leave it out")
	}
	for _, id := range slices.Sorted(maps.Keys(d.HunkReasons)) {
		switch {
		case id == "":
			return fmt.Errorf("hunkReasons: hunk IDs must be non-empty")
		case strings.TrimSpace(d.HunkReasons[id]) == "":
			return fmt.Errorf("hunkReasons: the reason for hunk %q is blank: leave the hunk out", id)
		case slices.Contains(d.Hunks, id):
			return fmt.Errorf("hunkReasons: hunk %q is accepted: a reason goes with a rejected hunk", id)
		}
	}
	return nil
}

// Validate checks a grant scope.
func (s GrantScope) Validate() error {
	switch s.Kind {
	case ScopeTool:
		if s.Tool == "" || s.CommandPrefix != nil || s.PathPrefix != "" {
			return fmt.Errorf("a tool scope takes only a tool name")
		}
	case ScopeCommand:
		if len(s.CommandPrefix) == 0 || s.Tool != "" || s.PathPrefix != "" {
			return fmt.Errorf("a command scope takes only a non-empty commandPrefix")
		}
	case ScopePath:
		if s.PathPrefix == "" || s.Tool != "" || s.CommandPrefix != nil {
			return fmt.Errorf("a path scope takes only a pathPrefix")
		}
	default:
		return fmt.Errorf("unknown scope kind %q (want tool, command or path)", s.Kind)
	}
	return nil
}
