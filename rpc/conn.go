package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// Error codes agentd adds to JSON-RPC's.
const (
	CodeRequestCancelled     jsonrpc2.Code = -32800
	CodeUnknownSession       jsonrpc2.Code = -32801
	CodeUnknownReview        jsonrpc2.Code = -32802
	CodeTurnRunning          jsonrpc2.Code = -32803
	CodeReviewResolved       jsonrpc2.Code = -32804
	CodeWorkspace            jsonrpc2.Code = -32805
	CodeRequestFailed        jsonrpc2.Code = -32806
	CodeServerNotInitialized               = jsonrpc2.ServerNotInitialized
	CodeInvalidParams                      = jsonrpc2.InvalidParams
)

// Errorf makes a JSON-RPC error with a code.
func Errorf(code jsonrpc2.Code, format string, args ...any) error {
	return jsonrpc2.NewError(code, fmt.Sprintf(format, args...))
}

// ErrMethodNotFound answers an unknown method.
var ErrMethodNotFound = jsonrpc2.ErrMethodNotFound

// Handler serves one connection's incoming messages.
//
// Notifications are delivered one at a time in wire order (document sync depends on it); a
// notification handler must not block for long and has no way to fail the connection: it logs.
// Calls run concurrently, each in its own goroutine, with a context that is cancelled by
// $/cancelRequest or when the peer goes away; a call may make calls back to the peer.
type Handler interface {
	Call(ctx context.Context, method string, params json.RawMessage) (any, error)
	Notify(ctx context.Context, method string, params json.RawMessage)
}

// Conn is one JSON-RPC connection with the LSP base protocol framing.
type Conn struct {
	conn   jsonrpc2.Conn
	cancel context.CancelFunc
	ctx    context.Context

	mu        sync.Mutex
	canceller func(jsonrpc2.ID)
}

// NewConn wraps a byte stream (stdio, a Unix socket, a pipe).
func NewConn(rwc io.ReadWriteCloser) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{ctx: ctx, cancel: cancel}
	// jsonrpc2 does not cancel in-flight handlers when the peer disconnects: a read error (EOF
	// included) cancels the connection context they derive from.
	stream := &guardedStream{headerStream: jsonrpc2.NewStream(&eofCancel{ReadWriteCloser: rwc, cancel: cancel})}
	c.conn = jsonrpc2.NewConn(stream, jsonrpc2.WithCodec(codec{}), jsonrpc2.WithPreempter(preempter{c}))
	return c
}

// Go starts serving; it returns at once. Done closes when the connection ends.
func (c *Conn) Go(h Handler) {
	inner, canceller := jsonrpc2.CancelHandler(func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		return h.Call(ctx, req.Method(), json.RawMessage(req.Params()))
	})
	c.mu.Lock()
	c.canceller = canceller
	c.mu.Unlock()
	c.conn.Go(c.ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		if !req.IsCall() {
			// Inline, in wire order. Method and params are borrowed from the frame: copy them.
			method := strings.Clone(req.Method())
			params := append(json.RawMessage(nil), req.Params()...)
			func() {
				defer func() {
					if r := recover(); r != nil {
						slog.Error("notification handler panicked", "method", method, "panic", r)
					}
				}()
				h.Notify(c.ctx, method, params)
			}()
			return nil, nil
		}
		// Release the read loop first (exactly once), then derive contexts: deriving from a
		// synchronous request context crashes once the pooled request is recycled.
		jsonrpc2.Async(ctx)
		res, err := inner(ctx, req)
		var rpcErr *jsonrpc2.Error
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled):
			return nil, jsonrpc2.NewError(CodeRequestCancelled, "request cancelled")
		case errors.Is(err, jsonrpc2.ErrMethodNotFound):
		case !errors.As(err, &rpcErr):
			// A plain error from a handler is a failure the editor shows; give it a code.
			return nil, jsonrpc2.NewError(CodeRequestFailed, err.Error())
		}
		return res, err
	})
}

// Call sends a request to the peer and waits for its result. Cancelling ctx sends
// $/cancelRequest.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	return protocol.Call(ctx, c.conn, method, params, result)
}

// Notify sends a notification to the peer. It is sent even if ctx is already cancelled (jsonrpc2
// silently drops writes with a cancelled context).
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	return c.conn.Notify(context.WithoutCancel(ctx), method, params)
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.conn.Done() }

// Context is cancelled when the peer goes away.
func (c *Conn) Context() context.Context { return c.ctx }

// Close ends the connection.
func (c *Conn) Close() error {
	c.cancel()
	return c.conn.Close()
}

// preempter answers $/cancelRequest inline, before the request it cancels can be dispatched.
type preempter struct{ c *Conn }

func (p preempter) Preempt(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	if req.Method() != "$/cancelRequest" {
		return nil, jsonrpc2.ErrNotHandled
	}
	var params struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(req.Params(), &params); err == nil {
		var id jsonrpc2.ID
		if n, err := strconv.ParseInt(string(params.ID), 10, 64); err == nil {
			id = jsonrpc2.NewNumberID(n)
		} else {
			var s string
			if json.Unmarshal(params.ID, &s) == nil {
				id = jsonrpc2.NewStringID(s)
			}
		}
		p.c.mu.Lock()
		cancel := p.c.canceller
		p.c.mu.Unlock()
		if cancel != nil {
			cancel(id)
		}
	}
	return struct{}{}, nil // handled (a notification gets no response)
}

// codec uses the protocol package's marshalling, which is lenient with lone surrogates and invalid
// UTF-8 that editors can send, and passes raw JSON through untouched.
type codec struct{}

func (codec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case json.RawMessage:
		if m == nil {
			return []byte("null"), nil
		}
		return m, nil
	case jsonrpc2.RawMessage:
		if m == nil {
			return []byte("null"), nil
		}
		return m, nil
	}
	return protocol.Marshal(v)
}

func (codec) Unmarshal(data []byte, v any) error {
	switch p := v.(type) {
	case *json.RawMessage:
		*p = append((*p)[:0], data...)
		return nil
	case *jsonrpc2.RawMessage:
		*p = append((*p)[:0], data...)
		return nil
	}
	return protocol.Unmarshal(data, v)
}

// guardedStream answers a frame that is not a valid JSON-RPC message with an error response and
// reads on: jsonrpc2 would end the connection. A broken header cannot be resynchronised and still
// ends the connection (the daemon keeps serving others).
type guardedStream struct {
	headerStream jsonrpc2.Stream
}

type frameIO interface {
	ReadFrame(ctx context.Context) ([]byte, int64, error)
	WriteFrame(ctx context.Context, data []byte) (int64, error)
}

func (g *guardedStream) ReadFrame(ctx context.Context) ([]byte, int64, error) {
	fs := g.headerStream.(frameIO)
	for {
		frame, n, err := fs.ReadFrame(ctx)
		if err != nil {
			return frame, n, err
		}
		trimmed := bytes.TrimLeft(frame, " \t\r\n")
		if len(trimmed) > 0 && trimmed[0] == '[' {
			return frame, n, nil // a batch: jsonrpc2 answers its members
		}
		if _, derr := jsonrpc2.DecodeMessage(frame); derr == nil {
			return frame, n, nil
		}
		code, msg, id := jsonrpc2.ParseError, "parse error: the message is not valid JSON", json.RawMessage("null")
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Valid(frame) {
			code, msg = jsonrpc2.InvalidRequest, "invalid request: not a JSON-RPC 2.0 message"
			if json.Unmarshal(frame, &probe) == nil && len(probe.ID) > 0 {
				id = probe.ID
			}
		}
		slog.Warn("malformed message", "code", code, "bytes", len(frame))
		resp, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
			"error": map[string]any{"code": code, "message": msg}})
		if _, err := fs.WriteFrame(context.WithoutCancel(ctx), resp); err != nil {
			return nil, 0, err
		}
	}
}

func (g *guardedStream) WriteFrame(ctx context.Context, data []byte) (int64, error) {
	return g.headerStream.(frameIO).WriteFrame(ctx, data)
}

func (g *guardedStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	frame, n, err := g.ReadFrame(ctx)
	if err != nil {
		return nil, n, err
	}
	msg, err := jsonrpc2.DecodeMessage(frame)
	return msg, n, err
}

func (g *guardedStream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	return g.headerStream.Write(ctx, msg)
}

func (g *guardedStream) Close() error { return g.headerStream.Close() }

type eofCancel struct {
	io.ReadWriteCloser
	cancel context.CancelFunc
}

func (e *eofCancel) Read(p []byte) (int, error) {
	n, err := e.ReadWriteCloser.Read(p)
	if err != nil {
		e.cancel()
	}
	return n, err
}

// Decode unmarshals params into v, reporting an invalid-params error the client can read.
func Decode(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if err := protocol.Unmarshal(params, v); err != nil {
		return Errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

// DecodeStrict unmarshals params into v rejecting unknown fields.
func DecodeStrict(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	if dec.More() {
		return Errorf(CodeInvalidParams, "invalid params: trailing data")
	}
	return nil
}
