package ollama

import (
	"context"
	"strings"

	"github.com/agentd/agentd/agent"
	"github.com/ollama/ollama/api"
)

// Infill asks /api/generate for the text between req.Prompt and req.Suffix with the client's model,
// streamed and assembled. The model needs Ollama's "insert" capability when there is a suffix (a
// 400 "does not support insert" otherwise); its template places the suffix, so raw is sent only
// without one, where the prompt is continued as it is.
//
// Completions are disposable: there is no retry on 503, and cancelling ctx closes the HTTP request
// at once, which stops the generation on the server.
//
// Errors: a *agent.ModelError for every failure of the server or the stream; the context's error,
// wrapped, when ctx ended first.
func (c *Client) Infill(ctx context.Context, req *agent.InfillRequest) (*agent.InfillResponse, error) {
	if err := c.needModel(); err != nil {
		return nil, err
	}
	areq := infillRequest(c.model, req)
	if c.keepAlive != nil {
		areq.KeepAlive = &api.Duration{Duration: *c.keepAlive}
	}
	ctx, ex := withExchange(ctx)
	var text strings.Builder
	var last api.GenerateResponse
	done := false
	err := c.api.Generate(ctx, areq, func(r api.GenerateResponse) error {
		if done {
			return nil
		}
		text.WriteString(r.Response)
		if r.Done {
			done, last = true, r
		}
		return nil
	})
	if err == nil && done {
		return &agent.InfillResponse{Text: text.String(), DoneReason: last.DoneReason,
			PromptTokens: last.PromptEvalCount, Duration: last.TotalDuration}, nil
	}
	if ctx.Err() != nil {
		return nil, ctxError(ctx)
	}
	if err != nil {
		return nil, c.classify(err, ex.Status())
	}
	if s := ex.Status(); s >= 400 {
		return nil, c.statusError(s, "", nil)
	}
	return nil, &agent.ModelError{Kind: agent.ErrStreamBroken, Status: ex.Status(),
		Message: "the completion stream ended without its done chunk"}
}

// infillRequest is the wire request of req. num_ctx is always sent, so the completion model is
// loaded once with one window; think is off (a thinking model would spend the budget thinking).
func infillRequest(model string, req *agent.InfillRequest) *api.GenerateRequest {
	numPredict := req.NumPredict
	if numPredict <= 0 {
		numPredict = 128
	}
	opts := map[string]any{"num_predict": numPredict}
	if req.NumCtx > 0 {
		opts["num_ctx"] = req.NumCtx
	}
	if len(req.Stop) > 0 {
		opts["stop"] = req.Stop
	}
	return &api.GenerateRequest{
		Model:  model,
		Prompt: req.Prompt,
		Suffix: req.Suffix,
		// Never raw with a suffix: the template that places it would be skipped and the suffix
		// silently ignored.
		Raw:     req.Suffix == "",
		Options: opts,
		Think:   &api.ThinkValue{Value: false},
	}
}
