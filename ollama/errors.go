package ollama

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/agentd/agentd/agent"
	"github.com/ollama/ollama/api"
)

// classify turns an error of the api package into a *agent.ModelError. status is the HTTP status the
// transport saw (0 when no response arrived); it decides between a failed connection and a stream
// that broke after the headers. Callers check the context before calling classify.
func (c *Client) classify(err error, status int) error {
	var se api.StatusError
	if errors.As(err, &se) {
		return c.statusError(se.StatusCode, se.ErrorMessage, err)
	}
	var ae api.AuthorizationError
	if errors.As(err, &ae) {
		return &agent.ModelError{
			Kind: agent.ErrBadRequest, Status: ae.StatusCode, Err: err,
			Message: "the server asks for authorization",
			Fix:     fmt.Sprintf("point OLLAMA_HOST at a local Ollama server (now %s)", c.base),
		}
	}
	if status == 0 {
		return c.connectError(err)
	}
	if status >= http.StatusBadRequest {
		return c.statusError(status, "", err)
	}
	// After a 200: an {"error":…} line in the stream, a cut connection, or an undecodable line.
	if e := toolCallParseError(status, err.Error(), err); e != nil {
		return e
	}
	return &agent.ModelError{
		Kind: agent.ErrStreamBroken, Status: status, Err: err,
		Message: err.Error(),
		Fix:     "retry; if it happens again, see the Ollama server log",
	}
}

// connectError classifies a failure before any response arrived.
func (c *Client) connectError(err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &agent.ModelError{
			Kind: agent.ErrServerNotRunning, Err: err,
			Message: fmt.Sprintf("Ollama is not running at %s (connection refused)", c.base),
			Fix:     "start it with `ollama serve` or the Ollama app",
		}
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if errors.As(err, &dnsErr) || (errors.As(err, &opErr) && opErr.Op == "dial") {
		return &agent.ModelError{
			Kind: agent.ErrServerNotRunning, Err: err,
			Message: fmt.Sprintf("cannot reach Ollama at %s: %v", c.base, unwrapURL(err)),
			Fix:     "start it with `ollama serve` or the Ollama app, and check OLLAMA_HOST",
		}
	}
	return &agent.ModelError{
		Kind: agent.ErrServer, Err: err,
		Message: fmt.Sprintf("request to Ollama at %s failed: %v", c.base, unwrapURL(err)),
		Fix:     "check that the Ollama server is healthy (`ollama ps`) and retry",
	}
}

// statusError classifies an HTTP error status. The kind is decided by the status code; only where one
// code covers several causes (404, 400 and 500) does the server's message refine it, because Ollama
// gives no machine-readable reason. The message texts matched are the ones recorded from a real server
// (see /work/shared/notes/ollama.md).
func (c *Client) statusError(code int, msg string, err error) *agent.ModelError {
	if msg == "" {
		msg = http.StatusText(code)
	}
	e := &agent.ModelError{Status: code, Message: msg, Err: err}
	lower := strings.ToLower(strings.TrimSpace(msg))
	switch {
	case code == http.StatusNotFound && lower == "404 page not found":
		// Refinement of a 404 by its message: the router's plain-text answer for an unknown path,
		// not Ollama's JSON "model 'x' not found". The address is not an Ollama server.
		e.Kind = agent.ErrServer
		e.Fix = fmt.Sprintf("check OLLAMA_HOST: %s does not answer like an Ollama server", c.base)
	case code == http.StatusNotFound:
		e.Kind = agent.ErrModelNotFound
		e.Fix = fmt.Sprintf("run `ollama pull %s`", c.model)
	case code == http.StatusBadRequest:
		// Refinement of a 400 by its message (see above).
		switch {
		case strings.Contains(lower, "does not support tools"):
			e.Kind = agent.ErrNoToolSupport
			e.Fix = "agentd falls back to tool calls written as text; a model with the `tools` capability works better (see `ollama show " + c.model + "`)"
		case strings.Contains(lower, "does not support thinking"):
			e.Kind = agent.ErrNoThinking
			e.Fix = "turn thinking off for " + c.model
		case strings.Contains(lower, "does not support insert"):
			// Fill-in-the-middle (a suffix) needs a model with the insert capability.
			e.Kind = agent.ErrBadRequest
			e.Fix = c.model + " cannot fill in the middle: set completion-model to a code model with the `insert` capability (qwen2.5-coder:1.5b-base, for instance)"
		case strings.Contains(lower, "exceeds the context length"):
			e.Kind = agent.ErrContextOverflow
			e.Fix = c.overflowFix()
		default:
			e.Kind = agent.ErrBadRequest
		}
	case code == http.StatusServiceUnavailable:
		e.Kind = agent.ErrServerBusy
		e.Fix = "Ollama's request queue is full: wait and retry, or raise OLLAMA_MAX_QUEUE / OLLAMA_NUM_PARALLEL"
	case code == http.StatusInternalServerError:
		// Refinement of a 500 by its message: the model's own parsers answer 500 when the model
		// wrote a tool call they cannot read. That is the model's output, not a load failure: the
		// loop tells the model and asks again.
		if pe := toolCallParseError(code, msg, err); pe != nil {
			return pe
		}
		e.Kind = agent.ErrLoadFailed
		e.Fix = "check that " + c.model + " fits in memory (`ollama ps`) and see the Ollama server log"
	case code >= 400 && code < 500:
		e.Kind = agent.ErrBadRequest
	default:
		e.Kind = agent.ErrServer
		e.Fix = "see the Ollama server log"
	}
	return e
}

// toolCallParseError recognises the messages of Ollama's tool-call parsers (built-in parsers,
// harmony, qwen3-coder's XML) when a model wrote a call they cannot read: "error parsing tool
// call: raw='…', err=…", "failed to parse JSON: …", "XML syntax error on line …". It returns nil
// for any other message. Raw is what the model wrote, when the server quotes it.
func toolCallParseError(status int, msg string, err error) *agent.ModelError {
	const prefix, rawMark, errMark = "error parsing tool call: ", "raw='", "', err="
	e := &agent.ModelError{Kind: agent.ErrBadToolCall, Status: status, Err: err,
		Fix: "the model wrote a tool call that Ollama's parser for it could not read: agentd shows the model what it wrote and asks again"}
	switch i := strings.Index(msg, prefix); {
	case i >= 0:
		rest := msg[i+len(prefix):]
		e.Message = rest
		if strings.HasPrefix(rest, rawMark) {
			if j := strings.LastIndex(rest, errMark); j >= len(rawMark) {
				e.Raw = rest[len(rawMark):j]
				e.Message = rest[j+len(errMark):]
			}
		}
	case strings.Contains(msg, "failed to parse JSON"), strings.Contains(msg, "XML syntax error"):
		e.Message = msg
	default:
		return nil
	}
	return e
}

// unwrapURL drops the "Post \"http://…\": " prefix of a *url.Error; the message names the host.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// overflowFix is what a user can do when the prompt does not fit the window: raise agentd's
// context-length setting (the window agentd sends as num_ctx, which users do not set themselves),
// up to the model's trained length when it is known.
func (c *Client) overflowFix() string {
	c.mu.Lock()
	trained := c.trained
	c.mu.Unlock()
	fix := "raise the context window with --context-length N, `context-length N` in the config " +
		"($XDG_CONFIG_HOME/agentd/config) or AGENTD_CONTEXT_LENGTH=N (editors: agentd.contextLength in VS Code, " +
		"context_length in Neovim)"
	if trained > 0 {
		fix += fmt.Sprintf(", up to the model's trained %d tokens", trained)
	}
	return fix + "; or start a new session"
}
