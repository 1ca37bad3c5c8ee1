package rpc

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// allocatedSince reports the bytes allocated (process-wide) since before.
func allocatedSince(before runtime.MemStats) uint64 {
	var now runtime.MemStats
	runtime.ReadMemStats(&now)
	return now.TotalAlloc - before.TotalAlloc
}

func memNow() runtime.MemStats {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m
}

// A frame declaring 2^30 bytes is answered with an error as soon as its header arrives, and the
// 64 MiB the peer then sends stream past without being buffered.
func TestDeclaredGiantFrameIsRefusedAndMemoryStaysBounded(t *testing.T) {
	c, conn := serve(t, &recHandler{})
	const declared, sent = 1 << 30, 64 << 20
	head := `{"jsonrpc":"2.0","id":42,"method":"echo","params":{"text":"`
	chunk := bytes.Repeat([]byte("a"), 1<<20)

	before := memNow()
	wrote := make(chan error, 1)
	go func() {
		c.c.SetWriteDeadline(time.Now().Add(60 * time.Second))
		if _, err := fmt.Fprintf(c.c, "Content-Length: %d\r\n\r\n%s", declared, head); err != nil {
			wrote <- err
			return
		}
		for n := len(head); n < sent; n += len(chunk) {
			if _, err := c.c.Write(chunk); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	m := c.read()
	if errCode(m) != -32600 || m["id"] != 42.0 {
		t.Fatalf("answer to a 1 GiB frame = %v, want error -32600 for id 42", m)
	}
	if msg := m["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "limit") {
		t.Errorf("error message %q does not name the limit", msg)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("the daemon stopped reading the body: %v", err)
	}
	// Every byte written over net.Pipe has been read by the daemon by now.
	if got := allocatedSince(before); got > 16<<20 {
		t.Errorf("the daemon allocated %d MiB for a frame it refused (64 MiB sent)", got>>20)
	}
	c.c.Close()
	select {
	case <-conn.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("connection did not end after the peer closed mid-frame")
	}
}

// A body buffer grows with the bytes that arrive, not with the length the header declares.
func TestBodyBufferFollowsArrivingBytes(t *testing.T) {
	c, conn := serve(t, &recHandler{})
	payload := bytes.Repeat([]byte("b"), 1<<20)
	before := memNow()
	c.write(fmt.Sprintf("Content-Length: %d\r\n\r\n", 60<<20))
	c.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write(payload); err != nil { // returns once the daemon has read it all
		t.Fatal(err)
	}
	if got := allocatedSince(before); got > 8<<20 {
		t.Errorf("the daemon allocated %d MiB after receiving 1 MiB of a frame declaring 60 MiB", got>>20)
	}
	c.c.Close()
	select {
	case <-conn.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("connection did not end")
	}
}

// An oversized message is skipped whole: the connection reads on, and the answer carries the id
// when it is among the message's first bytes.
func TestOversizedMessageKeepsTheConnection(t *testing.T) {
	defer func(old int) { maxMessageBytes = old }(maxMessageBytes)
	maxMessageBytes = 1 << 10
	c, _ := serve(t, &recHandler{})
	pad := strings.Repeat("x", 4<<10)
	cases := []struct {
		name, body string
		id         any
	}{
		{"id first", `{"jsonrpc":"2.0","id":7,"method":"echo","params":{"p":"` + pad + `"}}`, 7.0},
		{"string id", `{"jsonrpc":"2.0","id":"seven","method":"echo","params":{"p":"` + pad + `"}}`, "seven"},
		{"id after the params", `{"jsonrpc":"2.0","method":"echo","params":{"p":"` + pad + `"},"id":8}`, nil},
		{"notification", `{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"p":"` + pad + `"}}`, nil},
	}
	for _, tc := range cases {
		c.send(tc.body)
		m := c.read()
		if errCode(m) != -32600 || m["id"] != tc.id {
			t.Errorf("%s: answer with error %d and id %v, want -32600 with id %v", tc.name, errCode(m), m["id"], tc.id)
		}
	}
	c.send(`{"jsonrpc":"2.0","id":9,"method":"echo","params":{"ok":true}}`)
	if m := c.read(); m["id"] != 9.0 || m["result"].(map[string]any)["ok"] != true {
		t.Fatalf("connection broken after oversized messages: %v", m)
	}
}

// A message right at the cap is delivered.
func TestMessageAtTheCapIsDelivered(t *testing.T) {
	defer func(old int) { maxMessageBytes = old }(maxMessageBytes)
	maxMessageBytes = 1 << 10
	c, _ := serve(t, &recHandler{})
	body := `{"jsonrpc":"2.0","id":3,"method":"echo","params":{"p":"`
	body += strings.Repeat("y", maxMessageBytes-len(body)-3) + `"}}`
	if len(body) != maxMessageBytes {
		t.Fatalf("test body is %d bytes", len(body))
	}
	c.send(body)
	if m := c.read(); m["id"] != 3.0 || m["result"] == nil {
		t.Fatalf("a message of exactly the cap was refused: %v", errCode(m))
	}
}

// Header lines are bounded: an endless line or endless header ends the connection without
// buffering it.
func TestEndlessHeaderEndsTheConnection(t *testing.T) {
	for name, raw := range map[string]string{
		"long line":    "Content-Length: 2\r\nX-Junk: " + strings.Repeat("z", 64<<10),
		"many fields":  "Content-Length: 2\r\n" + strings.Repeat("X-A: b\r\n", 100),
		"no separator": "Content-Length 2\r\n\r\n{}",
	} {
		a, b := net.Pipe()
		conn := NewConn(a)
		conn.Go(&recHandler{})
		go func() {
			b.SetWriteDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(b, raw)
		}()
		select {
		case <-conn.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: connection did not end", name)
		}
		b.Close()
	}
}
