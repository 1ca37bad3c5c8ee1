package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentd/agentd/tools"
)

// Model is the one interface between the loop and a model adapter (packages ollama and openai
// implement it; tests fake it).
type Model interface {
	// Info describes the model: capabilities and trained context length. Called once per session.
	Info(ctx context.Context) (ModelInfo, error)
	// Chat sends one request and streams deltas to onDelta (called from Chat's goroutine, in order)
	// until the reply is complete. It returns a *ModelError for failures a user or the loop can act
	// on. A reply that ended without the model's end marker is an error, never a short success.
	Chat(ctx context.Context, req *ModelRequest, onDelta func(Delta)) (*ModelResponse, error)
}

// ModelInfo is what the loop needs to know about a model.
type ModelInfo struct {
	Name string
	// ContextLength is the trained maximum context, in tokens (0 when unknown).
	ContextLength int
	// Tools, Thinking and Vision are the model's capabilities.
	Tools, Thinking, Vision bool
}

// Role of a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation, in the model's terms.
type Message struct {
	Role     Role   `json:"role"`
	Content  string `json:"content,omitzero"`
	Thinking string `json:"thinking,omitzero"`
	// ToolCalls are the calls an assistant message made (natively or parsed from its text).
	ToolCalls []ToolCall `json:"toolCalls,omitzero"`
	// ToolCallID and ToolName identify the call a tool message answers.
	ToolCallID string `json:"toolCallId,omitzero"`
	ToolName   string `json:"toolName,omitzero"`
	// Images are raw image bytes attached to a user or tool message.
	Images [][]byte `json:"images,omitzero"`
	// Note marks a user-role message that agentd wrote to the model at the start of a turn
	// (SessionConfig.TurnNote), not the user's words: the model reads it as any user message,
	// the editors do not show it as the user's.
	Note bool `json:"note,omitzero"`
	// Kind marks the other messages agentd itself writes into the conversation ("" for the
	// user's words, the model's replies and tool results). Like Note, it is never sent to the
	// model (what the model reads is Role and Content, unchanged): it tells the editors and the
	// journal what a message is, so a nudge or a compaction's summary is never shown as the
	// user's words. Journals written before it existed are classified on replay (Replay).
	Kind MessageKind `json:"kind,omitzero"`
	// IsError and ErrorType are a tool message's typed result (tools.Result), kept for the
	// transcript: a tool failed when its result said so, never because of what its text says.
	// Like Kind, they are never sent to the model.
	IsError   bool             `json:"isError,omitzero"`
	ErrorType tools.ResultType `json:"errorType,omitzero"`
}

// MessageKind is the kind of a message agentd wrote on its own (Message.Kind).
type MessageKind string

const (
	// KindNudge is the loop's user-role message after an empty reply or one cut by length.
	KindNudge MessageKind = "nudge"
	// KindSummary is a compaction's summary of the earlier turns: the user-role message right
	// after the system prompt.
	KindSummary MessageKind = "summary"
	// KindSummaryReply is the assistant-role answer agentd puts after the summary.
	KindSummaryReply MessageKind = "summaryReply"
)

// FromAgentd reports whether agentd wrote the message on its own (a note, a nudge, a compaction's
// summary or its answer): never the user's words nor the model's.
func (m *Message) FromAgentd() bool { return m.Note || m.Kind != "" }

// ToolCall is one call the model proposed.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments are the arguments as the model sent them (normally a JSON object).
	Arguments json.RawMessage `json:"arguments"`
}

// ModelRequest is one chat request.
type ModelRequest struct {
	Messages []Message
	// Tools is the tool list; nil when the model cannot take native tools.
	Tools []tools.Definition
	// Think turns the model's thinking on (only for models that have it).
	Think bool
	// NumCtx is the context window, chosen once per session and kept stable.
	NumCtx int
	// NumPredict caps the reply, in tokens.
	NumPredict int
}

// Delta is a piece of a streamed reply.
type Delta struct {
	Text     string
	Thinking string
}

// ModelResponse is a complete reply.
type ModelResponse struct {
	// Message is the assistant message: content, thinking and native tool calls.
	Message Message
	// DoneReason is the model's reason to stop: "stop", or "length" when the reply was cut.
	DoneReason string
	Usage      Usage
}

// Usage reports the cost of one model call, as the server measured it.
type Usage struct {
	PromptTokens int `json:"promptTokens"`
	OutputTokens int `json:"outputTokens"`
	// CachedTokens are the prompt tokens the server took from its prompt cache instead of
	// reading them (OpenAI-compatible servers say it; Ollama does not).
	CachedTokens   int           `json:"cachedTokens,omitzero"`
	PromptDuration time.Duration `json:"promptDurationNs"`
	OutputDuration time.Duration `json:"outputDurationNs"`
	LoadDuration   time.Duration `json:"loadDurationNs"`
	TotalDuration  time.Duration `json:"totalDurationNs"`
}

// ModelErrorKind classifies model failures by what the user or the loop can do about them.
type ModelErrorKind string

const (
	ErrModelNotFound    ModelErrorKind = "model_not_found"  // not pulled: run `ollama pull`
	ErrServerNotRunning ModelErrorKind = "server_down"      // connection refused: start the server
	ErrServerBusy       ModelErrorKind = "server_busy"      // 503 after retries
	ErrNoToolSupport    ModelErrorKind = "no_tool_support"  // 400: fall back to text tool calls
	ErrNoThinking       ModelErrorKind = "no_thinking"      // 400: thinking not supported
	ErrLoadFailed       ModelErrorKind = "load_failed"      // 500 from the runner
	ErrContextOverflow  ModelErrorKind = "context_overflow" // the prompt does not fit num_ctx
	ErrStreamBroken     ModelErrorKind = "stream_broken"    // no done marker, or an error line mid-stream
	ErrBadToolCall      ModelErrorKind = "bad_tool_call"    // the model's tool call could not be read (Raw)
	ErrBadRequest       ModelErrorKind = "bad_request"      // any other 4xx
	ErrServer           ModelErrorKind = "server_error"     // any other failure
)

// ModelError is a model failure with a message for the user and, where there is one, a fix.
type ModelError struct {
	Kind    ModelErrorKind
	Status  int    // HTTP status, 0 if none
	Message string // what the server said
	Fix     string // what the user can do ("run `ollama pull qwen3:8b`")
	// Raw is, for ErrBadToolCall, what the model wrote that could not be read as a tool call.
	Raw string
	Err error // the underlying error, if any
}

func (e *ModelError) Error() string {
	s := fmt.Sprintf("%s: %s", e.Kind, e.Message)
	if e.Fix != "" {
		s += " (" + e.Fix + ")"
	}
	return s
}

func (e *ModelError) Unwrap() error { return e.Err }
