package ollama

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentd/agentd/agent"
	"github.com/ollama/ollama/api"
)

// Chat sends one streaming /api/chat request and assembles the reply. Deltas go to onDelta (may be
// nil) from the calling goroutine, thinking and text as separate deltas, in arrival order.
//
// Errors: a *agent.ModelError for every failure of the server or the stream; the context's error,
// wrapped, when ctx ended first. A 503 is retried per the RetryPolicy (before any delta was sent).
func (c *Client) Chat(ctx context.Context, req *agent.ModelRequest, onDelta func(agent.Delta)) (*agent.ModelResponse, error) {
	if err := c.needModel(); err != nil {
		return nil, err
	}
	areq, err := c.buildRequest(req)
	if err != nil {
		return nil, err
	}
	if onDelta == nil {
		onDelta = func(agent.Delta) {}
	}
	c.chatStarted(req.NumCtx)
	defer c.chatEnded()
	var resp *agent.ModelResponse
	err = c.withRetry(ctx, func(ctx context.Context) error {
		r, err := c.chatOnce(ctx, areq, req.NumCtx, onDelta)
		resp = r
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// buildRequest maps a ModelRequest to the wire request. See the package invariants.
func (c *Client) buildRequest(req *agent.ModelRequest) (*api.ChatRequest, error) {
	if req == nil {
		return nil, &agent.ModelError{Kind: agent.ErrBadRequest, Message: "nil request"}
	}
	if req.NumCtx <= 0 {
		// Leaving num_ctx out would load the model with the server's default window (often 4096)
		// and reload it when a later request sets one.
		return nil, &agent.ModelError{Kind: agent.ErrBadRequest, Message: fmt.Sprintf("num_ctx must be positive, got %d", req.NumCtx), Fix: "size it once per session with ollama.ChooseNumCtx"}
	}
	numPredict := req.NumPredict
	if numPredict <= 0 {
		numPredict = -1 // explicitly unlimited; shift:false still ends the reply at num_ctx
	}
	no := false
	areq := &api.ChatRequest{
		Model:    c.model,
		Messages: toAPIMessages(req.Messages, &c.args),
		Options: map[string]any{
			"num_ctx":     req.NumCtx,
			"num_predict": numPredict,
		},
		// Thinking is on by default on thinking models when think is left out: always say it.
		Think: &api.ThinkValue{Value: req.Think},
		// Overflow is an HTTP 400, never a prompt cut in the middle.
		Truncate: &no,
		// A reply that fills the window ends with done_reason "length" instead of the server
		// discarding the start of the context to go on.
		Shift: &no,
	}
	if req.Tools != nil {
		ts, err := toAPITools(req.Tools)
		if err != nil {
			return nil, &agent.ModelError{Kind: agent.ErrBadRequest, Message: err.Error(), Err: err}
		}
		areq.Tools = ts
	}
	if c.keepAlive != nil {
		areq.KeepAlive = &api.Duration{Duration: *c.keepAlive}
	}
	return areq, nil
}

// assembly accumulates a streamed reply.
type assembly struct {
	onDelta  func(agent.Delta)
	content  strings.Builder
	thinking strings.Builder
	calls    []agent.ToolCall
	done     bool
	reason   string
	metrics  api.Metrics
}

func (a *assembly) add(r api.ChatResponse) error {
	if a.done {
		return nil // nothing follows a done chunk; ignore it if something does
	}
	if t := r.Message.Thinking; t != "" {
		a.thinking.WriteString(t)
		a.onDelta(agent.Delta{Thinking: t})
	}
	if t := r.Message.Content; t != "" {
		a.content.WriteString(t)
		a.onDelta(agent.Delta{Text: t})
	}
	for _, tc := range r.Message.ToolCalls {
		call, err := fromAPIToolCall(tc, len(a.calls))
		if err != nil {
			return err
		}
		a.calls = append(a.calls, call)
	}
	if r.Done {
		a.done = true
		a.reason = r.DoneReason
		a.metrics = r.Metrics
	}
	return nil
}

func (c *Client) chatOnce(ctx context.Context, areq *api.ChatRequest, numCtx int, onDelta func(agent.Delta)) (*agent.ModelResponse, error) {
	ctx, ex := withExchange(ctx)
	a := &assembly{onDelta: onDelta}
	err := c.api.Chat(ctx, areq, a.add)
	if err == nil && a.done {
		return c.finish(a, numCtx)
	}
	// Cancelled, timed out, or broken. A cancelled context can end Chat with a nil error and no
	// done chunk, so the context is checked first.
	if ctx.Err() != nil {
		return nil, ctxError(ctx)
	}
	if err != nil {
		return nil, c.classify(err, ex.Status())
	}
	// No error and no done chunk: an error status with an empty body, or a stream that just ended.
	if s := ex.Status(); s >= 400 {
		return nil, c.statusError(s, "", nil)
	}
	return nil, &agent.ModelError{
		Kind: agent.ErrStreamBroken, Status: ex.Status(),
		Message: "the reply stream ended without its done chunk",
		Fix:     "retry; if it happens again, see the Ollama server log (the runner may have crashed)",
	}
}

func (c *Client) finish(a *assembly, numCtx int) (*agent.ModelResponse, error) {
	// Silent truncation: the server cut the prompt to the window. With truncate:false it answers 400
	// instead, but an older server ignores the flag; the only trace is a prompt that filled the
	// window exactly. num_ctx above the trained length is clamped by the server, so that counts.
	limit := numCtx
	c.mu.Lock()
	if c.trained > 0 && c.trained < limit {
		limit = c.trained
	}
	c.mu.Unlock()
	if n := a.metrics.PromptEvalCount; n > 0 && n >= limit {
		return nil, &agent.ModelError{
			Kind:    agent.ErrContextOverflow,
			Status:  200,
			Message: fmt.Sprintf("the prompt filled the whole context window (%d of %d tokens): the server cut part of it", n, limit),
			Fix:     c.overflowFix(),
		}
	}
	return &agent.ModelResponse{
		Message: agent.Message{
			Role:      agent.RoleAssistant,
			Content:   a.content.String(),
			Thinking:  a.thinking.String(),
			ToolCalls: a.calls,
		},
		DoneReason: a.reason,
		Usage: agent.Usage{
			PromptTokens:   a.metrics.PromptEvalCount,
			OutputTokens:   a.metrics.EvalCount,
			PromptDuration: a.metrics.PromptEvalDuration,
			OutputDuration: a.metrics.EvalDuration,
			LoadDuration:   a.metrics.LoadDuration,
			TotalDuration:  a.metrics.TotalDuration,
		},
	}, nil
}
