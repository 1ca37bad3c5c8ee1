package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/agentd/agentd/agent"
)

// errorBody is the error document of these servers: llama-server and newer vLLM nest it under
// "error" ({"error":{"code":400,"message":…,"type":"exceed_context_size_error"}}), older vLLM
// puts message and type at the top ({"object":"error","message":…,"type":"BadRequestError"}).
type errorBody struct {
	Error   *errorDetail `json:"error"`
	Message string       `json:"message"`
	Type    string       `json:"type"`
}

type errorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}

// UnmarshalJSON accepts "error" as an object or as a plain string (some servers send that).
func (d *errorDetail) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		d.Message = s
		return nil
	}
	type plain errorDetail
	return json.Unmarshal(b, (*plain)(d))
}

// parseErrorBody reads a server's error document; text that is not one is the message itself.
func parseErrorBody(body []byte) (msg, typ string) {
	var eb errorBody
	if json.Unmarshal(body, &eb) == nil {
		if eb.Error != nil {
			return eb.Error.Message, eb.Error.Type
		}
		if eb.Message != "" {
			return eb.Message, eb.Type
		}
	}
	return strings.TrimSpace(string(body)), ""
}

// statusError classifies an HTTP error answer by its status; the error type (llama-server) or
// message (vLLM, which has no type for it) only refines a 400, where one status covers several
// causes.
func (c *Client) statusError(code int, body []byte) *agent.ModelError {
	msg, typ := parseErrorBody(body)
	if msg == "" {
		msg = http.StatusText(code)
	}
	e := &agent.ModelError{Status: code, Message: msg}
	lower := strings.ToLower(msg)
	switch {
	case isOverflow(typ, lower):
		e.Kind = agent.ErrContextOverflow
		e.Fix = c.overflowFix()
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		e.Kind = agent.ErrBadRequest
		e.Message = fmt.Sprintf("%s refused the request: %s", c.base, msg)
		e.Fix = "set `engine-api-key-env NAME` in the config to the environment variable that holds the server's API key"
	case code == http.StatusNotFound && strings.Contains(lower, "model"):
		e.Kind = agent.ErrModelNotFound
		e.Fix = "choose a model the server serves (`agentd doctor` lists them)"
	case code == http.StatusNotFound:
		e.Kind = agent.ErrServer
		e.Fix = fmt.Sprintf("check engine-url: %s does not answer like an OpenAI-compatible API (the URL ends in /v1)", c.base)
	case code == http.StatusBadRequest && strings.Contains(lower, "--jinja"):
		// llama-server started without its template engine refuses tools.
		e.Kind = agent.ErrNoToolSupport
		e.Fix = "agentd falls back to tool calls written as text; start llama-server with --jinja for native tool calls"
	case code == http.StatusServiceUnavailable:
		e.Kind = agent.ErrServerBusy
		e.Fix = "the server is loading the model or its queue is full: wait and retry"
	case code >= 400 && code < 500:
		e.Kind = agent.ErrBadRequest
	default:
		e.Kind = agent.ErrServer
		e.Fix = "see the server's log"
	}
	return e
}

// isOverflow recognises a prompt longer than the window: llama-server's error type, or vLLM's
// 400 naming the maximum context length (it has no type of its own for it).
func isOverflow(typ, lowerMsg string) bool {
	return typ == "exceed_context_size_error" ||
		strings.Contains(lowerMsg, "maximum context length") ||
		strings.Contains(lowerMsg, "exceeds the available context size")
}

func (c *Client) overflowFix() string {
	c.mu.Lock()
	n := c.n
	c.mu.Unlock()
	fix := "the server's context window is too small for this conversation: start a new session, or give the server a larger window (llama-server -c, vLLM --max-model-len)"
	if n > 0 {
		fix += fmt.Sprintf("; it is %d tokens now", n)
	}
	return fix
}

// fail classifies a transport error: the context's error when the caller gave up, else why the
// server could not be reached, naming its URL.
func (c *Client) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &agent.ModelError{Kind: agent.ErrServerNotRunning, Err: err,
			Message: fmt.Sprintf("nothing listens at %s (connection refused)", c.base),
			Fix:     "start the server (llama-server -m MODEL.gguf --port 8080, vllm serve MODEL) or point engine-url at it"}
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if errors.As(err, &dnsErr) || (errors.As(err, &opErr) && opErr.Op == "dial") {
		return &agent.ModelError{Kind: agent.ErrServerNotRunning, Err: err,
			Message: fmt.Sprintf("cannot reach %s: %v", c.base, inner),
			Fix:     "check engine-url and that the server runs"}
	}
	return &agent.ModelError{Kind: agent.ErrServer, Err: err,
		Message: fmt.Sprintf("request to %s failed: %v", c.base, inner),
		Fix:     "check that the server is healthy and retry"}
}
