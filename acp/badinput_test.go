package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/policy"
)

// peer is a test client over pipes.
type peer struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func newPeer(t *testing.T, rt *Runtime) *peer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &peer{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	p.out.Buffer(nil, 16<<20)
	go func() {
		p.done <- Serve(context.Background(), rt, inR, outW, Options{Version: "test"})
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close() })
	return p
}

func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// next returns the next message agentd sent, failing after 20 s naming what was awaited.
func (p *peer) next(what string) map[string]any {
	p.t.Helper()
	ch := make(chan map[string]any, 1)
	go func() {
		if !p.out.Scan() {
			ch <- nil
			return
		}
		var m map[string]any
		if err := json.Unmarshal(p.out.Bytes(), &m); err != nil {
			m = map[string]any{"unparsable": p.out.Text()}
		}
		ch <- m
	}()
	select {
	case m := <-ch:
		if m == nil {
			p.t.Fatalf("agentd closed its output while the test waited for %s", what)
		}
		return m
	case <-time.After(20 * time.Second):
		p.t.Fatalf("no message from agentd within 20 s while waiting for %s", what)
	}
	return nil
}

// until skips notifications until a message satisfying ok arrives.
func (p *peer) until(what string, ok func(map[string]any) bool) map[string]any {
	p.t.Helper()
	for {
		if m := p.next(what); ok(m) {
			return m
		}
	}
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

func isResponse(id float64) func(map[string]any) bool {
	return func(m map[string]any) bool { v, ok := m["id"].(float64); return ok && v == id && m["method"] == nil }
}

func TestBadInputWithoutSessions(t *testing.T) {
	p := newPeer(t, nil)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	if m := p.next("the answer to session/new before initialize"); errCode(m) != codeInvalidRequest || !strings.Contains(m["error"].(map[string]any)["message"].(string), "initialize") {
		t.Fatalf("session/new before initialize: %v", m)
	}
	p.send(`this is not json`)
	if m := p.next("the parse error"); errCode(m) != codeParse || m["id"] != nil {
		t.Fatalf("malformed line: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":99}}`)
	m := p.next("the initialize response")
	if res, _ := m["result"].(map[string]any); res == nil || res["protocolVersion"] != float64(ProtocolVersion) {
		t.Fatalf("initialize with an unknown version should answer ours: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","id":3,"method":"session/fly","params":{}}`)
	if m := p.next("the unknown method's error"); errCode(m) != codeMethodNotFound {
		t.Fatalf("unknown method: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s-nope","prompt":[{"type":"text","text":"hi"}]}}`)
	if m := p.next("the unknown session's error"); errCode(m) != codeInvalidParams {
		t.Fatalf("prompt to an unknown session: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}`)
	if m := p.next("the relative cwd's error"); errCode(m) != codeInvalidParams {
		t.Fatalf("relative cwd: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-nope"}}`) // ignored
	p.send(`{"jsonrpc":"2.0","id":6,"method":"session/set_mode","params":{"sessionId":"s-nope","modeId":"yolo"}}`)
	if m := p.next("the set_mode error"); errCode(m) != codeInvalidParams {
		t.Fatalf("set_mode on an unknown session: %v", m)
	}
	p.in.Close()
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return within 20 s after stdin closed")
	}
}

func TestPromptText(t *testing.T) {
	raw := func(s ...string) []json.RawMessage {
		var out []json.RawMessage
		for _, x := range s {
			out = append(out, json.RawMessage(x))
		}
		return out
	}
	got, err := promptText(raw(`{"type":"text","text":"look at"}`, `{"type":"resource_link","name":"a.go","uri":"file:///w/a.go"}`,
		`{"type":"resource","resource":{"uri":"file:///w/b.go","text":"x := 1\n"}}`))
	if err != nil || !strings.Contains(got, "@/w/a.go") || !strings.Contains(got, "Context from /w/b.go") || !strings.Contains(got, "x := 1") {
		t.Fatalf("promptText = %q, %v", got, err)
	}
	for _, bad := range [][]json.RawMessage{raw(`{"type":"image","data":"AA==","mimeType":"image/png"}`), raw(`{"type":"text","text":"  "}`),
		raw(`{"type":"resource","resource":{"uri":"file:///x","blob":"AA=="}}`), raw(`{"type":"what"}`)} {
		if _, err := promptText(bad); err == nil || err.Code != codeInvalidParams {
			t.Errorf("promptText(%s) = %v, want invalid params", bad, err)
		}
	}
}

// sessionFixture is a runtime over a fake Ollama whose edit call waits for a permission.
func sessionFixture(t *testing.T) (*peer, string, string) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := ollamatest.NewServer(&ollamatest.Script{Turns: []ollamatest.Turn{
		{When: &ollamatest.Match{LastRole: "user"}, Reply: ollamatest.Reply{ToolCalls: []ollamatest.ToolCall{
			{Name: "write", Arguments: json.RawMessage(`{"path": "b.txt", "content": "two\n"}`)}}}},
		{Repeat: true, Reply: ollamatest.Reply{Text: "done"}},
	}})
	t.Cleanup(fake.Close)
	conf := filepath.Join(home, "config")
	rt, err := harness.NewRuntime(harness.Options{Version: "test", OllamaHost: fake.URL, Model: "qwen3:8b",
		StateDir: filepath.Join(home, "state"), BuildCache: filepath.Join(home, "cache"),
		Policy: policy.Locations{ConfigDir: conf, StateDir: filepath.Join(home, "state")}})
	if err != nil {
		t.Fatal(err)
	}
	p, sid := newSession(t, rt, ws)
	return p, sid, ws
}

// newSession starts an ACP connection on rt (it and the runtime end with the test), initializes
// it (request 1) and opens a session on ws (request 2).
func newSession(t *testing.T, rt *Runtime, ws string) (*peer, string) {
	t.Helper()
	p := newPeer(t, rt)
	t.Cleanup(func() { p.in.Close(); <-p.done; rt.Close() })
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	p.until("the initialize response", isResponse(1))
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"` + ws + `","mcpServers":[]}}`)
	m := p.until("the session/new response", isResponse(2))
	res, _ := m["result"].(map[string]any)
	sid, _ := res["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v", m)
	}
	return p, sid
}

func TestSecondPromptAndUnknownOptionFailClosed(t *testing.T) {
	p, sid, ws := sessionFixture(t)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"change it"}]}}`)
	perm := p.until("the permission request", func(m map[string]any) bool { return m["method"] == "session/request_permission" })
	p.send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"again"}]}}`)
	if m := p.until("the second prompt's error", isResponse(4)); errCode(m) != codeInvalidRequest {
		t.Fatalf("a second prompt while one runs: %v", m)
	}
	id, _ := json.Marshal(perm["id"])
	p.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow_everything"}}}`)
	end := p.until("the prompt's response", isResponse(3))
	if res, _ := end["result"].(map[string]any); res == nil || res["stopReason"] != "end_turn" {
		t.Fatalf("prompt response: %v", end)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("an unknown option id must reject the write, but b.txt exists (%v)", err)
	}
}

func TestStdinClosedMidTurn(t *testing.T) {
	p, sid, ws := sessionFixture(t)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"change it"}]}}`)
	p.until("the permission request", func(m map[string]any) bool { return m["method"] == "session/request_permission" })
	p.in.Close()
	go func() {
		for p.out.Scan() { // drain what agentd still writes
		}
	}()
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return within 20 s after stdin closed mid-turn")
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("nothing may be written without an answer, but b.txt exists (%v)", err)
	}
	p.done <- nil // for the cleanup
	// The journal is complete: the turn's prompt and its end are there.
	st, err := os.ReadFile(filepath.Join(filepath.Dir(ws), "state", "sessions", sid+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(st), "change it") || !strings.Contains(string(st), `"turnEnd"`) {
		t.Fatalf("the journal lacks the turn or its end:\n%s", st)
	}
}
