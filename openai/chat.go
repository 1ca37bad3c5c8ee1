package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools"
)

// chatRequest is the body of POST /chat/completions. Field order and content are a function of
// the conversation only (see the package invariant).
type chatRequest struct {
	Model string `json:"model"`
	// Tools come before the messages: the body itself then starts with the same bytes in every
	// request of every session with the same tools.
	Tools         []wireTool    `json:"tools,omitempty"`
	Messages      []wireMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions streamOptions `json:"stream_options"`
	MaxTokens     int           `json:"max_tokens,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is a string, or content parts when the message carries images.
	Content    any            `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // always "function": llama-server refuses a call without it
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name string `json:"name"`
	// Arguments is a JSON text in a string, as the API has it.
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string  `json:"type"`
	Function toolDef `json:"function"`
}

type toolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Chat sends one streaming chat request and assembles the reply. Deltas go to onDelta (may be
// nil) from the calling goroutine, in arrival order.
//
// Errors: a *agent.ModelError for every failure of the server or the stream; the context's
// error, wrapped, when ctx ended first. A 503 is retried before any delta was sent.
func (c *Client) Chat(ctx context.Context, req *agent.ModelRequest, onDelta func(agent.Delta)) (*agent.ModelResponse, error) {
	if req == nil {
		return nil, &agent.ModelError{Kind: agent.ErrBadRequest, Message: "nil request"}
	}
	body, err := json.Marshal(c.buildRequest(req))
	if err != nil {
		return nil, &agent.ModelError{Kind: agent.ErrBadRequest, Message: err.Error(), Err: err}
	}
	if onDelta == nil {
		onDelta = func(agent.Delta) {}
	}
	var resp *agent.ModelResponse
	err = c.withRetry(ctx, func(ctx context.Context) error {
		r, err := c.chatOnce(ctx, body, onDelta)
		resp = r
		return err
	})
	return resp, err
}

// buildRequest maps a ModelRequest to the wire. NumCtx is not sent: the window is the server's.
func (c *Client) buildRequest(req *agent.ModelRequest) *chatRequest {
	cr := &chatRequest{Model: c.Model(), Messages: toWire(req.Messages), Stream: true,
		StreamOptions: streamOptions{IncludeUsage: true}, MaxTokens: max(req.NumPredict, 0)}
	for _, d := range req.Tools {
		cr.Tools = append(cr.Tools, toWireTool(d))
	}
	return cr
}

func toWireTool(d tools.Definition) wireTool {
	params := d.Parameters
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return wireTool{Type: "function", Function: toolDef{Name: d.Name, Description: d.Description, Parameters: params}}
}

// toWire maps the conversation. Thinking is not sent back (the templates drop it anyway, and
// leaving it out keeps the prefix the same whether the server returned it or not).
func toWire(msgs []agent.Message) []wireMessage {
	out := make([]wireMessage, 0, len(msgs))
	for _, m := range msgs {
		wm := wireMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		if len(m.Images) > 0 {
			parts := []contentPart{{Type: "text", Text: m.Content}}
			for _, img := range m.Images {
				parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{
					URL: "data:" + http.DetectContentType(img) + ";base64," + base64.StdEncoding.EncodeToString(img)}})
			}
			wm.Content = parts
		}
		for _, tc := range m.ToolCalls {
			wm.ToolCalls = append(wm.ToolCalls, wireToolCall{ID: tc.ID, Type: "function",
				Function: wireFunction{Name: tc.Name, Arguments: argumentsText(tc.Arguments)}})
		}
		out = append(out, wm)
	}
	return out
}

// argumentsText is the string the API carries for a call's arguments: the model's own text.
// Arguments that were not JSON were kept as a JSON string (see callArguments): that string is
// the text.
func argumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	if len(raw) == 0 {
		return "{}"
	}
	return string(raw)
}

// callArguments keeps what the model streamed: its bytes when they are JSON, else the text as
// a JSON string, which the kernel refuses with a message the model can act on.
func callArguments(text string) json.RawMessage {
	if strings.TrimSpace(text) == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	b, _ := json.Marshal(text)
	return b
}

// chunk is one streamed event. Servers add fields: reasoning_content (llama-server, DeepSeek)
// or reasoning (vLLM) for thinking, timings (llama-server) with the cached prompt tokens.
type chunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ToolCalls        []toolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Timings *struct {
		CacheN      int     `json:"cache_n"`
		PromptN     int     `json:"prompt_n"`
		PromptMs    float64 `json:"prompt_ms"`
		PredictedN  int     `json:"predicted_n"`
		PredictedMs float64 `json:"predicted_ms"`
	} `json:"timings"`
	Error json.RawMessage `json:"error"`
}

// toolCallDelta is a piece of a call: the first of a call carries its id, type and name, later
// ones append to the arguments, which arrive cut anywhere: inside the model's own escapes, inside
// a UTF-8 sequence, between the two halves of a \u surrogate pair. So each piece is kept as the
// raw text of its JSON string, and the joined text is decoded once, at the end.
type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// escapedPiece is the inside of a JSON string literal as sent; a server that sent the
// arguments as an object instead gets that object's text, escaped.
func escapedPiece(raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		return raw[1 : len(raw)-1]
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	b, _ := json.Marshal(string(raw))
	return b[1 : len(b)-1]
}

// decodePieces decodes the joined inside of a JSON string literal.
func decodePieces(escaped []byte) string {
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, escaped...), '"'), &s) != nil {
		return string(escaped)
	}
	return s
}

// assembly accumulates a streamed reply.
type assembly struct {
	onDelta  func(agent.Delta)
	content  strings.Builder
	thinking strings.Builder
	calls    []*partialCall
	finish   string // finish_reason, "" until it arrived
	usage    agent.Usage
}

type partialCall struct {
	index    int
	id, name string
	args     []byte // the raw inside of the arguments' JSON strings, joined
}

// call finds the call a delta continues: by index, or, from servers that send none, by id (a
// new id starts a new call, no id continues the last one).
func (a *assembly) call(d toolCallDelta) *partialCall {
	if d.Index != nil {
		for _, p := range a.calls {
			if p.index == *d.Index {
				return p
			}
		}
		p := &partialCall{index: *d.Index}
		a.calls = append(a.calls, p)
		return p
	}
	if n := len(a.calls); n > 0 && (d.ID == "" || d.ID == a.calls[n-1].id) {
		return a.calls[n-1]
	}
	p := &partialCall{index: len(a.calls)}
	a.calls = append(a.calls, p)
	return p
}

func (a *assembly) add(ch *chunk) {
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue // one choice is asked for
		}
		d := choice.Delta
		if t := d.ReasoningContent + d.Reasoning; t != "" {
			a.thinking.WriteString(t)
			a.onDelta(agent.Delta{Thinking: t})
		}
		if d.Content != "" {
			a.content.WriteString(d.Content)
			a.onDelta(agent.Delta{Text: d.Content})
		}
		// vLLM can put a call's last arguments in the chunk that carries finish_reason: the
		// delta is applied first.
		for _, tc := range d.ToolCalls {
			p := a.call(tc)
			if tc.ID != "" {
				p.id = tc.ID
			}
			if tc.Function.Name != "" {
				p.name = tc.Function.Name
			}
			p.args = append(p.args, escapedPiece(tc.Function.Arguments)...)
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			a.finish = *choice.FinishReason
		}
	}
	if u := ch.Usage; u != nil {
		a.usage.PromptTokens, a.usage.OutputTokens = u.PromptTokens, u.CompletionTokens
		if u.PromptTokensDetails != nil {
			a.usage.CachedTokens = u.PromptTokensDetails.CachedTokens
		}
	}
	if t := ch.Timings; t != nil {
		a.usage.CachedTokens = t.CacheN
		a.usage.PromptDuration = time.Duration(t.PromptMs * float64(time.Millisecond))
		a.usage.OutputDuration = time.Duration(t.PredictedMs * float64(time.Millisecond))
		a.usage.TotalDuration = a.usage.PromptDuration + a.usage.OutputDuration
		if a.usage.PromptTokens == 0 {
			a.usage.PromptTokens, a.usage.OutputTokens = t.PromptN+t.CacheN, t.PredictedN
		}
	}
}

func (a *assembly) response() *agent.ModelResponse {
	slices.SortStableFunc(a.calls, func(x, y *partialCall) int { return x.index - y.index })
	var calls []agent.ToolCall
	for i, p := range a.calls {
		id := p.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		calls = append(calls, agent.ToolCall{ID: id, Name: p.name, Arguments: callArguments(decodePieces(p.args))})
	}
	reason := "stop"
	if a.finish == "length" {
		reason = "length"
	}
	return &agent.ModelResponse{
		Message: agent.Message{Role: agent.RoleAssistant, Content: a.content.String(),
			Thinking: a.thinking.String(), ToolCalls: calls},
		DoneReason: reason,
		Usage:      a.usage,
	}
}

func (c *Client) chatOnce(ctx context.Context, body []byte, onDelta func(agent.Delta)) (*agent.ModelResponse, error) {
	req, err := c.newRequest(ctx, http.MethodPost, c.endpoint(c.base, "/chat/completions"), body)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.fail(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if ctx.Err() != nil {
			return nil, ctxError(ctx)
		}
		return nil, c.statusError(resp.StatusCode, b)
	}
	a := &assembly{onDelta: onDelta}
	err = readEvents(resp.Body, func(data []byte) (bool, error) {
		if string(data) == "[DONE]" {
			return true, nil
		}
		var ch chunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return false, &agent.ModelError{Kind: agent.ErrStreamBroken, Status: resp.StatusCode, Err: err,
				Message: fmt.Sprintf("%s sent an event that is not JSON: %v", c.base, err),
				Fix:     "check engine-url: it should be an OpenAI-compatible API"}
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return false, c.streamError(data)
		}
		a.add(&ch)
		return false, nil
	})
	if ctx.Err() != nil {
		return nil, ctxError(ctx)
	}
	if err != nil && a.finish == "" {
		if _, ok := err.(*agent.ModelError); ok {
			return nil, err
		}
		return nil, &agent.ModelError{Kind: agent.ErrStreamBroken, Status: resp.StatusCode, Err: err,
			Message: fmt.Sprintf("the reply from %s broke off: %v", c.base, err),
			Fix:     "retry; if it happens again, see the server's log"}
	}
	if a.finish == "" {
		return nil, &agent.ModelError{Kind: agent.ErrStreamBroken, Status: resp.StatusCode,
			Message: fmt.Sprintf("the reply from %s ended without a finish reason", c.base),
			Fix:     "retry; if it happens again, see the server's log (the server may have crashed)"}
	}
	// After finish_reason only usage can follow: a stream cut there lost nothing of the reply.
	return a.response(), nil
}

// streamError classifies an error event inside a 200 stream.
func (c *Client) streamError(data []byte) *agent.ModelError {
	msg, typ := parseErrorBody(data)
	if isOverflow(typ, strings.ToLower(msg)) {
		return &agent.ModelError{Kind: agent.ErrContextOverflow, Status: http.StatusOK, Message: msg, Fix: c.overflowFix()}
	}
	return &agent.ModelError{Kind: agent.ErrStreamBroken, Status: http.StatusOK, Message: msg,
		Fix: "retry; if it happens again, see the server's log"}
}

// readEvents reads server-sent events and calls onData with each event's data (its data lines
// joined by newlines) until onData says stop, fails, or the body ends. Lines are read whole,
// however TCP cut them; comments, event names and ids are skipped.
func readEvents(r io.Reader, onData func([]byte) (stop bool, err error)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	have := false
	flush := func() (bool, error) {
		if !have {
			return false, nil
		}
		d := data
		data, have = nil, false
		return onData(d)
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0:
				if stop, ferr := flush(); stop || ferr != nil {
					return ferr
				}
			case bytes.HasPrefix(line, []byte("data:")):
				v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
				if have {
					data = append(data, '\n')
				}
				data, have = append(data, v...), true
			}
		}
		if err == io.EOF {
			_, ferr := flush()
			return ferr
		}
		if err != nil {
			return err
		}
	}
}
