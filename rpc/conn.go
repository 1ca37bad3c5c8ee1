package rpc

import (
	"bufio"
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
	"sync/atomic"

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
	raw    io.Closer
	cancel context.CancelFunc
	ctx    context.Context

	mu        sync.Mutex
	canceller func(jsonrpc2.ID)
	// arrivals numbers the calls in wire order (Arrival).
	arrivals atomic.Uint64
}

type arrivalKey struct{}

// Arrival is a call's place in the connection's wire order, from 1 (0 outside a call). Calls run
// concurrently and may start in another order; a handler that must let the newer of two requests
// win compares their arrivals.
func Arrival(ctx context.Context) uint64 {
	n, _ := ctx.Value(arrivalKey{}).(uint64)
	return n
}

// NewConn wraps a byte stream (stdio, a Unix socket, a pipe).
func NewConn(rwc io.ReadWriteCloser) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{ctx: ctx, cancel: cancel, raw: rwc}
	// jsonrpc2 does not cancel in-flight handlers when the peer disconnects: a read error (EOF
	// included) cancels the connection context they derive from.
	stream := newGuardedStream(&eofCancel{ReadWriteCloser: rwc, cancel: cancel})
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
		// synchronous request context crashes once the pooled request is recycled. The arrival
		// is counted before, still in wire order.
		arrival := c.arrivals.Add(1)
		jsonrpc2.Async(ctx)
		res, err := inner(context.WithValue(ctx, arrivalKey{}, arrival), req)
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

// Abort closes the transport at once, without waiting for handlers or for a write blocked on a
// peer that does not read: that write fails, the read loop ends, and Done follows.
func (c *Conn) Abort() error {
	c.cancel()
	return c.raw.Close()
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

// MaxMessageBytes caps the body of one incoming message. A larger message is answered with an
// invalid-request error (-32600) and skipped without being buffered; the connection stays up. 64
// MiB holds a didOpen of any file an editor syncs to its extensions (VS Code stops at 50 MB) with
// room for JSON escaping.
const MaxMessageBytes = 64 << 20

var maxMessageBytes = MaxMessageBytes // lowered by tests

const (
	firstBodyChunk = 64 << 10 // a body buffer starts at most this big and doubles as bytes arrive
	keepBodyBuffer = 1 << 20  // a larger body buffer is released before the next message
	maxHeaderLines = 32       // a header line is at most the reader's buffer (4 KiB)
	idProbeBytes   = 4 << 10  // how much of an oversized message is searched for its id
)

// guardedStream reads the LSP framing itself so that memory follows the bytes that arrive, not the
// length a header declares: a body buffer grows as the body comes in, a message over
// MaxMessageBytes is answered with an error and discarded as it streams past, and header lines are
// bounded. It also answers a frame that is not a valid JSON-RPC message with an error response and
// reads on: jsonrpc2 would end the connection. A broken header cannot be resynchronised and still
// ends the connection (the daemon keeps serving others). Writes go through jsonrpc2's stream.
type guardedStream struct {
	headerStream jsonrpc2.Stream // writes and Close
	in           *bufio.Reader
	body         []byte // the current message; jsonrpc2 borrows it until the next read
}

func newGuardedStream(rwc io.ReadWriteCloser) *guardedStream {
	return &guardedStream{headerStream: jsonrpc2.NewStream(rwc), in: bufio.NewReader(rwc)}
}

type frameIO interface {
	ReadFrame(ctx context.Context) ([]byte, int64, error)
	WriteFrame(ctx context.Context, data []byte) (int64, error)
}

func (g *guardedStream) ReadFrame(ctx context.Context) ([]byte, int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		frame, n, err := g.readFrame()
		var big *tooLarge
		if errors.As(err, &big) {
			slog.Warn("message too large", "bytes", big.length, "limit", maxMessageBytes)
			resp, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": big.id, "error": map[string]any{
				"code":    jsonrpc2.InvalidRequest,
				"message": fmt.Sprintf("invalid request: the message is %d bytes, over the limit of %d bytes", big.length, maxMessageBytes)}})
			// Answer at once, from another goroutine: the peer may be writing the rest of the
			// body and not reading until it is done. Then skip the body as it streams past.
			go g.WriteFrame(context.WithoutCancel(ctx), resp)
			if err := g.skip(big.length); err != nil {
				return nil, 0, err
			}
			continue
		}
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
		if _, err := g.WriteFrame(context.WithoutCancel(ctx), resp); err != nil {
			return nil, 0, err
		}
	}
}

// tooLarge is a message over the cap whose body is still to be skipped.
type tooLarge struct {
	length int64
	id     json.RawMessage
}

func (t *tooLarge) Error() string { return fmt.Sprintf("message of %d bytes over the limit", t.length) }

// skip discards n bytes through the reader's own buffer.
func (g *guardedStream) skip(n int64) error {
	for n > 0 {
		k, err := g.in.Discard(int(min(n, 1<<30)))
		n -= int64(k)
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readFrame reads one header block and its body.
func (g *guardedStream) readFrame() ([]byte, int64, error) {
	if cap(g.body) > keepBodyBuffer {
		g.body = nil // one large didOpen does not pin its buffer for the connection's life
	}
	length, headerLen, err := readHeader(g.in)
	if err != nil {
		return nil, 0, err
	}
	if length > int64(maxMessageBytes) {
		big := &tooLarge{length: length, id: json.RawMessage("null")}
		if prefix, _ := g.in.Peek(int(min(length, idProbeBytes))); len(prefix) > 0 {
			big.id = probeID(prefix)
		}
		return nil, 0, big
	}
	// Grow with what arrives: a peer that declares much and sends little costs little.
	n := int(length)
	buf := g.body[:0]
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(n, max(2*cap(buf), firstBodyChunk)))
			copy(grown, buf)
			buf = grown
		}
		end := min(cap(buf), n)
		if _, err := io.ReadFull(g.in, buf[len(buf):end]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, 0, err
		}
		buf = buf[:end]
	}
	g.body = buf
	return buf, headerLen + length, nil
}

// readHeader reads an LSP header block and returns its Content-Length and the header's size. A
// malformed block is jsonrpc2.ErrInvalidHeader; EOF before any byte is io.EOF.
func readHeader(r *bufio.Reader) (length, size int64, err error) {
	have := false
	for lines := 0; ; lines++ {
		if lines == maxHeaderLines {
			return 0, 0, jsonrpc2.ErrInvalidHeader
		}
		line, err := r.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			return 0, 0, jsonrpc2.ErrInvalidHeader // a header line longer than the buffer
		case err == io.EOF && lines == 0 && len(line) == 0:
			return 0, 0, io.EOF
		case err == io.EOF:
			return 0, 0, io.ErrUnexpectedEOF
		case err != nil:
			return 0, 0, err
		}
		size += int64(len(line))
		text := strings.TrimRight(string(line), "\r\n")
		if text == "" {
			break
		}
		name, value, ok := strings.Cut(text, ":")
		if !ok {
			return 0, 0, jsonrpc2.ErrInvalidHeader
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			if err != nil || n <= 0 {
				return 0, 0, jsonrpc2.ErrInvalidHeader
			}
			length, have = n, true
		}
	}
	if !have {
		return 0, 0, jsonrpc2.ErrInvalidHeader
	}
	return length, size, nil
}

// probeID finds the id of a message from its first bytes, when it comes before anything that does
// not fit in them; otherwise null.
func probeID(prefix []byte) json.RawMessage {
	null := json.RawMessage("null")
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return null
	}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return null
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return null
		}
		if key != "id" {
			continue
		}
		var id any
		if json.Unmarshal(value, &id) != nil {
			return null
		}
		switch id.(type) {
		case string, float64:
			return value
		}
		return null
	}
	return null
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
