package ollama_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/tools"
)

const testModel = "qwen3:8b"

func fakeServer(t *testing.T, models ...ollamatest.Model) *ollamatest.Server {
	t.Helper()
	srv := ollamatest.NewServer(&ollamatest.Script{Models: models})
	t.Cleanup(srv.Close)
	return srv
}

func userRequest(content string) *agent.ModelRequest {
	return &agent.ModelRequest{
		Messages:   []agent.Message{{Role: agent.RoleSystem, Content: "You are agentd."}, {Role: agent.RoleUser, Content: content}},
		NumCtx:     8192,
		NumPredict: 1024,
	}
}

func lastChat(t *testing.T, srv *ollamatest.Server) ollamatest.ChatRecord {
	t.Helper()
	rec, ok := srv.LastChat()
	if !ok {
		t.Fatal("no chat request reached the server")
	}
	return rec
}

func TestChatText(t *testing.T) {
	srv := fakeServer(t)
	srv.Enqueue(ollamatest.Reply{Text: "Hello there, world.", PromptEvalCount: 120, EvalCount: 3})
	c := newClient(t, srv.URL, testModel, fastRetry)
	res := runChat(context.Background(), c, userRequest("hi"))
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := &agent.ModelResponse{
		Message:    agent.Message{Role: agent.RoleAssistant, Content: "Hello there, world."},
		DoneReason: "stop",
		Usage: agent.Usage{PromptTokens: 120, OutputTokens: 3, PromptDuration: 2 * time.Millisecond,
			OutputDuration: 3 * time.Millisecond, LoadDuration: time.Millisecond, TotalDuration: 6 * time.Millisecond},
	}
	if !reflect.DeepEqual(res.resp, want) {
		t.Errorf("response\n got %+v\nwant %+v", res.resp, want)
	}
	wantDeltas := []agent.Delta{{Text: "Hello"}, {Text: " there,"}, {Text: " world."}}
	if !reflect.DeepEqual(res.deltas, wantDeltas) {
		t.Errorf("deltas %+v", res.deltas)
	}
}

func TestChatThinkingDeltasAreSeparate(t *testing.T) {
	srv := fakeServer(t, ollamatest.Model{Name: testModel, Capabilities: []string{"completion", "tools", "thinking"}})
	srv.Enqueue(ollamatest.Reply{Chunks: []ollamatest.Chunk{
		{Thinking: "Let me"}, {Thinking: " think.\n"}, {Content: "It is"}, {Content: " 42."},
	}})
	c := newClient(t, srv.URL, testModel, fastRetry)
	req := userRequest("answer?")
	req.Think = true
	res := runChat(context.Background(), c, req)
	if res.err != nil {
		t.Fatal(res.err)
	}
	wantDeltas := []agent.Delta{{Thinking: "Let me"}, {Thinking: " think.\n"}, {Text: "It is"}, {Text: " 42."}}
	if !reflect.DeepEqual(res.deltas, wantDeltas) {
		t.Errorf("deltas %+v", res.deltas)
	}
	if m := res.resp.Message; m.Thinking != "Let me think.\n" || m.Content != "It is 42." {
		t.Errorf("message %+v", m)
	}
}

func TestChatSendsThinkExplicitly(t *testing.T) {
	srv := fakeServer(t, ollamatest.Model{Name: testModel, Capabilities: []string{"completion", "thinking"}})
	srv.AddTurns(ollamatest.Turn{Repeat: true, Reply: ollamatest.Text("ok")})
	c := newClient(t, srv.URL, testModel, fastRetry)
	for _, think := range []bool{false, true} {
		req := userRequest("hi")
		req.Think = think
		if res := runChat(context.Background(), c, req); res.err != nil {
			t.Fatal(res.err)
		}
		var body struct {
			Think *bool `json:"think"`
		}
		json.Unmarshal(lastChat(t, srv).Body, &body)
		if body.Think == nil || *body.Think != think {
			t.Errorf("think %v sent as %s", think, lastChat(t, srv).Body)
		}
	}
}

func TestChatOptionsOnEveryRequest(t *testing.T) {
	srv := fakeServer(t)
	srv.AddTurns(ollamatest.Turn{Repeat: true, Reply: ollamatest.Text("ok")})
	c := newClient(t, srv.URL, testModel, fastRetry)
	for range 3 {
		if res := runChat(context.Background(), c, userRequest("hi")); res.err != nil {
			t.Fatal(res.err)
		}
	}
	chats := srv.Chats()
	if len(chats) != 3 {
		t.Fatalf("%d requests", len(chats))
	}
	for i, rec := range chats {
		if rec.NumCtx() != 8192 || rec.NumPredict() != 1024 {
			t.Errorf("request %d: num_ctx %d num_predict %d", i, rec.NumCtx(), rec.NumPredict())
		}
		if r := rec.Request; r.Truncate == nil || *r.Truncate || r.Shift == nil || *r.Shift {
			t.Errorf("request %d: truncate/shift not false: %s", i, rec.Body)
		}
		if r := rec.Request; r.Model != testModel || r.Stream != nil && !*r.Stream {
			t.Errorf("request %d: model %q stream %v", i, r.Model, r.Stream)
		}
		checkInvariants(t, rec.Body)
	}
}

func TestChatNumPredictUnset(t *testing.T) {
	srv := fakeServer(t)
	srv.Enqueue(ollamatest.Text("ok"))
	c := newClient(t, srv.URL, testModel, fastRetry)
	req := userRequest("hi")
	req.NumPredict = 0
	if res := runChat(context.Background(), c, req); res.err != nil {
		t.Fatal(res.err)
	}
	if got := lastChat(t, srv).NumPredict(); got != -1 {
		t.Errorf("num_predict %d, want -1 (explicitly unlimited)", got)
	}
}

func TestChatNeedsNumCtx(t *testing.T) {
	srv := fakeServer(t)
	c := newClient(t, srv.URL, testModel, fastRetry)
	req := userRequest("hi")
	req.NumCtx = 0
	res := runChat(context.Background(), c, req)
	modelError(t, res.err, agent.ErrBadRequest)
	if len(srv.Chats()) != 0 {
		t.Error("a request without num_ctx reached the server")
	}
}

func TestChatTools(t *testing.T) {
	srv := fakeServer(t)
	srv.AddTurns(ollamatest.Turn{Repeat: true, Reply: ollamatest.Text("ok")})
	c := newClient(t, srv.URL, testModel, fastRetry)

	// nil: no tools key at all.
	if res := runChat(context.Background(), c, userRequest("hi")); res.err != nil {
		t.Fatal(res.err)
	}
	var raw map[string]json.RawMessage
	json.Unmarshal(lastChat(t, srv).Body, &raw)
	if _, ok := raw["tools"]; ok {
		t.Errorf("tools sent for a nil tool list: %s", raw["tools"])
	}

	// Non-nil: converted, constraints dropped, order kept.
	req := userRequest("hi")
	req.Tools = []tools.Definition{
		{Name: "read_file", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object",` +
			`"properties":{"path":{"type":"string","description":"File path","minLength":1},` +
			`"range":{"type":"array","items":{"type":"integer","minimum":1},"maxItems":2},` +
			`"mode":{"type":["string","null"],"enum":["text","hex"],"default":"text"}},` +
			`"required":["path"],"additionalProperties":false}`)},
		{Name: "list", Description: "List", Parameters: nil},
	}
	if res := runChat(context.Background(), c, req); res.err != nil {
		t.Fatal(res.err)
	}
	json.Unmarshal(lastChat(t, srv).Body, &raw)
	want := `[{"type":"function","function":{"name":"read_file","description":"Read a file","parameters":{"type":"object","required":["path"],` +
		`"properties":{"path":{"type":"string","description":"File path"},"range":{"type":"array","items":{"minimum":1,"type":"integer"}},` +
		`"mode":{"type":["string","null"],"enum":["text","hex"]}}}}},` +
		`{"type":"function","function":{"name":"list","description":"List","parameters":{"type":"object","properties":{}}}}]`
	if got := string(raw["tools"]); got != want {
		t.Errorf("tools\n got %s\nwant %s", got, want)
	}

	// A schema that is not JSON is a bad request, not a panic or a silent drop.
	req.Tools = []tools.Definition{{Name: "bad", Parameters: json.RawMessage(`{"type":`)}}
	res := runChat(context.Background(), c, req)
	modelError(t, res.err, agent.ErrBadRequest)
}

func TestChatNativeToolCalls(t *testing.T) {
	srv := fakeServer(t)
	srv.Enqueue(ollamatest.Reply{
		Text: "Reading.",
		ToolCalls: []ollamatest.ToolCall{
			{ID: "call_abcdefgh", Name: "read_file", Arguments: json.RawMessage(`{"z":"last first","a":[1,2],"n":{"y":1,"b":2},"code":"a < b && c"}`)},
			ollamatest.Call("get_time", ""),
		},
	})
	c := newClient(t, srv.URL, testModel, fastRetry)
	res := runChat(context.Background(), c, userRequest("go"))
	if res.err != nil {
		t.Fatal(res.err)
	}
	calls := res.resp.Message.ToolCalls
	if len(calls) != 2 {
		t.Fatalf("calls %+v", calls)
	}
	// Top-level key order is the server's; nested objects are re-encoded with sorted keys.
	if calls[0].ID != "call_abcdefgh" || calls[0].Name != "read_file" ||
		string(calls[0].Arguments) != `{"z":"last first","a":[1,2],"n":{"b":2,"y":1},"code":"a < b && c"}` {
		t.Errorf("call 0: %+v (%s)", calls[0], calls[0].Arguments)
	}
	if !strings.HasPrefix(calls[1].ID, "call_") || len(calls[1].ID) != 13 || calls[1].Name != "get_time" || string(calls[1].Arguments) != `{}` {
		t.Errorf("call 1: %+v (%s)", calls[1], calls[1].Arguments)
	}
	if res.resp.Message.Content != "Reading." {
		t.Errorf("content %q", res.resp.Message.Content)
	}
}

func TestChatSendsHistory(t *testing.T) {
	srv := fakeServer(t)
	srv.Enqueue(ollamatest.Text("ok"))
	c := newClient(t, srv.URL, testModel, fastRetry)
	img := []byte{0x89, 'P', 'N', 'G'}
	req := &agent.ModelRequest{NumCtx: 8192, Messages: []agent.Message{
		{Role: agent.RoleUser, Content: "look", Images: [][]byte{img}},
		{Role: agent.RoleAssistant, Thinking: "hmm", ToolCalls: []agent.ToolCall{
			{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go","line":3}`)},
			{ID: "call_2", Name: "get_weather", Arguments: json.RawMessage(`"{\"city\":\"Paris\"}"`)}, // printed as a string
			{ID: "call_3", Name: "broken", Arguments: json.RawMessage(`not json`)},
		}},
		{Role: agent.RoleTool, ToolCallID: "call_1", ToolName: "read_file", Content: "package a"},
	}}
	if res := runChat(context.Background(), c, req); res.err != nil {
		t.Fatal(res.err)
	}
	body := lastChat(t, srv).Body
	checkArgumentsAreObjects(t, body)
	var sent struct {
		Messages []json.RawMessage `json:"messages"`
	}
	json.Unmarshal(body, &sent)
	want := []string{
		`{"role":"user","content":"look","images":["` + base64.StdEncoding.EncodeToString(img) + `"]}`,
		`{"role":"assistant","content":"","thinking":"hmm","tool_calls":[` +
			`{"id":"call_1","function":{"index":0,"name":"read_file","arguments":{"path":"a.go","line":3}}},` +
			`{"id":"call_2","function":{"index":1,"name":"get_weather","arguments":{"city":"Paris"}}},` +
			`{"id":"call_3","function":{"index":2,"name":"broken","arguments":{}}}]}`,
		`{"role":"tool","content":"package a","tool_name":"read_file","tool_call_id":"call_1"}`,
	}
	if len(sent.Messages) != len(want) {
		t.Fatalf("messages %s", body)
	}
	for i := range want {
		if string(sent.Messages[i]) != want[i] {
			t.Errorf("message %d\n got %s\nwant %s", i, sent.Messages[i], want[i])
		}
	}
}

// TestChatPrefixIsByteStable: with an append-only history the next request starts with the same
// bytes (messages and tools), so Ollama's prompt cache is reused.
func TestChatPrefixIsByteStable(t *testing.T) {
	srv := fakeServer(t)
	srv.Enqueue(ollamatest.Calls(ollamatest.Call("get_weather", `{"city":"Paris","days":2}`)), ollamatest.Text("Sunny."))
	c := newClient(t, srv.URL, testModel, fastRetry)
	req := userRequest("weather?")
	req.Tools = weatherTools
	res := runChat(context.Background(), c, req)
	if res.err != nil {
		t.Fatal(res.err)
	}
	tc := res.resp.Message.ToolCalls[0]
	req.Messages = append(req.Messages, res.resp.Message,
		agent.Message{Role: agent.RoleTool, ToolCallID: tc.ID, ToolName: tc.Name, Content: `{"sky":"sunny"}`})
	if res := runChat(context.Background(), c, req); res.err != nil {
		t.Fatal(res.err)
	}
	chats := srv.Chats()
	var first, second struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    json.RawMessage   `json:"tools"`
	}
	json.Unmarshal(chats[0].Body, &first)
	json.Unmarshal(chats[1].Body, &second)
	if !bytes.Equal(first.Tools, second.Tools) {
		t.Errorf("tools changed between requests")
	}
	for i := range first.Messages {
		if !bytes.Equal(first.Messages[i], second.Messages[i]) {
			t.Errorf("message %d changed:\n%s\n%s", i, first.Messages[i], second.Messages[i])
		}
	}
	// The assistant message went back with the call's arguments, in the order they came.
	if !strings.Contains(string(second.Messages[2]), `"arguments":{"city":"Paris","days":2}`) {
		t.Errorf("assistant message %s", second.Messages[2])
	}
	// And the whole body up to the new messages is the same bytes, except num_* options which sit after.
	if !bytes.HasPrefix(chats[1].Body, chats[0].Body[:bytes.Index(chats[0].Body, []byte(`"user","content":"weather?"}`))]) {
		t.Errorf("request prefix changed")
	}
}

func TestChatKeepAlive(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	cases := []struct {
		name string
		keep *time.Duration
		want string // the keep_alive the request carries (JSON), "" for none
	}{
		{"unset leaves the server's default", nil, ""},
		{"30 minutes", d(30 * time.Minute), `"30m0s"`},
		{"0 unloads after the reply", d(0), `"0s"`},
		{"negative keeps it loaded", d(-1), `-1`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeServer(t)
			srv.Enqueue(ollamatest.Text("ok"))
			c, err := ollama.New(ollama.Config{Host: srv.URL, Model: testModel, KeepAlive: tc.keep})
			if err != nil {
				t.Fatal(err)
			}
			if res := runChat(context.Background(), c, userRequest("hi")); res.err != nil {
				t.Fatal(res.err)
			}
			var sent struct {
				KeepAlive json.RawMessage `json:"keep_alive"`
			}
			body := lastChat(t, srv).Body
			if err := json.Unmarshal(body, &sent); err != nil {
				t.Fatal(err)
			}
			if got := string(sent.KeepAlive); got != tc.want {
				t.Errorf("keep_alive %s, want %s, in %s", got, tc.want, body)
			}
		})
	}
}

// TestKeepLoaded: while a turn holds the lease, the client renews the model shortly before /api/ps
// says it expires, with a load request that carries the runner options of its last chat request
// (num_ctx, shift) and no keep_alive, so the model is neither reloaded nor given another
// keep-alive than the server's own; the renewal ends with the lease. With an explicit keep-alive
// the lease sends nothing (every request carries the user's choice).
func TestKeepLoaded(t *testing.T) {
	t.Run("explicit keep-alive", func(t *testing.T) {
		srv := fakeServer(t)
		keep := 30 * time.Minute
		c, err := ollama.New(ollama.Config{Host: srv.URL, Model: testModel, KeepAlive: &keep})
		if err != nil {
			t.Fatal(err)
		}
		c.KeepLoaded(context.Background()) // returns at once, or the test times out
		if calls := srv.Calls(); len(calls) != 0 {
			t.Errorf("the lease sent %v", calls)
		}
	})
	t.Run("server keep-alive", func(t *testing.T) {
		srv := fakeServer(t)
		// Renewal comes at half the time left: 3 s here, with 3 s to spare before the model
		// would unload.
		srv.SetKeepAlive(6 * time.Second)
		srv.Enqueue(ollamatest.Text("ok"))
		c, err := ollama.New(ollama.Config{Host: srv.URL, Model: testModel})
		if err != nil {
			t.Fatal(err)
		}
		if res := runChat(context.Background(), c, userRequest("hi")); res.err != nil {
			t.Fatal(res.err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			c.KeepLoaded(ctx)
			close(done)
		}()
		wait, stop := context.WithTimeout(context.Background(), time.Minute)
		defer stop()
		chats, err := srv.WaitChats(wait, 2)
		cancel()
		<-done
		if err != nil {
			t.Fatal(err)
		}
		first, renewal := chats[0], chats[1]
		if first.Load != "load" || first.Request.KeepAlive != nil {
			t.Errorf("first request: load %q, keep_alive %v; want a load without keep_alive: %s", first.Load, first.Request.KeepAlive, first.Body)
		}
		r := renewal.Request
		if len(r.Messages) != 0 || r.KeepAlive != nil || renewal.NumCtx() != first.NumCtx() || r.Shift == nil || *r.Shift {
			t.Errorf("renewal %s: want no messages, no keep_alive, num_ctx %d and shift false", renewal.Body, first.NumCtx())
		}
		if renewal.Load != "" {
			t.Errorf("the renewal %sed the model: %s", renewal.Load, renewal.Body)
		}
		if n := len(srv.Chats()); n != 2 {
			t.Errorf("%d chat requests after the lease ended, want 2", n)
		}
	})
}

func TestChatErrors(t *testing.T) {
	cases := []struct {
		name   string
		reply  ollamatest.Reply
		kind   agent.ModelErrorKind
		status int
		msg    string
		fix    string
	}{
		{"404", ollamatest.HTTPError(404, "model 'qwen3:8b' not found"), agent.ErrModelNotFound, 404, "model 'qwen3:8b' not found", "run `ollama pull qwen3:8b`"},
		{"404 not ollama", ollamatest.HTTPError(404, "404 page not found"), agent.ErrServer, 404, "page not found", "OLLAMA_HOST"},
		{"400 tools", ollamatest.HTTPError(400, "registry.ollama.ai/library/qwen3:8b does not support tools"), agent.ErrNoToolSupport, 400, "does not support tools", "text"},
		{"400 thinking", ollamatest.HTTPError(400, `"qwen3:8b" does not support thinking`), agent.ErrNoThinking, 400, "thinking", "thinking off"},
		{"400 overflow", ollamatest.HTTPError(400, "the input length exceeds the context length"), agent.ErrContextOverflow, 400, "exceeds", "--context-length N, `context-length N` in the config"},
		{"400 other", ollamatest.HTTPError(400, "invalid options"), agent.ErrBadRequest, 400, "invalid options", ""},
		{"401", ollamatest.HTTPError(401, "unauthorized"), agent.ErrBadRequest, 401, "authorization", "OLLAMA_HOST"},
		{"422", ollamatest.HTTPError(422, "unprocessable"), agent.ErrBadRequest, 422, "unprocessable", ""},
		{"500 load", ollamatest.HTTPError(500, "llama runner process has terminated: exit status 2"), agent.ErrLoadFailed, 500, "llama runner process has terminated: exit status 2", "ollama ps"},
		{"500 parser", ollamatest.HTTPError(500, "failed to parse JSON: unexpected end"), agent.ErrBadToolCall, 500, "failed to parse JSON", "asks again"},
		{"500 tool call raw (gpt-oss, harmony)", ollamatest.HTTPError(500, `error parsing tool call: raw='{"path":"x.md","content":"\$900"}', err=invalid character '$' in string escape code`),
			agent.ErrBadToolCall, 500, "invalid character '$' in string escape code", "asks again"},
		{"500 qwen3-coder XML", ollamatest.HTTPError(500, "XML syntax error on line 3: element <parameter> closed by </function>"), agent.ErrBadToolCall, 500, "closed by </function>", "asks again"},
		{"error line: tool call", ollamatest.Reply{Text: "Partial", Error: `error parsing tool call: raw='{"cmd": "ls}', err=unexpected end of JSON input`}, agent.ErrBadToolCall, 200, "unexpected end of JSON input", "asks again"},
		{"500 empty body", ollamatest.Reply{Status: 500, EmptyBody: true}, agent.ErrLoadFailed, 500, "Internal Server Error", "ollama ps"},
		{"502", ollamatest.HTTPError(502, "bad gateway"), agent.ErrServer, 502, "bad gateway", "log"},
		{"503 no retry", ollamatest.Busy(), agent.ErrServerBusy, 503, "server busy", "OLLAMA_MAX_QUEUE"},
		{"503 empty body", ollamatest.Reply{Status: 503, EmptyBody: true}, agent.ErrServerBusy, 503, "Service Unavailable", "OLLAMA_MAX_QUEUE"},
		{"error line", ollamatest.Reply{Text: "Partial answer", Error: "an error was encountered while running the model: CUDA error"}, agent.ErrStreamBroken, 200, "CUDA error", "retry"},
		{"no done", ollamatest.Reply{Text: "Partial answer", NoDone: true}, agent.ErrStreamBroken, 200, "without its done chunk", "retry"},
		{"cut connection", ollamatest.Reply{Text: "Partial answer", Abort: true}, agent.ErrStreamBroken, 200, "", "retry"},
		{"silent truncation", ollamatest.Reply{Text: "Hi", FillContext: true}, agent.ErrContextOverflow, 200, "8192 of 8192", "--context-length N, `context-length N` in the config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeServer(t)
			srv.Enqueue(tc.reply)
			c := newClient(t, srv.URL, testModel, ollama.RetryPolicy{Attempts: 1})
			res := runChat(context.Background(), c, userRequest("hi"))
			me := modelError(t, res.err, tc.kind)
			if me.Status != tc.status || !strings.Contains(me.Message, tc.msg) || !strings.Contains(me.Fix, tc.fix) {
				t.Errorf("error %+v; want status %d, message ~%q, fix ~%q", me, tc.status, tc.msg, tc.fix)
			}
			if me.Kind == agent.ErrBadToolCall && strings.Contains(me.Fix, "memory") {
				t.Errorf("a tool call the parser could not read is advised as a memory problem: %s", me.Fix)
			}
			if strings.HasPrefix(tc.name, "500 tool call raw") && me.Raw != `{"path":"x.md","content":"\$900"}` {
				t.Errorf("raw = %q, want what the model wrote", me.Raw)
			}
			if res.resp != nil {
				t.Errorf("response %+v with an error", res.resp)
			}
			if len(srv.Chats()) != 1 {
				t.Errorf("%d requests, want 1", len(srv.Chats()))
			}
		})
	}
}

// TestChatModelChecks: the fake's own checks, like a real server's, map to the same kinds.
func TestChatModelChecks(t *testing.T) {
	srv := fakeServer(t, ollamatest.Model{Name: "plain", Capabilities: []string{"completion"}})
	req := userRequest("hi")
	req.Tools = weatherTools
	res := runChat(context.Background(), newClient(t, srv.URL, "plain", fastRetry), req)
	modelError(t, res.err, agent.ErrNoToolSupport)

	req = userRequest("hi")
	req.Think = true
	res = runChat(context.Background(), newClient(t, srv.URL, "plain", fastRetry), req)
	modelError(t, res.err, agent.ErrNoThinking)

	res = runChat(context.Background(), newClient(t, srv.URL, "missing:7b", fastRetry), userRequest("hi"))
	if me := modelError(t, res.err, agent.ErrModelNotFound); me.Fix != "run `ollama pull missing:7b`" {
		t.Errorf("fix %q", me.Fix)
	}
}

func TestChatRetriesBusy(t *testing.T) {
	srv := fakeServer(t)
	srv.Enqueue(ollamatest.Busy(), ollamatest.Reply{Status: 503, EmptyBody: true}, ollamatest.Text("finally"))
	c := newClient(t, srv.URL, testModel, ollama.RetryPolicy{Attempts: 5, Initial: time.Millisecond, Max: 2 * time.Millisecond})
	res := runChat(context.Background(), c, userRequest("hi"))
	if res.err != nil || res.resp.Message.Content != "finally" {
		t.Fatalf("got %+v, %v", res.resp, res.err)
	}
	if n := len(srv.Chats()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	if res.text() != "finally" {
		t.Errorf("deltas %q", res.text())
	}
}

func TestChatBusyForever(t *testing.T) {
	srv := fakeServer(t)
	srv.AddTurns(ollamatest.Turn{Repeat: true, Reply: ollamatest.Busy()})
	c := newClient(t, srv.URL, testModel, ollama.RetryPolicy{Attempts: 4, Initial: time.Millisecond, Max: 2 * time.Millisecond})
	res := runChat(context.Background(), c, userRequest("hi"))
	me := modelError(t, res.err, agent.ErrServerBusy)
	if !strings.Contains(me.Message, "(4 attempts)") {
		t.Errorf("message %q", me.Message)
	}
	if n := len(srv.Chats()); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
}

func TestChatBusyRetryStopsOnCancel(t *testing.T) {
	srv := fakeServer(t)
	srv.AddTurns(ollamatest.Turn{Repeat: true, Reply: ollamatest.Busy()})
	c := newClient(t, srv.URL, testModel, ollama.RetryPolicy{Attempts: 10, Initial: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res := runChat(ctx, c, userRequest("hi"))
	if !errors.Is(res.err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the deadline", res.err)
	}
}

func TestServerDown(t *testing.T) {
	addr := closedPort(t)
	c := newClient(t, addr, testModel, fastRetry)
	ctx := context.Background()
	_, errInfo := c.Info(ctx)
	_, errChat := c.Chat(ctx, userRequest("hi"), nil)
	_, errVersion := c.Version(ctx)
	_, errList := c.ListModels(ctx)
	for _, err := range []error{errInfo, errChat, errVersion, errList} {
		me := modelError(t, err, agent.ErrServerNotRunning)
		if me.Fix != "start it with `ollama serve` or the Ollama app" || !strings.Contains(me.Message, "http://"+addr) {
			t.Errorf("error %+v", me)
		}
		if !errors.Is(err, errConnRefused) {
			t.Errorf("underlying error lost: %v", me.Err)
		}
	}
}

// TestNotAnOllamaServer: another HTTP server at the address is not "model not found".
func TestNotAnOllamaServer(t *testing.T) {
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	c := newClient(t, other.URL, testModel, fastRetry)
	_, errVersion := c.Version(context.Background())
	_, errChat := c.Chat(context.Background(), userRequest("hi"), nil)
	for _, err := range []error{errVersion, errChat} {
		if me := modelError(t, err, agent.ErrServer); !strings.Contains(me.Fix, "OLLAMA_HOST") {
			t.Errorf("error %+v", me)
		}
	}
}

func TestServerUnreachableHost(t *testing.T) {
	c := newClient(t, "http://agentd-no-such-host.invalid:11434", testModel, fastRetry)
	_, err := c.Version(context.Background())
	me := modelError(t, err, agent.ErrServerNotRunning)
	if !strings.Contains(me.Fix, "OLLAMA_HOST") {
		t.Errorf("fix %q", me.Fix)
	}
}

func TestChatCancelMidStream(t *testing.T) {
	srv := fakeServer(t)
	srv.Enqueue(ollamatest.Reply{Text: "one two three", Hang: true})
	c := newClient(t, srv.URL, testModel, fastRetry)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan chatResult, 1)
	go func() {
		var res chatResult
		res.resp, res.err = c.Chat(ctx, userRequest("hi"), func(d agent.Delta) {
			res.deltas = append(res.deltas, d)
			if len(res.deltas) == 3 {
				cancel()
			}
		})
		done <- res
	}()
	select {
	case res := <-done:
		if !errors.Is(res.err, context.Canceled) || res.resp != nil {
			t.Fatalf("got %+v, %v", res.resp, res.err)
		}
		var me *agent.ModelError
		if errors.As(res.err, &me) {
			t.Errorf("a cancel is not a model error: %v", me)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Chat did not return after the cancel")
	}
}

// TestChatSlowFirstByte: no client-side timeout cuts a long model load; only the context does.
func TestChatSlowFirstByte(t *testing.T) {
	srv := fakeServer(t)
	srv.Enqueue(ollamatest.Reply{Text: "loaded", Delay: ollamatest.Duration(300 * time.Millisecond)},
		ollamatest.Reply{Text: "never", Delay: ollamatest.Duration(time.Minute)})
	c := newClient(t, srv.URL, testModel, fastRetry)
	res := runChat(context.Background(), c, userRequest("hi"))
	if res.err != nil || res.resp.Message.Content != "loaded" {
		t.Fatalf("got %+v, %v", res.resp, res.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res = runChat(ctx, c, userRequest("hi"))
	if !errors.Is(res.err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("got %v after %v", res.err, time.Since(start))
	}
}

func TestChatTruncationAgainstTrainedLength(t *testing.T) {
	srv := fakeServer(t, ollamatest.Model{Name: testModel, ContextLength: 4096})
	srv.Enqueue(ollamatest.Reply{Text: "hi", PromptEvalCount: 4096}, ollamatest.Reply{Text: "hi", PromptEvalCount: 4095})
	c := newClient(t, srv.URL, testModel, fastRetry)
	if _, err := c.Info(context.Background()); err != nil {
		t.Fatal(err)
	}
	res := runChat(context.Background(), c, userRequest("hi")) // num_ctx 8192, clamped to 4096
	modelError(t, res.err, agent.ErrContextOverflow)
	if res = runChat(context.Background(), c, userRequest("hi")); res.err != nil {
		t.Fatalf("4095 of 4096: %v", res.err)
	}
}

func TestInfo(t *testing.T) {
	srv := fakeServer(t,
		ollamatest.Model{Name: testModel, Capabilities: []string{"completion", "tools", "thinking"}, ContextLength: 40960},
		ollamatest.Model{Name: "llava", Capabilities: []string{"completion", "vision"}, ContextLength: 4096, Architecture: "llama"},
	)
	got, err := newClient(t, srv.URL, testModel, fastRetry).Info(context.Background())
	if want := (agent.ModelInfo{Name: testModel, ContextLength: 40960, Tools: true, Thinking: true}); err != nil || got != want {
		t.Errorf("Info = %+v, %v; want %+v", got, err, want)
	}
	got, err = newClient(t, srv.URL, "llava", fastRetry).Info(context.Background())
	if want := (agent.ModelInfo{Name: "llava", ContextLength: 4096, Vision: true}); err != nil || got != want {
		t.Errorf("Info = %+v, %v; want %+v", got, err, want)
	}
	_, err = newClient(t, srv.URL, "gemma3:1b", fastRetry).Info(context.Background())
	if me := modelError(t, err, agent.ErrModelNotFound); me.Fix != "run `ollama pull gemma3:1b`" || me.Status != 404 {
		t.Errorf("error %+v", me)
	}
	_, err = newClient(t, srv.URL, "", fastRetry).Info(context.Background())
	modelError(t, err, agent.ErrBadRequest)
}

func TestListModelsAndVersion(t *testing.T) {
	srv := ollamatest.NewServer(&ollamatest.Script{Version: "0.32.15", Models: []ollamatest.Model{
		{Name: testModel, Capabilities: []string{"completion", "tools", "thinking"}},
		{Name: "llama3.2", ParameterSize: "3.2B", Architecture: "llama"},
	}})
	defer srv.Close()
	c := newClient(t, srv.URL, "", fastRetry)
	v, err := c.Version(context.Background())
	if err != nil || v != "0.32.15" {
		t.Errorf("Version = %q, %v", v, err)
	}
	models, err := c.ListModels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range models {
		got = append(got, m.Name+" "+m.Family+" "+m.ParameterSize+" "+strings.Join(m.Capabilities, ","))
	}
	want := []string{"qwen3:8b qwen3 8.2B completion,tools,thinking", "llama3.2:latest llama 3.2B completion,tools"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("models %q, want %q", got, want)
	}
}

func TestNewRejectsBadHost(t *testing.T) {
	if _, err := ollama.New(ollama.Config{Host: "ftp://x"}); err == nil {
		t.Error("ftp scheme accepted")
	}
}

func TestParseHost(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "http://127.0.0.1:11434"},
		{"  ", "http://127.0.0.1:11434"},
		{"localhost", "http://localhost:11434"},
		{"example.com:1234", "http://example.com:1234"},
		{":9000", "http://127.0.0.1:9000"},
		{"0.0.0.0", "http://127.0.0.1:11434"},
		{"0.0.0.0:8080", "http://127.0.0.1:8080"},
		{"[::]:11434", "http://[::1]:11434"},
		{"[::1]:5000", "http://[::1]:5000"},
		{"::1", "http://[::1]:11434"},
		{"http://10.0.0.2", "http://10.0.0.2:80"},
		{"https://ollama.lan", "https://ollama.lan:443"},
		{"http://host:1/prefix/", "http://host:1/prefix"},
		{"http://127.0.0.1:11434", "http://127.0.0.1:11434"},
	}
	for _, tc := range cases {
		u, err := ollama.ParseHost(tc.in)
		if err != nil || u.String() != tc.want {
			t.Errorf("ParseHost(%q) = %v, %v; want %s", tc.in, u, err, tc.want)
		}
	}
	for _, bad := range []string{"ftp://host", "host:99999", "host:abc", "http://a b:1"} {
		if u, err := ollama.ParseHost(bad); err == nil {
			t.Errorf("ParseHost(%q) = %v, want an error", bad, u)
		}
	}
}

func TestChooseNumCtx(t *testing.T) {
	cases := []struct {
		trained, cap, prompt, reply, want int
	}{
		{40960, 0, 3000, 2000, 8192},       // small prompt: the floor
		{40960, 0, 9000, 4096, 16384},      // 13096 rounded up to a multiple of 4096
		{40960, 0, 12288, 4096, 16384},     // exactly a multiple
		{40960, 16384, 20000, 4096, 16384}, // the cap wins
		{40960, 0, 50000, 4096, 40960},     // does not fit: the trained length
		{2048, 0, 100, 100, 2048},          // a model trained below the floor
		{0, 0, 30000, 2000, 32768},         // nothing known: only the need
		{0, 6000, 100, 100, 6000},          // a cap below the floor is still a cap
		{131072, 32768, 0, 0, 8192},        // nothing to fit: the floor
		{40960, 0, -5, -5, 8192},           // negative estimates count as 0
		{0, 0, maxInt, maxInt, maxInt},     // no overflow
	}
	for _, tc := range cases {
		if got := ollama.ChooseNumCtx(tc.trained, tc.cap, tc.prompt, tc.reply); got != tc.want {
			t.Errorf("ChooseNumCtx(%d, %d, %d, %d) = %d, want %d", tc.trained, tc.cap, tc.prompt, tc.reply, got, tc.want)
		}
	}
}

const maxInt = int(^uint(0) >> 1)

var errConnRefused = syscall.ECONNREFUSED
