// Package openai is the model adapter for servers that speak the OpenAI chat-completions API:
// llama.cpp's llama-server, LM Studio, vLLM, SGLang and Ollama's /v1. It implements agent.Model
// with a small client of its own over net/http (the official openai-go module weighs 232,000
// lines and five further modules for the four requests used here, and hides the fields these
// servers add: llama-server's timings and error types, vLLM's max_model_len).
//
// Invariant: a reply counts only when a choice's finish_reason arrived; a stream that ends
// without one is an error (stream_broken, or the context's error when the caller cancelled).
//
// Invariant: the request is a deterministic function of the conversation and the tool list, so
// an append-only history gives a byte-identical prefix turn after turn and workspace after
// workspace (llama-server's slot cache and vLLM's prefix cache match on it).
//
// Invariant: the context window is the server's (llama-server's -c per slot, vLLM's
// max_model_len); agentd reads it and never asks for another, so no request reloads anything.
//
// Wire facts are in /work/shared/notes/engines.md; the tests run against a fake (openaitest) and
// against a real llama-server (cmd/agentd's llama-server end-to-end test).
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/agent"
)

// DefaultURL is where llama-server listens unless told otherwise.
const DefaultURL = "http://127.0.0.1:8080/v1"

// Config configures a Client.
type Config struct {
	// URL is the API's base URL including its version path ("http://gpu-host:8000/v1"); empty
	// means DefaultURL. Chat posts to URL + "/chat/completions".
	URL string
	// Model is the model name the server serves. Empty, or a name the server does not list
	// while it lists exactly one model, means the server's one model (llama-server serves one;
	// editors send their Ollama-style default).
	Model string
	// APIKey, when set, is sent as a bearer token. cmd/agentd reads it from the environment
	// variable the config names; it is never written anywhere.
	APIKey string
	// Retry is the number of tries for "busy" answers (HTTP 503, also llama-server's "Loading
	// model"); 0 means 4, 1 disables retrying. RetryWait is the first wait (0: 500ms), doubling.
	Retry     int
	RetryWait time.Duration
	// HTTPClient carries the requests (nil: a client without timeouts that never goes through a
	// proxy from the environment). Its Timeout must be 0: the first byte comes after the whole
	// prompt is read, which takes minutes for long prompts on slow hosts.
	HTTPClient *http.Client
}

// Client talks to one server about one model. It is safe for concurrent use.
type Client struct {
	base   *url.URL // the API base, ".../v1"
	root   *url.URL // the server's root, where llama-server serves /props
	apiKey string
	hc     *http.Client
	retry  int
	wait   time.Duration

	mu    sync.Mutex
	model string // configured, then the server's name once Info resolved it
	n     int    // context window seen by the last Info, 0 if unknown
}

var _ agent.Model = (*Client)(nil)

// New returns a client for cfg. It does not contact the server.
func New(cfg Config) (*Client, error) {
	base, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	root := *base
	root.Path = strings.TrimSuffix(root.Path, "/v1")
	hc := cfg.HTTPClient
	if hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// The prompt goes to the configured host only, never to a proxy from the environment.
		t.Proxy = nil
		hc = &http.Client{Transport: t}
	}
	c := &Client{base: base, root: &root, apiKey: cfg.APIKey, hc: hc, retry: cfg.Retry, wait: cfg.RetryWait,
		model: strings.TrimSpace(cfg.Model)}
	if c.retry <= 0 {
		c.retry = 4
	}
	if c.wait <= 0 {
		c.wait = 500 * time.Millisecond
	}
	return c, nil
}

// ParseURL checks an engine URL: http or https, a host, no query; a trailing slash is dropped.
func ParseURL(s string) (*url.URL, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = DefaultURL
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("engine URL %q: %v", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("engine URL %q: the scheme must be http or https", s)
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("engine URL %q: give scheme, host, port and path only (http://127.0.0.1:8080/v1)", s)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// BaseURL is the API base URL the client uses.
func (c *Client) BaseURL() string { return c.base.String() }

// Model is the model name: the configured one until Info resolved the server's.
func (c *Client) Model() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.model
}

// ModelEntry is one model the server serves (/v1/models).
type ModelEntry struct {
	ID string
	// ContextLength is the window the server runs it with (vLLM's max_model_len, llama-server's
	// meta.n_ctx), 0 when it does not say.
	ContextLength int
}

type modelsResponse struct {
	Data []struct {
		ID          string `json:"id"`
		MaxModelLen int    `json:"max_model_len"`
		Meta        struct {
			NCtx int `json:"n_ctx"`
		} `json:"meta"`
	} `json:"data"`
}

// ListModels lists what the server serves (GET /models).
func (c *Client) ListModels(ctx context.Context) ([]ModelEntry, error) {
	var r modelsResponse
	if err := c.get(ctx, c.endpoint(c.base, "/models"), &r); err != nil {
		return nil, err
	}
	out := make([]ModelEntry, 0, len(r.Data))
	for _, m := range r.Data {
		e := ModelEntry{ID: m.ID, ContextLength: m.MaxModelLen}
		if e.ContextLength == 0 {
			e.ContextLength = m.Meta.NCtx
		}
		out = append(out, e)
	}
	return out, nil
}

// props is what agentd reads of llama-server's GET /props.
type props struct {
	DefaultGenerationSettings struct {
		NCtx int `json:"n_ctx"`
	} `json:"default_generation_settings"`
	TotalSlots       int    `json:"total_slots"`
	BuildInfo        string `json:"build_info"`
	ChatTemplateCaps *struct {
		SupportsTools bool `json:"supports_tools"`
	} `json:"chat_template_caps"`
}

// llamaProps reads llama-server's /props; ok is false on servers without it.
func (c *Client) llamaProps(ctx context.Context) (p props, ok bool, err error) {
	err = c.get(ctx, c.endpoint(c.root, "/props"), &p)
	var me *agent.ModelError
	if errors.As(err, &me) && me.Status >= 400 && me.Status < 500 {
		return p, false, nil // not llama-server
	}
	return p, err == nil, err
}

// Info resolves the model name and reads the context window: llama-server's /props
// (default_generation_settings.n_ctx, the window of one slot), else what /models says (vLLM's
// max_model_len, llama-server's meta.n_ctx). Tools are assumed unless llama-server's chat
// template says it cannot take them; the loop then writes tool calls as text.
func (c *Client) Info(ctx context.Context) (agent.ModelInfo, error) {
	models, err := c.ListModels(ctx)
	if err != nil {
		return agent.ModelInfo{}, err
	}
	m, err := c.pick(models)
	if err != nil {
		return agent.ModelInfo{}, err
	}
	info := agent.ModelInfo{Name: m.ID, ContextLength: m.ContextLength, Tools: true}
	p, ok, err := c.llamaProps(ctx)
	if err != nil {
		return agent.ModelInfo{}, err
	}
	if ok {
		if n := p.DefaultGenerationSettings.NCtx; n > 0 {
			info.ContextLength = n
		}
		if p.ChatTemplateCaps != nil {
			info.Tools = p.ChatTemplateCaps.SupportsTools
		}
	}
	c.mu.Lock()
	c.model, c.n = m.ID, info.ContextLength
	c.mu.Unlock()
	return info, nil
}

// pick chooses the configured model among those served (see Config.Model).
func (c *Client) pick(models []ModelEntry) (ModelEntry, error) {
	want := c.Model()
	ids := []string{}
	for _, m := range models {
		if m.ID == want {
			return m, nil
		}
		ids = append(ids, m.ID)
	}
	if len(models) == 1 {
		return models[0], nil
	}
	e := &agent.ModelError{Kind: agent.ErrModelNotFound,
		Message: fmt.Sprintf("%s serves %s, not %q", c.base, strings.Join(ids, ", "), want),
		Fix:     "choose one of the served models with --model or `model NAME` in the config"}
	if len(models) == 0 {
		e.Message = fmt.Sprintf("%s serves no model", c.base)
		e.Fix = "load a model in the server"
	}
	return ModelEntry{}, e
}

// Version names the server: llama-server's build, vLLM's version, else what it is.
func (c *Client) Version(ctx context.Context) (string, error) {
	p, ok, err := c.llamaProps(ctx)
	if err != nil {
		return "", err
	}
	if ok && p.BuildInfo != "" {
		return "llama-server " + p.BuildInfo, nil
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := c.get(ctx, c.endpoint(c.root, "/version"), &v); err == nil && v.Version != "" {
		return v.Version, nil
	}
	if _, err := c.ListModels(ctx); err != nil {
		return "", err
	}
	return "OpenAI-compatible", nil
}

func (c *Client) endpoint(base *url.URL, path string) string {
	u := *base
	u.Path += path
	return u.String()
}

func (c *Client) newRequest(ctx context.Context, method, u string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	return req, nil
}

// get fetches a JSON document, retrying while the server is busy.
func (c *Client) get(ctx context.Context, u string, into any) error {
	return c.withRetry(ctx, func(ctx context.Context) error {
		req, err := c.newRequest(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return c.fail(ctx, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		if err != nil {
			return c.fail(ctx, err)
		}
		if resp.StatusCode != http.StatusOK {
			return c.statusError(resp.StatusCode, body)
		}
		if err := json.Unmarshal(body, into); err != nil {
			return &agent.ModelError{Kind: agent.ErrServer, Status: resp.StatusCode, Err: err,
				Message: fmt.Sprintf("%s answered something that is not JSON: %v", u, err),
				Fix:     "check engine-url: it should be the API's base URL, e.g. http://127.0.0.1:8080/v1"}
		}
		return nil
	})
}

// withRetry runs op until it succeeds, fails with something other than "server busy", or the
// tries are used up, waiting between tries with a doubling backoff.
func (c *Client) withRetry(ctx context.Context, op func(context.Context) error) error {
	wait := c.wait
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		var me *agent.ModelError
		if err == nil || !errors.As(err, &me) || me.Kind != agent.ErrServerBusy || attempt >= c.retry {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctxError(ctx)
		case <-t.C:
		}
		wait = min(2*wait, 8*time.Second)
	}
}

// ctxError is the error for a request whose context ended, wrapping the context's error.
func ctxError(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause != nil && cause != err {
		return fmt.Errorf("openai: request stopped: %w: %w", err, cause)
	}
	return fmt.Errorf("openai: request stopped: %w", err)
}
