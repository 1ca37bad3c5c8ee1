package rpc

// Reviews: the gate's questions to the editors, their decisions, hunk states and grant scopes.

import (
	"go.lsp.dev/protocol"
)

// ReviewRequestedParams announces a pending review (notification, server → client).
type ReviewRequestedParams struct {
	ReviewID  string `json:"reviewId"`
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
	CallID    string `json:"callId"`
	Tool      string `json:"tool"`
	Label     string `json:"label"`
	// Kind is "edit" (File set), "command" (Command set) or "tool" (another tool, e.g. a
	// sensitive read).
	Kind string `json:"kind"`
	// Why says why this asks: the approval mode, a protected path, a sensitive read.
	Why     string          `json:"why"`
	File    *FileReview     `json:"file,omitzero"`
	Command *CommandPreview `json:"command,omitzero"`
	// MCP is set for a call of an MCP server's tool (kind "tool"): the server, the tool and the
	// exact arguments the approval is bound to.
	MCP *MCPCall `json:"mcp,omitzero"`
	// Scopes are the "allow for this session" scopes the editor may offer.
	Scopes []GrantScope `json:"scopes"`
	// TimeoutMs is how long the daemon waits before rejecting (0: no timeout).
	TimeoutMs int64 `json:"timeoutMs,omitzero"`
	// HunkStates are the per-hunk decisions editors already made on this file review (hunk ID →
	// state; a hunk not listed is pending). Set in session/attach's pendingReviews and review/list.
	HunkStates map[string]HunkState `json:"hunkStates,omitzero"`
}

// FileReview is a proposed file change.
type FileReview struct {
	URI     string `json:"uri"`
	Path    string `json:"path"` // workspace-relative, for display
	Created bool   `json:"created,omitzero"`
	Deleted bool   `json:"deleted,omitzero"`
	// Version is the document version the change was computed against (open documents only).
	Version     int32    `json:"version,omitzero"`
	Hunks       []Hunk   `json:"hunks"`
	UnifiedDiff string   `json:"unifiedDiff"`
	Edit        FileEdit `json:"edit"`
}

// FileEdit is what applying every hunk would do, as LSP text edits against the current text.
type FileEdit struct {
	Edits []protocol.TextEdit `json:"edits"`
}

// Hunk is one change of a file. Lines are 1-based; Removed and Added hold whole lines without
// their terminators.
type Hunk struct {
	ID       string   `json:"id"`
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Removed  []string `json:"removed"`
	Added    []string `json:"added"`
}

// CommandPreview is the exact command a call would run.
type CommandPreview struct {
	Argv      []string `json:"argv"`
	Cwd       string   `json:"cwd"`
	TimeoutMs int64    `json:"timeoutMs"`
	Sandbox   string   `json:"sandbox"`
	Network   bool     `json:"network"`
}

// Grant scope kinds.
const (
	ScopeTool    = "tool"
	ScopeCommand = "command"
	ScopePath    = "path"
)

// GrantScope is what an "allow for this session" covers: a tool, a command prefix (parsed argv
// tokens) or a path prefix (workspace-relative, directory boundary aware).
type GrantScope struct {
	Kind          string   `json:"kind"`
	Tool          string   `json:"tool,omitzero"`
	CommandPrefix []string `json:"commandPrefix,omitzero"`
	PathPrefix    string   `json:"pathPrefix,omitzero"`
	// Label is how the editor shows the scope ("all edits under src/").
	Label string `json:"label,omitzero"`
}

// Decision types.
const (
	DecisionAccept           = "accept"
	DecisionAcceptForSession = "acceptForSession"
	DecisionReject           = "reject"
	DecisionCancelTurn       = "cancelTurn"
)

// ReviewDecideParams answers a review. The first attached editor to answer wins.
type ReviewDecideParams struct {
	ReviewID string   `json:"reviewId"`
	Decision Decision `json:"decision"`
}

// Decision is a closed set: accept (all hunks, or the listed ones, with an optional reason for
// the hunks left out), acceptForSession (with a scope from the review's Scopes), reject (with an
// optional reason), cancelTurn. A partial accept and a reject may also carry HunkReasons: the
// user's reason for each rejected hunk that has one (hunk ID → reason); a reason for a hunk the
// review does not have, or for an accepted hunk, is an error. Unknown fields and fields that do
// not belong to the type are errors. An accept of a file change may carry Content instead of hunks:
// the user's own version of the whole file (they edited the proposal before accepting); it is
// written in place of the proposal, and the model is told how it differs from what it proposed.
type Decision struct {
	Type        string            `json:"type"`
	Hunks       []string          `json:"hunks,omitzero"`
	Scope       *GrantScope       `json:"scope,omitzero"`
	Reason      string            `json:"reason,omitzero"`
	HunkReasons map[string]string `json:"hunkReasons,omitzero"`
	Content     *string           `json:"content,omitzero"`
}

type ReviewDecideResult struct {
	// Outcome is "accepted", "rejected" or "cancelled".
	Outcome string `json:"outcome"`
	// Settled lists other pending reviews the decision's grant also settled.
	Settled []string `json:"settled"`
}

type ReviewListParams struct {
	SessionID string `json:"sessionId"`
}

type ReviewListResult struct {
	Reviews []ReviewRequestedParams `json:"reviews"`
}

// ReviewResolvedParams tells editors a review is settled (notification, server → client).
type ReviewResolvedParams struct {
	ReviewID  string `json:"reviewId"`
	SessionID string `json:"sessionId"`
	// Outcome is "accepted", "rejected" or "cancelled".
	Outcome string `json:"outcome"`
	// By says who settled it: "editor" (an editor's decision), "grant" (a session grant),
	// "timeout", "disconnect" (no editor left), "turnEnded".
	By string `json:"by"`
	// Hunks are the accepted hunk IDs of an accepted edit.
	Hunks []string `json:"hunks,omitzero"`
	// HunkReasons are the final decision's reasons for rejected hunks (hunk ID → reason).
	HunkReasons map[string]string `json:"hunkReasons,omitzero"`
}

// Hunk decision states (HunkState.state).
const (
	HunkPending  = "pending"
	HunkAccepted = "accepted"
	HunkRejected = "rejected"
)

// HunkState is an editor's decision on one hunk before its file is settled. Reason goes only with
// "rejected"; "pending" undoes an earlier decision.
type HunkState struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitzero"`
}

// ReviewHunkStateParams changes the per-hunk decisions of a pending file review (the listed
// hunks only; the others keep their state). Unknown review or hunk, a review that is not a file
// change, an unknown state or a reason with a state other than "rejected" are invalid params;
// a settled review is CodeReviewResolved.
type ReviewHunkStateParams struct {
	ReviewID string               `json:"reviewId"`
	Hunks    map[string]HunkState `json:"hunks"`
}

// ReviewHunkStateResult is the review's per-hunk decisions after the change (a hunk not listed is
// pending).
type ReviewHunkStateResult struct {
	Hunks map[string]HunkState `json:"hunks"`
}

// ReviewHunkStatesParams tells an editor the per-hunk decisions of a pending review after another
// editor of the session changed them: every decided hunk (a hunk not listed is pending).
type ReviewHunkStatesParams struct {
	ReviewID  string               `json:"reviewId"`
	SessionID string               `json:"sessionId"`
	Hunks     map[string]HunkState `json:"hunks"`
}
