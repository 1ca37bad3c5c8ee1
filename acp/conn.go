// Package acp is agentd's Agent Client Protocol front end (`agentd acp`): JSON-RPC 2.0, one message
// per line, over the agent's stdio, as Zed, JetBrains IDEs, Emacs and the Neovim ACP clients
// speak it. It drives the same session harness as the editor daemon and `agentd run` (see
// harness.go, the only file that uses it), so sessions, policy, sandbox and journals are shared.
package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
)

// JSON-RPC error codes.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
	// codeResourceNotFound is ACP's: a session that does not exist.
	codeResourceNotFound = -32002
)

// maxLine bounds one incoming message (an embedded resource can be large, but not unbounded).
const maxLine = 64 << 20

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

func errorf(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// message is any incoming JSON-RPC message.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// conn is the newline-delimited JSON-RPC connection: it writes messages one per line and matches
// the client's responses to the requests agentd sent.
type conn struct {
	wmu sync.Mutex
	w   io.Writer

	mu      sync.Mutex
	nextID  int64
	pending map[string]chan message
	closed  bool
}

func newConn(w io.Writer) *conn { return &conn{w: w, pending: map[string]chan message{}} }

// send writes one message as a line. A write error (the client went away) is logged once per
// message and otherwise ignored: reading stdin's end is what stops the agent.
func (c *conn) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		slog.Error("acp: encoding a message", "err", err)
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		slog.Debug("acp: writing to the client", "err", err)
	}
}

func (c *conn) reply(id json.RawMessage, result any) {
	if result == nil {
		result = struct{}{}
	}
	c.send(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result})
}

func (c *conn) replyError(id json.RawMessage, e *rpcError) {
	if id == nil {
		id = json.RawMessage("null")
	}
	c.send(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *rpcError       `json:"error"`
	}{"2.0", id, e})
}

func (c *conn) notify(method string, params any) {
	c.send(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
}

// errClosed is the error of a request to a client that has gone.
var errClosed = errors.New("the ACP client disconnected")

// call sends a request to the client and waits for its response or ctx's end.
func (c *conn) call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	c.nextID++
	id := strconv.FormatInt(c.nextID, 10)
	ch := make(chan message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	c.send(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", mustAtoi(id), method, params})
	select {
	case m, ok := <-ch:
		if !ok {
			return errClosed
		}
		if m.Error != nil {
			return m.Error
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("the client's answer to %s does not parse: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func mustAtoi(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

// deliver routes a response to the request waiting for it; a response nobody waits for is
// logged and dropped.
func (c *conn) deliver(m message) {
	key := string(m.ID)
	var s string
	if json.Unmarshal(m.ID, &s) == nil {
		key = s
	}
	c.mu.Lock()
	ch := c.pending[key]
	delete(c.pending, key)
	c.mu.Unlock()
	if ch == nil {
		slog.Debug("acp: a response to no pending request (its request was abandoned)", "id", string(m.ID))
		return
	}
	ch <- m
}

// close fails every pending request: the client is gone.
func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}

// readLines calls handle for each line of r until r ends; a line longer than maxLine is a
// parse error for that line, and reading goes on after it.
func readLines(r io.Reader, handle func([]byte), tooLong func()) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	over := false
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(chunk) > 0 && !over {
			if len(buf)+len(chunk) > maxLine {
				over, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err != nil {
			if err == io.EOF {
				if len(buf) > 0 {
					handle(buf)
				}
				return nil
			}
			return err
		}
		if isPrefix {
			continue
		}
		if over {
			tooLong()
		} else if len(buf) > 0 {
			handle(buf)
		}
		buf, over = nil, false
	}
}
