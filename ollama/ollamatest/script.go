package ollamatest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
)

// Script is a whole scenario: the models the server knows and the chat turns it answers. It is the
// JSON format of cmd/fakeollama (see its README.md); Go tests can build one directly.
type Script struct {
	// Version is what /api/version answers; empty means "0.17.4".
	Version string `json:"version,omitzero"`
	// Models are the installed models. When there are none, every model name exists and accepts
	// every request (/api/show reports the defaults of Model). When there are some, the server checks
	// like a real one: another name gets a 404, tools sent to a model without the "tools" capability
	// a 400, think:true to one without "thinking" a 400.
	Models []Model `json:"models,omitzero"`
	// Turns answer chat requests. Each request takes the first turn, in order, that is not used up
	// and whose When matches; a turn is used up once it answered, unless Repeat is set.
	Turns []Turn `json:"turns,omitzero"`
	// Generates answer /api/generate requests (inline completion) the same way.
	Generates []GenerateTurn `json:"generates,omitzero"`
	// GPUMemory is the GPU memory a loaded model may use, in bytes; 0: no GPU (every model runs on
	// the CPU, /api/ps reports size_vram 0). See Model.Weights.
	GPUMemory int64 `json:"gpuMemory,omitzero"`
}

// Model is an installed model.
type Model struct {
	Name string `json:"name"`
	// Capabilities as /api/show lists them; empty means ["completion", "tools"].
	Capabilities []string `json:"capabilities,omitzero"`
	// ContextLength is the trained context length; 0 means 32768.
	ContextLength int `json:"contextLength,omitzero"`
	// Architecture names the model_info keys ("qwen3.context_length"); empty means "qwen3".
	Architecture string `json:"architecture,omitzero"`
	// ParameterSize and Quantization fill the details; empty means "8.2B" and "Q4_K_M".
	ParameterSize string `json:"parameterSize,omitzero"`
	Quantization  string `json:"quantization,omitzero"`
	// Weights and KVPerToken size a loaded model as /api/ps reports it: weights plus KVPerToken
	// bytes a token of its window (num_ctx), of which the GPU holds at most Script.GPUMemory.
	// 0 means 5,200,000,000 bytes and 147,456 bytes a token (qwen3:8b at Q4_K_M: 36 layers, 8 KV
	// heads of 128, f16).
	Weights    int64 `json:"weights,omitzero"`
	KVPerToken int64 `json:"kvPerToken,omitzero"`
	// PromptRate and EvalRate (tokens a second) set the durations of the done chunk's metrics;
	// 0 keeps fixed durations (2 ms for the prompt, 3 ms for the output).
	PromptRate float64 `json:"promptRate,omitzero"`
	EvalRate   float64 `json:"evalRate,omitzero"`
}

// size is what a loaded model takes with a window of numCtx tokens.
func (m Model) size(numCtx int) int64 {
	w, kv := m.Weights, m.KVPerToken
	if w == 0 {
		w = 5_200_000_000
	}
	if kv == 0 {
		kv = 147_456
	}
	return w + kv*int64(numCtx)
}

// Turn is one scripted answer and the requests it may answer.
type Turn struct {
	// Name labels the turn in logs and mismatch reports.
	Name string `json:"name,omitzero"`
	// When restricts the requests this turn answers; nil answers any request.
	When *Match `json:"when,omitzero"`
	// Repeat keeps the turn after it answered (a fallback for every matching request).
	Repeat bool  `json:"repeat,omitzero"`
	Reply  Reply `json:"reply"`
}

// Match selects requests. Every field that is set must hold.
type Match struct {
	// Model is the requested model name (":latest" is implied as by Ollama).
	Model string `json:"model,omitzero"`
	// LastUserContains: the last message with role "user" contains this text.
	LastUserContains string `json:"lastUserContains,omitzero"`
	// LastRole is the role of the last message ("user", "tool", …).
	LastRole string `json:"lastRole,omitzero"`
	// LastContains: the last message, of any role, contains this text.
	LastContains string `json:"lastContains,omitzero"`
	// HasTools: the request offers tools (true) or none (false).
	HasTools *bool `json:"hasTools,omitzero"`
	// Think: the request's think flag is true (true) or false or absent (false).
	Think *bool `json:"think,omitzero"`
	// Func, Go only, is one more condition.
	Func func(*api.ChatRequest) bool `json:"-"`
}

// Reply is what the server sends for one chat request.
//
// An HTTP error (Status >= 400) sends {"error": Error} (or nothing with EmptyBody) and nothing else.
// Otherwise the stream is: the Thinking, Text and ToolCalls shorthands (in that order), then Chunks,
// then the end: an {"error": Error} line when Error is set; nothing when NoDone; a cut connection when
// Abort; a stream kept open until the client leaves when Hang; else the done chunk.
type Reply struct {
	// Status is the HTTP status; 0 means 200.
	Status int `json:"status,omitzero"`
	// Error is the error message: the body of an HTTP error, or an error line ending a 200 stream.
	Error string `json:"error,omitzero"`
	// EmptyBody sends an HTTP error without a body.
	EmptyBody bool `json:"emptyBody,omitzero"`
	// Delay comes before the response headers (a model load, a long prompt evaluation).
	Delay Duration `json:"delay,omitzero"`
	// ChunkDelay comes before each chunk after the first.
	ChunkDelay Duration `json:"chunkDelay,omitzero"`

	// Thinking and Text are split into token-like chunks at spaces.
	Thinking string `json:"thinking,omitzero"`
	Text     string `json:"text,omitzero"`
	// ToolCalls are native tool calls, each in its own chunk with an id and an index.
	ToolCalls []ToolCall `json:"toolCalls,omitzero"`
	// Chunks are sent as given, after the shorthands.
	Chunks []Chunk `json:"chunks,omitzero"`

	// DoneReason of the done chunk; empty means "stop".
	DoneReason string `json:"doneReason,omitzero"`
	NoDone     bool   `json:"noDone,omitzero"`
	Abort      bool   `json:"abort,omitzero"`
	Hang       bool   `json:"hang,omitzero"`

	// PromptEvalCount and EvalCount go in the done chunk; 0 means an estimate from the request and
	// the number of chunks.
	PromptEvalCount int `json:"promptEvalCount,omitzero"`
	EvalCount       int `json:"evalCount,omitzero"`
	// FillContext reports prompt_eval_count = the request's num_ctx: what a silently truncated
	// prompt looks like.
	FillContext bool `json:"fillContext,omitzero"`
}

// Chunk is one streamed line's message.
type Chunk struct {
	Content  string `json:"content,omitzero"`
	Thinking string `json:"thinking,omitzero"`
	// ToolCalls are sent each in its own line, as Ollama does.
	ToolCalls []ToolCall `json:"toolCalls,omitzero"`
}

// ToolCall is a native tool call.
type ToolCall struct {
	// ID is the call id; empty means a generated "call_xxxxxxxx".
	ID   string `json:"id,omitzero"`
	Name string `json:"name"`
	// Arguments is a JSON object; empty means {}.
	Arguments json.RawMessage `json:"arguments,omitzero"`
}

// Duration is a time.Duration that reads from JSON as a number of milliseconds or a Go duration
// string ("1.5s", "250ms").
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case float64:
		*d = Duration(x * float64(time.Millisecond))
	case string:
		p, err := time.ParseDuration(x)
		if err != nil {
			return err
		}
		*d = Duration(p)
	default:
		return fmt.Errorf("duration: want milliseconds or a string like \"250ms\", got %s", b)
	}
	return nil
}

// ParseScript reads a JSON script. Unknown fields are errors, so a typo does not silently change a
// scenario.
func ParseScript(data []byte) (*Script, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("ollamatest: script: %w", err)
	}
	if dec.More() {
		return nil, errors.New("ollamatest: script: trailing data after the JSON object")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// LoadScript reads a JSON script file.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ollamatest: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Validate checks the tool-call arguments and the statuses of the script.
func (s *Script) Validate() error {
	for i, m := range s.Models {
		if strings.TrimSpace(m.Name) == "" {
			return fmt.Errorf("ollamatest: models[%d]: empty name", i)
		}
	}
	for i, t := range s.Turns {
		if err := t.Reply.validate(); err != nil {
			return fmt.Errorf("ollamatest: turns[%d] %s: %w", i, t.Name, err)
		}
	}
	for i, t := range s.Generates {
		if err := t.Reply.validate(); err != nil {
			return fmt.Errorf("ollamatest: generates[%d] %s: %w", i, t.Name, err)
		}
	}
	return nil
}

func (r *Reply) validate() error {
	if r.Status != 0 && (r.Status < 100 || r.Status > 599) {
		return fmt.Errorf("status %d", r.Status)
	}
	check := func(calls []ToolCall) error {
		for _, c := range calls {
			if _, err := c.arguments(); err != nil {
				return fmt.Errorf("tool call %q: %w", c.Name, err)
			}
		}
		return nil
	}
	if err := check(r.ToolCalls); err != nil {
		return err
	}
	for _, ch := range r.Chunks {
		if err := check(ch.ToolCalls); err != nil {
			return err
		}
	}
	return nil
}

func (c ToolCall) arguments() (api.ToolCallFunctionArguments, error) {
	args := api.NewToolCallFunctionArguments()
	raw := bytes.TrimSpace(c.Arguments)
	if len(raw) == 0 {
		return args, nil
	}
	if raw[0] != '{' {
		return args, fmt.Errorf("arguments must be a JSON object, got %s", raw)
	}
	if err := args.UnmarshalJSON(raw); err != nil {
		return args, fmt.Errorf("arguments: %w", err)
	}
	return args, nil
}

// Text is a reply streaming text, split into token-like chunks.
func Text(s string) Reply { return Reply{Text: s} }

// Thinking is a reply streaming thinking, then text.
func Thinking(thinking, text string) Reply { return Reply{Thinking: thinking, Text: text} }

// Calls is a reply of native tool calls.
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Call is a native tool call; argsJSON is a JSON object ("" means {}).
func Call(name, argsJSON string) ToolCall {
	return ToolCall{Name: name, Arguments: json.RawMessage(argsJSON)}
}

// HTTPError is a reply with an error status and body {"error": msg}.
func HTTPError(status int, msg string) Reply { return Reply{Status: status, Error: msg} }

// Busy is Ollama's answer when its queue is full.
func Busy() Reply {
	return HTTPError(503, "server busy, please try again.  maximum pending requests exceeded")
}

// Bool returns a pointer to b, for Match.HasTools and Match.Think.
func Bool(b bool) *bool { return &b }

// splitTokens cuts s into token-like pieces: each piece is a run of spaces followed by a run of
// non-spaces ("Hello world" → "Hello", " world").
func splitTokens(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if isSpace(s[i]) && !isSpace(s[i-1]) {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// callID makes the n-th generated call id: "call_" and 8 base-36 digits, like Ollama's.
func callID(n int) string {
	s := strconv.FormatInt(int64(n), 36)
	if len(s) < 8 {
		s = strings.Repeat("0", 8-len(s)) + s
	}
	return "call_" + s
}
