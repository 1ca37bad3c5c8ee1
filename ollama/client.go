// Package ollama is the model adapter: it implements agent.Model on Ollama's native /api/chat
// through the official client package github.com/ollama/ollama/api.
//
// Invariant: every chat request carries num_ctx, num_predict, think (true or false, never left
// out), truncate:false and shift:false, so the server never drops part of the prompt silently.
//
// Invariant: a reply counts only when its done chunk arrived; anything else is an error
// (stream_broken, or the context's error when the caller cancelled).
//
// Invariant: errors are classified by HTTP status; the server's message only refines a 404, a 400
// or a 500, where one status covers several causes.
//
// Wire facts and their traps are written down in /work/shared/notes/ollama.md; the tests replay
// real recorded exchanges from testdata/.
package ollama

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/ollama/ollama/api"
)

// Client talks to one Ollama server about one model. It is safe for concurrent use.
type Client struct {
	api       *api.Client
	base      *url.URL
	model     string
	keepAlive *time.Duration
	retry     RetryPolicy

	mu      sync.Mutex
	trained int // trained context length seen by the last successful Info, 0 if unknown
	// lease is what KeepLoaded needs: the runner options of the last chat request and the chats
	// in flight (see keepalive.go).
	lease lease

	args argsCache // converted arguments of past tool calls
}

var _ agent.Model = (*Client)(nil)

// New returns a client for cfg. It does not contact the server.
func New(cfg Config) (*Client, error) {
	base, err := ParseHost(cfg.Host)
	if err != nil {
		return nil, err
	}
	return &Client{
		api:       api.NewClient(base, httpClient(cfg.HTTPClient)),
		base:      base,
		model:     strings.TrimSpace(cfg.Model),
		keepAlive: cfg.KeepAlive,
		retry:     cfg.Retry.withDefaults(),
	}, nil
}

// BaseURL is the server address the client uses.
func (c *Client) BaseURL() string { return c.base.String() }

// Model is the configured model name.
func (c *Client) Model() string { return c.model }

// Info reads /api/show: capabilities and the trained context length.
func (c *Client) Info(ctx context.Context) (agent.ModelInfo, error) {
	if err := c.needModel(); err != nil {
		return agent.ModelInfo{}, err
	}
	var resp *api.ShowResponse
	err := c.withRetry(ctx, func(ctx context.Context) error {
		ctx, ex := withExchange(ctx)
		r, err := c.api.Show(ctx, &api.ShowRequest{Model: c.model})
		if err != nil {
			return c.fail(ctx, err, ex.Status())
		}
		resp = r
		return nil
	})
	if err != nil {
		return agent.ModelInfo{}, err
	}
	info := agent.ModelInfo{Name: c.model, ContextLength: contextLength(resp.ModelInfo)}
	for _, capability := range resp.Capabilities {
		switch string(capability) {
		case "tools":
			info.Tools = true
		case "thinking":
			info.Thinking = true
		case "vision":
			info.Vision = true
		}
	}
	c.mu.Lock()
	c.trained = info.ContextLength
	c.mu.Unlock()
	return info, nil
}

// contextLength reads model_info["<general.architecture>.context_length"], a float64 once decoded.
func contextLength(mi map[string]any) int {
	arch, _ := mi["general.architecture"].(string)
	if v, ok := mi[arch+".context_length"].(float64); ok && arch != "" {
		return int(v)
	}
	// An architecture key that is missing or odd: take the one context_length there is.
	found := 0
	for k, v := range mi {
		if f, ok := v.(float64); ok && strings.HasSuffix(k, ".context_length") {
			if found != 0 {
				return 0 // ambiguous
			}
			found = int(f)
		}
	}
	return found
}

// ModelSummary is one installed model, as /api/tags lists it.
type ModelSummary struct {
	Name          string    `json:"name"`
	Size          int64     `json:"size"`
	ModifiedAt    time.Time `json:"modifiedAt"`
	Family        string    `json:"family,omitzero"`
	ParameterSize string    `json:"parameterSize,omitzero"`
	Quantization  string    `json:"quantization,omitzero"`
	// Capabilities is filled by servers that list them in /api/tags; older ones leave it empty
	// (use Info for a definite answer).
	Capabilities []string `json:"capabilities,omitzero"`
}

// ListModels lists the installed models (/api/tags), for `agentd doctor` and the model picker.
func (c *Client) ListModels(ctx context.Context) ([]ModelSummary, error) {
	var resp *api.ListResponse
	err := c.withRetry(ctx, func(ctx context.Context) error {
		ctx, ex := withExchange(ctx)
		r, err := c.api.List(ctx)
		if err != nil {
			return c.fail(ctx, err, ex.Status())
		}
		resp = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]ModelSummary, 0, len(resp.Models))
	for _, m := range resp.Models {
		s := ModelSummary{
			Name:          m.Name,
			Size:          m.Size,
			ModifiedAt:    m.ModifiedAt,
			Family:        m.Details.Family,
			ParameterSize: m.Details.ParameterSize,
			Quantization:  m.Details.QuantizationLevel,
		}
		for _, capability := range m.Capabilities {
			s.Capabilities = append(s.Capabilities, string(capability))
		}
		out = append(out, s)
	}
	return out, nil
}

// Version returns the server's version (/api/version).
func (c *Client) Version(ctx context.Context) (string, error) {
	var v string
	err := c.withRetry(ctx, func(ctx context.Context) error {
		ctx, ex := withExchange(ctx)
		r, err := c.api.Version(ctx)
		if err != nil {
			return c.fail(ctx, err, ex.Status())
		}
		v = r
		return nil
	})
	return v, err
}

// sameModel compares model names as Ollama does: a name without a tag means ":latest".
func sameModel(a, b string) bool {
	tagged := func(s string) string {
		s = strings.ToLower(strings.TrimSpace(s))
		if i := strings.LastIndexByte(s, '/'); !strings.Contains(s[i+1:], ":") {
			s += ":latest"
		}
		return s
	}
	return a != "" && tagged(a) == tagged(b)
}

func (c *Client) needModel() error {
	if c.model == "" {
		return &agent.ModelError{Kind: agent.ErrBadRequest, Message: "no model configured", Fix: "choose a model (`ollama list` shows the installed ones)"}
	}
	return nil
}

// fail returns the context's error when the caller gave up, else the classified error.
func (c *Client) fail(ctx context.Context, err error, status int) error {
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	return c.classify(err, status)
}

// withRetry runs op until it succeeds, fails with something other than "server busy", or the retry
// policy is exhausted. It waits between tries with a capped exponential backoff.
func (c *Client) withRetry(ctx context.Context, op func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		var me *agent.ModelError
		if err == nil || !errors.As(err, &me) || me.Kind != agent.ErrServerBusy {
			return err
		}
		if attempt >= c.retry.Attempts {
			if attempt > 1 {
				me.Message = fmt.Sprintf("%s (%d attempts)", me.Message, attempt)
			}
			return me
		}
		t := time.NewTimer(c.retry.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctxError(ctx)
		case <-t.C:
		}
	}
}

// ctxError is the error for a request its context ended: the context's error (so errors.Is works
// with context.Canceled and context.DeadlineExceeded), plus the cause when one was given.
func ctxError(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause != nil && cause != err {
		return fmt.Errorf("ollama: request stopped: %w: %w", err, cause)
	}
	return fmt.Errorf("ollama: request stopped: %w", err)
}
