package rpc

// session/update: what a running session tells the attached editors.

import (
	"encoding/json"
)

// SessionUpdateParams is one update of a session (notification, server → client).
type SessionUpdateParams struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId,omitzero"`
	// Seq numbers the updates of a session from 1, so an editor can spot a gap.
	Seq    int64  `json:"seq"`
	Update Update `json:"update"`
}

// Update kinds.
const (
	UpdateTurnStarted       = "turnStarted"
	UpdateUserMessage       = "userMessage"
	UpdateTextDelta         = "textDelta"
	UpdateThinkingDelta     = "thinkingDelta"
	UpdateMessageCompleted  = "messageCompleted"
	UpdateToolCallStarted   = "toolCallStarted"
	UpdateToolCallUpdated   = "toolCallUpdated"
	UpdateToolCallCompleted = "toolCallCompleted"
	UpdateUsage             = "usage"
	UpdateCompaction        = "compaction"
	UpdateTurnCompleted     = "turnCompleted"
	UpdateTurnFailed        = "turnFailed"
)

// Update is a tagged union on Type. Text and thinking deltas may be coalesced under pressure; all
// other kinds are always delivered.
type Update struct {
	Type string `json:"type"`
	// Text is set for userMessage (the user's words, without the editor context the model
	// reads), textDelta, thinkingDelta and messageCompleted.
	Text string `json:"text,omitzero"`
	// Context, for userMessage, labels the editor context sent with the prompt, as in
	// HistoryItem.context ("cart.go", "cart.go:3-5", "@greet.go").
	Context []string `json:"context,omitzero"`
	// Thinking is the full thinking of a messageCompleted.
	Thinking   string          `json:"thinking,omitzero"`
	ToolCall   *ToolCallInfo   `json:"toolCall,omitzero"`
	Usage      *UsageInfo      `json:"usage,omitzero"`
	Compaction *CompactionInfo `json:"compaction,omitzero"`
	// Reason is set for turnCompleted ("done", "cancelled", "terminated", "steps_exhausted",
	// "time_exhausted", "blocked") and turnFailed ("error"): the Reason* constants.
	Reason string     `json:"reason,omitzero"`
	Error  *ErrorInfo `json:"error,omitzero"`
}

// ToolCallInfo describes a tool call at some point of its life.
type ToolCallInfo struct {
	CallID string `json:"callId"`
	Tool   string `json:"tool"`
	Label  string `json:"label,omitzero"`
	// Status: "pending" (validating), "awaitingApproval", "running", "completed", "failed".
	Status string `json:"status"`
	// Arguments are the arguments as the model sent them.
	Arguments json.RawMessage `json:"arguments,omitzero"`
	Activity  string          `json:"activity,omitzero"`
	// WaitsFor is set while a file change waits for an earlier call of the same reply that
	// changes the same file (its callId): it is previewed and reviewed once that one has ended,
	// against what it left (status stays "pending" until then).
	WaitsFor string       `json:"waitsFor,omitzero"`
	Preview  *PreviewInfo `json:"preview,omitzero"`
	// Progress is a running call's output: the latest chunk in a live update; in session/attach's
	// history, the output so far (its last 64 KiB, after a line saying how many bytes were cut).
	Progress string      `json:"progress,omitzero"`
	Result   *ResultInfo `json:"result,omitzero"`
	// MCP is set when the tool is an MCP server's: which server and which of its tools.
	MCP *MCPCall `json:"mcp,omitzero"`
}

// MCPCall names the MCP server and the tool on it that a call goes to (the model sees the tool as
// "server__tool"). In a review, Arguments are the exact arguments that will be sent (after
// validation and coercion, keys sorted); in a tool call they are absent (see ToolCallInfo.arguments).
type MCPCall struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitzero"`
}

// PreviewInfo is a call's preview: a summary plus the unified diff or the exact command.
type PreviewInfo struct {
	Summary     string          `json:"summary"`
	UnifiedDiff string          `json:"unifiedDiff,omitzero"`
	Command     *CommandPreview `json:"command,omitzero"`
}

// ResultInfo is a call's typed result.
type ResultInfo struct {
	Type      string `json:"type"` // ok, not_found, invalid_args, …
	IsError   bool   `json:"isError"`
	Text      string `json:"text"`
	ElapsedMs int64  `json:"elapsedMs"`
	Truncated bool   `json:"truncated,omitzero"`
	// Details is tool-specific structured data (exit code, applied hunks, …).
	Details json.RawMessage `json:"details,omitzero"`
	// Images are the images the result gave the model (not their data): editors show a
	// placeholder with the type and size.
	Images []ResultImage `json:"images,omitzero"`
}

// ResultImage is one image of a result.
type ResultImage struct {
	MIMEType string `json:"mimeType"`
	Bytes    int    `json:"bytes"`
}

type UsageInfo struct {
	PromptTokens int `json:"promptTokens"`
	OutputTokens int `json:"outputTokens"`
	// CachedTokens are the prompt tokens the server took from its prompt cache (OpenAI-compatible
	// servers report them; Ollama does not).
	CachedTokens   int   `json:"cachedTokens,omitzero"`
	PromptMs       int64 `json:"promptMs"`
	OutputMs       int64 `json:"outputMs"`
	LoadMs         int64 `json:"loadMs,omitzero"`
	ContextLength  int   `json:"contextLength"`
	ContextPercent int   `json:"contextPercent"`
}

type CompactionInfo struct {
	TokensBefore int    `json:"tokensBefore"`
	TokensAfter  int    `json:"tokensAfter"`
	Summary      string `json:"summary,omitzero"`
}

// ErrorInfo is a failure the user can act on.
type ErrorInfo struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitzero"`
}
