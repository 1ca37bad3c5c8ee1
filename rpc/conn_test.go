package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// recHandler records notifications and serves a few calls.
type recHandler struct {
	mu        sync.Mutex
	notes     []string
	cancelled chan struct{}
	started   chan struct{}
}

func (h *recHandler) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "echo":
		var v map[string]any
		if err := Decode(params, &v); err != nil {
			return nil, err
		}
		return v, nil
	case "block":
		close(h.started)
		<-ctx.Done()
		close(h.cancelled)
		return nil, ctx.Err()
	case "typed":
		var p SessionPromptParams
		if err := DecodeStrict(params, &p); err != nil {
			return nil, err
		}
		return SessionPromptResult{TurnID: "t1"}, nil
	}
	return nil, ErrMethodNotFound
}

func (h *recHandler) Notify(ctx context.Context, method string, params json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notes = append(h.notes, method+" "+string(params))
}

// rawClient speaks the wire protocol by hand.
type rawClient struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

func serve(t *testing.T, h Handler) (*rawClient, *Conn) {
	t.Helper()
	a, b := net.Pipe()
	conn := NewConn(a)
	conn.Go(h)
	t.Cleanup(func() { b.Close(); conn.Close() })
	return &rawClient{t: t, c: b, rd: bufio.NewReader(b)}, conn
}

func (r *rawClient) send(body string) {
	r.t.Helper()
	r.write(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
}

func (r *rawClient) write(raw string) {
	r.t.Helper()
	r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(r.c, raw); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

func (r *rawClient) read() map[string]any {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n := -1
	for {
		line, err := r.rd.ReadString('\n')
		if err != nil {
			r.t.Fatalf("read header: %v", err)
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.rd, body); err != nil {
		r.t.Fatalf("read body: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		r.t.Fatalf("bad response %s: %v", body, err)
	}
	return m
}

func errCode(m map[string]any) int {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return 0
	}
	return int(e["code"].(float64))
}

func TestConnSurvivesBadInput(t *testing.T) {
	h := &recHandler{}
	c, _ := serve(t, h)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}`)
	if m := c.read(); m["result"].(map[string]any)["a"] != 1.0 {
		t.Fatalf("echo = %v", m)
	}
	cases := []struct {
		name, body string
		code       int
	}{
		{"garbage", `{{{ not json`, -32700},
		{"unknown method", `{"jsonrpc":"2.0","id":2,"method":"nope/never"}`, -32601},
		{"wrong param types", `{"jsonrpc":"2.0","id":3,"method":"typed","params":{"sessionId":5}}`, -32602},
		{"unknown field", `{"jsonrpc":"2.0","id":4,"method":"typed","params":{"sessionId":"s","text":"x","bogus":1}}`, -32602},
		{"params not an object", `{"jsonrpc":"2.0","id":5,"method":"typed","params":"hello"}`, -32602},
	}
	for _, tc := range cases {
		c.send(tc.body)
		if m := c.read(); errCode(m) != tc.code {
			t.Errorf("%s: response %v, want error %d", tc.name, m, tc.code)
		}
	}
	// The connection still works.
	c.send(`{"jsonrpc":"2.0","id":9,"method":"echo","params":{"ok":true}}`)
	if m := c.read(); m["result"].(map[string]any)["ok"] != true {
		t.Fatalf("connection broken after bad input: %v", m)
	}
}

func TestNotificationsKeepWireOrder(t *testing.T) {
	h := &recHandler{}
	c, _ := serve(t, h)
	for i := range 300 {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"n":%d}}`, i))
	}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}`)
	c.read()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.mu.Lock()
		n := len(h.notes)
		h.mu.Unlock()
		if n == 300 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, n := range h.notes {
		if n != fmt.Sprintf(`textDocument/didChange {"n":%d}`, i) {
			t.Fatalf("notification %d = %s", i, n)
		}
	}
	if len(h.notes) != 300 {
		t.Fatalf("%d notifications", len(h.notes))
	}
}

func TestCancelRequestCancelsTheHandler(t *testing.T) {
	for _, id := range []string{`7`, `"seven"`} {
		h := &recHandler{started: make(chan struct{}), cancelled: make(chan struct{})}
		c, _ := serve(t, h)
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"block"}`)
		<-h.started
		c.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":` + id + `}}`)
		select {
		case <-h.cancelled:
		case <-time.After(5 * time.Second):
			t.Fatalf("id %s: handler not cancelled", id)
		}
		if m := c.read(); errCode(m) != -32800 {
			t.Errorf("id %s: response %v, want -32800", id, m)
		}
	}
}

func TestDisconnectCancelsInFlightHandlers(t *testing.T) {
	h := &recHandler{started: make(chan struct{}), cancelled: make(chan struct{})}
	c, conn := serve(t, h)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	<-h.started
	c.c.Close()
	select {
	case <-h.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("handler survived the client's disconnect")
	}
	select {
	case <-conn.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("connection did not end")
	}
}

func TestTruncatedAndOversizedFramesEndOnlyThatConnection(t *testing.T) {
	for _, raw := range []string{
		"Content-Length: 100\r\n\r\n{\"jsonrpc\":\"2.0\"}", // body shorter than announced, then EOF
		"Content-Length: abc\r\n\r\n{}",
		"Content-Length: 99999999999999999999\r\n\r\n{}",
		"no header at all\r\n\r\n",
	} {
		h := &recHandler{}
		c, conn := serve(t, h)
		c.write(raw)
		c.c.Close()
		select {
		case <-conn.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("connection hung on %q", raw)
		}
	}
}

func TestDecisionDecodingIsStrict(t *testing.T) {
	good := []string{
		`{"reviewId":"r","decision":{"type":"accept"}}`,
		`{"reviewId":"r","decision":{"type":"accept","hunks":["a","b"]}}`,
		`{"reviewId":"r","decision":{"type":"accept","hunks":["a"],"reason":"not the second one"}}`,
		`{"reviewId":"r","decision":{"type":"acceptForSession","scope":{"kind":"command","commandPrefix":["go","test"]}}}`,
		`{"reviewId":"r","decision":{"type":"reject"}}`,
		`{"reviewId":"r","decision":{"type":"reject","reason":"no"}}`,
		`{"reviewId":"r","decision":{"type":"cancelTurn"}}`,
	}
	bad := []string{
		`{"reviewId":"r","decision":{"type":"accept","extra":1}}`,
		`{"reviewId":"r","decision":{"type":"accept"},"extra":1}`,
		`{"reviewId":"r","decision":{"type":"approve"}}`,
		`{"reviewId":"r","decision":{}}`,
		`{"decision":{"type":"accept"}}`,
		`{"reviewId":"r","decision":{"type":"accept","hunks":[]}}`,
		`{"reviewId":"r","decision":{"type":"accept","hunks":["a","a"]}}`,
		`{"reviewId":"r","decision":{"type":"accept","reason":"x"}}`,
		`{"reviewId":"r","decision":{"type":"accept","hunks":["a"],"scope":{"kind":"tool","tool":"x"}}}`,
		`{"reviewId":"r","decision":{"type":"reject","hunks":["a"]}}`,
		`{"reviewId":"r","decision":{"type":"acceptForSession"}}`,
		`{"reviewId":"r","decision":{"type":"acceptForSession","scope":{"kind":"tool"}}}`,
		`{"reviewId":"r","decision":{"type":"acceptForSession","scope":{"kind":"path","pathPrefix":"a","tool":"x"}}}`,
		`{"reviewId":"r","decision":{"type":"acceptForSession","scope":{"kind":"everything"}}}`,
		`{"reviewId":"r","decision":{"type":"cancelTurn","reason":"x"}}`,
		`{"reviewId":"r","decision":{"type":"accept"}} {}`,
		`{"reviewId":"r","decision":{"type":"ACCEPT"}}`,
	}
	for _, g := range good {
		if _, err := DecodeDecide(json.RawMessage(g)); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
	for _, b := range bad {
		if _, err := DecodeDecide(json.RawMessage(b)); err == nil {
			t.Errorf("%s: accepted", b)
		}
	}
}

func FuzzDecodeDecide(f *testing.F) {
	f.Add(`{"reviewId":"r","decision":{"type":"accept","hunks":["a"]}}`)
	f.Add(`{"reviewId":"r","decision":{"type":"acceptForSession","scope":{"kind":"path","pathPrefix":"src/"}}}`)
	f.Add(`{"reviewId":"r","decision":{"type":"reject","reason":"x"}}`)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodeDecide(json.RawMessage(s))
		if err != nil {
			return
		}
		// Whatever decodes is a valid member of the closed set.
		if p.ReviewID == "" || p.Decision.Validate() != nil {
			t.Fatalf("accepted an invalid decision: %s", s)
		}
		switch p.Decision.Type {
		case DecisionAccept, DecisionAcceptForSession, DecisionReject, DecisionCancelTurn:
		default:
			t.Fatalf("accepted type %q", p.Decision.Type)
		}
	})
}

func FuzzFraming(f *testing.F) {
	f.Add([]byte("Content-Length: 2\r\n\r\n{}"))
	f.Add([]byte("Content-Length: 58\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":{\"a\":1}}"))
	f.Add([]byte("Content-Length: 10\r\n\r\n{\"jsonrpc\""))
	f.Add([]byte("Content-Type: x\r\nContent-Length: 2\r\n\r\n[]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := net.Pipe()
		conn := NewConn(a)
		conn.Go(&recHandler{})
		go io.Copy(io.Discard, b) // responses
		b.SetWriteDeadline(time.Now().Add(2 * time.Second))
		b.Write(data)
		b.Close()
		select {
		case <-conn.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("connection hung on %q", data)
		}
	})
}

// arrivalHandler answers each call with its Arrival.
type arrivalHandler struct{}

func (arrivalHandler) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return Arrival(ctx), nil
}
func (arrivalHandler) Notify(context.Context, string, json.RawMessage) {}

// TestArrivalCountsCallsInWireOrder: calls are numbered in the order they arrived, whatever order
// their handlers run in; notifications take no number.
func TestArrivalCountsCallsInWireOrder(t *testing.T) {
	c, _ := serve(t, arrivalHandler{})
	for i := 1; i <= 5; i++ {
		c.send(`{"jsonrpc":"2.0","method":"note"}`)
		c.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(100-i) + `,"method":"x"}`)
	}
	got := map[float64]float64{}
	for range 5 {
		m := c.read()
		got[m["id"].(float64)] = m["result"].(float64)
	}
	for i := 1; i <= 5; i++ {
		if got[float64(100-i)] != float64(i) {
			t.Errorf("arrivals by id: %v", got)
			break
		}
	}
}
