package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/openai"
	"github.com/agentd/agentd/openai/openaitest"
	"github.com/agentd/agentd/tools"
)

func newClient(t *testing.T, url string) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{URL: url, Model: "m", RetryWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fake(t *testing.T, f func(openaitest.Request) openaitest.Reply) *openaitest.Server {
	t.Helper()
	s := openaitest.NewServer([]openaitest.Model{{ID: "m"}}, "")
	s.HandleChat(f)
	t.Cleanup(s.Close)
	return s
}

var readDef = tools.Definition{Name: "read", Description: "Read a file.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}

func chat(t *testing.T, c *openai.Client, msgs ...agent.Message) (*agent.ModelResponse, []agent.Delta, error) {
	t.Helper()
	var deltas []agent.Delta
	resp, err := c.Chat(context.Background(), &agent.ModelRequest{Messages: msgs, Tools: []tools.Definition{readDef}, NumCtx: 8192},
		func(d agent.Delta) { deltas = append(deltas, d) })
	return resp, deltas, err
}

var user = agent.Message{Role: agent.RoleUser, Content: "hi"}

// A stream cut into one-byte writes, tool-call arguments split inside an escape and inside a
// UTF-8 sequence, and two calls whose deltas interleave by index, assemble into the reply the
// server meant, with usage and the cached prompt tokens from llama-server's timings.
func TestChatAssemblesSplitDeltasAndParallelCalls(t *testing.T) {
	// The arguments' JSON text {"path":"a \"q\" é😀.txt"} as the inside of a JSON string, the
	// emoji written as a surrogate pair: cut inside the model's escape, inside é's two bytes and
	// between the pair's halves.
	wire := `{\"path\":\"a \\\"q\\\" é\ud83d\ude00.txt\"}`
	args0 := `{"path":"a \"q\" é😀.txt"}`
	cut := strings.Index(wire, `\\`) + 2 // after the wire's escaped backslash: the text ends inside the model's \"
	utf := strings.Index(wire, "é") + 1
	pair := strings.Index(wire, `\ude00`)
	s := fake(t, func(openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Split: 1, Events: []string{
			openaitest.Chunk(`{"role":"assistant","content":null}`, ""),
			openaitest.Chunk(`{"reasoning_content":"let me look"}`, ""),
			openaitest.Chunk(`{"content":"Reading "}`, ""),
			openaitest.Chunk(`{"content":"two files."}`, ""),
			openaitest.CallDelta(0, "call_a", "read", wire[:cut]),
			openaitest.CallDelta(1, "call_b", "read", `{\"path\":`),
			openaitest.CallDelta(0, "", "", wire[cut:utf]),
			openaitest.CallDelta(1, "", "", `\"b.txt\"}`),
			openaitest.CallDelta(0, "", "", wire[utf:pair]),
			openaitest.CallDelta(0, "", "", wire[pair:]),
			openaitest.Chunk(`{}`, "tool_calls"),
			openaitest.Usage(300, 20, 250),
			"[DONE]",
		}}
	})
	resp, deltas, err := chat(t, newClient(t, s.URL), user)
	if err != nil {
		t.Fatal(err)
	}
	want := &agent.ModelResponse{
		Message: agent.Message{Role: agent.RoleAssistant, Content: "Reading two files.", Thinking: "let me look",
			ToolCalls: []agent.ToolCall{
				{ID: "call_a", Name: "read", Arguments: json.RawMessage(args0)},
				{ID: "call_b", Name: "read", Arguments: json.RawMessage(`{"path":"b.txt"}`)},
			}},
		DoneReason: "stop",
		Usage: agent.Usage{PromptTokens: 300, OutputTokens: 20, CachedTokens: 250,
			PromptDuration: 12500 * time.Microsecond, OutputDuration: 40 * time.Millisecond, TotalDuration: 52500 * time.Microsecond},
	}
	gotJSON, _ := json.Marshal(resp)
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("reply\n got %s\nwant %s", gotJSON, wantJSON)
	}
	wantDeltas := []agent.Delta{{Thinking: "let me look"}, {Text: "Reading "}, {Text: "two files."}}
	if d, _ := json.Marshal(deltas); string(d) != mustJSON(wantDeltas) {
		t.Errorf("deltas %s, want %s", d, mustJSON(wantDeltas))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// vLLM sends a call's last arguments in the chunk that carries finish_reason; a server that
// sends no index (Ollama's /v1 sends whole calls) is read by id.
func TestChatAppliesTheFinishingChunkAndCallsWithoutIndex(t *testing.T) {
	s := fake(t, func(openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Events: []string{
			openaitest.CallDelta(0, "c1", "read", `{\"path\":`),
			openaitest.Chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]}`, "tool_calls"),
			"[DONE]",
		}}
	})
	resp, _, err := chat(t, newClient(t, s.URL), user)
	if err != nil || len(resp.Message.ToolCalls) != 1 || string(resp.Message.ToolCalls[0].Arguments) != `{"path":"x"}` {
		t.Fatalf("got %+v, %v", resp, err)
	}
	s2 := fake(t, func(openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Events: []string{
			openaitest.Chunk(`{"tool_calls":[{"id":"x1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}`, ""),
			openaitest.Chunk(`{"tool_calls":[{"id":"x2","type":"function","function":{"name":"read","arguments":"{\"path\":\"b\"}"}}]}`, ""),
			openaitest.Chunk(`{}`, "tool_calls"),
		}}
	})
	resp, _, err = chat(t, newClient(t, s2.URL), user)
	if err != nil || mustJSON(resp.Message.ToolCalls) != `[{"id":"x1","name":"read","arguments":{"path":"a"}},{"id":"x2","name":"read","arguments":{"path":"b"}}]` {
		t.Fatalf("got %s, %v", mustJSON(resp.Message.ToolCalls), err)
	}
}

// The request: streamed with usage, tools in the function format before the messages, the
// assistant's calls with type "function" and their arguments as the model's text (also when it
// was not JSON), results as role "tool" with the call's id; and each request's body starts with
// the whole previous one's up to its last message, so the server's prefix cache matches.
func TestChatRequestShapeAndStablePrefix(t *testing.T) {
	s := fake(t, func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Events: openaitest.Text("ok")} })
	c := newClient(t, s.URL)
	sys := agent.Message{Role: agent.RoleSystem, Content: "You are agentd."}
	call := agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
		{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path": "a.txt"}`)},
		{ID: "c2", Name: "read", Arguments: json.RawMessage(`"{\"path\": oops"`)},
	}}
	res1 := agent.Message{Role: agent.RoleTool, ToolCallID: "c1", ToolName: "read", Content: "hello"}
	res2 := agent.Message{Role: agent.RoleTool, ToolCallID: "c2", ToolName: "read", Content: "error: arguments are not JSON"}
	if _, _, err := chat(t, c, sys, user); err != nil {
		t.Fatal(err)
	}
	if _, _, err := chat(t, c, sys, user, call, res1, res2); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	want := `{"model":"m","tools":[{"type":"function","function":{"name":"read","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}],` +
		`"messages":[{"role":"system","content":"You are agentd."},{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\": \"a.txt\"}"}},{"id":"c2","type":"function","function":{"name":"read","arguments":"{\"path\": oops"}}]},` +
		`{"role":"tool","content":"hello","tool_call_id":"c1"},{"role":"tool","content":"error: arguments are not JSON","tool_call_id":"c2"}],` +
		`"stream":true,"stream_options":{"include_usage":true}}`
	if string(reqs[1]) != want {
		t.Errorf("request\n got %s\nwant %s", reqs[1], want)
	}
	first := reqs[0][:bytes.LastIndex(reqs[0], []byte(`],"stream"`))]
	if !bytes.HasPrefix(reqs[1], first) {
		t.Errorf("the second request does not start with the first:\n%s\n%s", first, reqs[1])
	}
}

// Arguments that are not JSON are kept as the model's text (a JSON string), which the kernel
// refuses with a result the model can act on; nothing the model wrote is lost.
func TestChatKeepsUnreadableArguments(t *testing.T) {
	s := fake(t, func(openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Events: []string{openaitest.CallDelta(0, "c", "read", `{\"path\": oops`), openaitest.Chunk(`{}`, "tool_calls")}}
	})
	resp, _, err := chat(t, newClient(t, s.URL), user)
	if err != nil || string(resp.Message.ToolCalls[0].Arguments) != `"{\"path\": oops"` {
		t.Fatalf("got %+v, %v", resp, err)
	}
}

// Failures are typed: both servers' overflow answers are context_overflow (the loop compacts
// before it sends again, never the same request), a 5xx is a server error, a busy server is
// retried, a stream without finish_reason or with an error event is broken, and nothing
// listening names the URL.
func TestChatErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  openaitest.Reply
		kind agent.ModelErrorKind
		msg  string
	}{
		{"llama-server overflow", openaitest.Reply{Status: 400, Body: openaitest.OverflowLlama}, agent.ErrContextOverflow, "exceeds the available context size"},
		{"vLLM overflow", openaitest.Reply{Status: 400, Body: openaitest.OverflowVLLM}, agent.ErrContextOverflow, "maximum context length is 4096"},
		{"overflow event in the stream", openaitest.Reply{Events: []string{`{"error":{"code":400,"message":"too long","type":"exceed_context_size_error"}}`}}, agent.ErrContextOverflow, "too long"},
		{"500", openaitest.Reply{Status: 500, Body: `{"error":{"code":500,"message":"slot crashed","type":"server_error"}}`}, agent.ErrServer, "slot crashed"},
		{"502 plain text", openaitest.Reply{Status: 502, Body: "Bad Gateway"}, agent.ErrServer, "Bad Gateway"},
		{"503 every time", openaitest.Reply{Status: 503, Body: `{"error":{"message":"Loading model","type":"unavailable_error","code":503}}`}, agent.ErrServerBusy, "Loading model"},
		{"no finish reason", openaitest.Reply{Events: []string{openaitest.Chunk(`{"content":"Hel"}`, "")}}, agent.ErrStreamBroken, "without a finish reason"},
		{"error event", openaitest.Reply{Events: []string{openaitest.Chunk(`{"content":"Hel"}`, ""), `{"error":{"code":500,"message":"decode failed"}}`}}, agent.ErrStreamBroken, "decode failed"},
		{"no tools without --jinja", openaitest.Reply{Status: 400, Body: `{"error":{"code":400,"message":"tools param requires --jinja flag","type":"invalid_request_error"}}`}, agent.ErrNoToolSupport, "--jinja"},
		{"401", openaitest.Reply{Status: 401, Body: `{"error":{"message":"Invalid API Key","type":"authentication_error"}}`}, agent.ErrBadRequest, "Invalid API Key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fake(t, func(openaitest.Request) openaitest.Reply { return tc.rep })
			_, _, err := chat(t, newClient(t, s.URL), user)
			var me *agent.ModelError
			if !errors.As(err, &me) || me.Kind != tc.kind || !strings.Contains(me.Message, tc.msg) {
				t.Fatalf("got %v, want %s naming %q", err, tc.kind, tc.msg)
			}
		})
	}
}

func TestChatRetriesABusyServer(t *testing.T) {
	n := 0
	s := fake(t, func(openaitest.Request) openaitest.Reply {
		if n++; n < 3 {
			return openaitest.Reply{Status: 503, Body: `{"error":{"message":"Loading model","type":"unavailable_error","code":503}}`}
		}
		return openaitest.Reply{Events: openaitest.Text("ready")}
	})
	resp, _, err := chat(t, newClient(t, s.URL), user)
	if err != nil || resp.Message.Content != "ready" || n != 3 {
		t.Fatalf("got %+v, %v after %d requests", resp, err, n)
	}
}

func TestNothingListeningNamesTheURL(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/v1"
	l.Close()
	c := newClient(t, url)
	_, _, err = chat(t, c, user)
	var me *agent.ModelError
	if !errors.As(err, &me) || me.Kind != agent.ErrServerNotRunning || !strings.Contains(me.Message, url) {
		t.Fatalf("chat: %v", err)
	}
	if _, err := c.Info(context.Background()); !errors.As(err, &me) || me.Kind != agent.ErrServerNotRunning || !strings.Contains(me.Message, url) {
		t.Fatalf("info: %v", err)
	}
}

func TestChatCancelled(t *testing.T) {
	release := make(chan struct{})
	s := openaitest.NewServer([]openaitest.Model{{ID: "m"}}, "")
	defer s.Close()
	defer close(release)
	s.HandleChat(func(openaitest.Request) openaitest.Reply {
		<-release
		return openaitest.Reply{Events: openaitest.Text("late")}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := newClient(t, s.URL).Chat(ctx, &agent.ModelRequest{Messages: []agent.Message{user}}, nil)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// Info: llama-server's /props gives the window of a slot and whether the template takes tools;
// vLLM's max_model_len is the window where there is no /props; the model is the configured one
// when served, the server's one model otherwise, and an error listing them when there are
// several.
func TestInfo(t *testing.T) {
	llama := openaitest.NewServer([]openaitest.Model{{ID: "tiny.gguf"}},
		`{"default_generation_settings":{"n_ctx":16384},"total_slots":4,"build_info":"b11669-Debian","chat_template_caps":{"supports_tools":false}}`)
	defer llama.Close()
	c := newClient(t, llama.URL) // configured "m", served "tiny.gguf"
	info, err := c.Info(context.Background())
	if err != nil || info != (agent.ModelInfo{Name: "tiny.gguf", ContextLength: 16384}) || c.Model() != "tiny.gguf" {
		t.Fatalf("llama-server: %+v, %v", info, err)
	}
	if v, err := c.Version(context.Background()); err != nil || v != "llama-server b11669-Debian" {
		t.Fatalf("version %q, %v", v, err)
	}
	vllm := openaitest.NewServer([]openaitest.Model{{ID: "Qwen/Qwen3-8B", ContextLength: 32768}, {ID: "m", ContextLength: 40960}}, "")
	defer vllm.Close()
	info, err = newClient(t, vllm.URL).Info(context.Background())
	if err != nil || info != (agent.ModelInfo{Name: "m", ContextLength: 40960, Tools: true}) {
		t.Fatalf("vLLM: %+v, %v", info, err)
	}
	other, _ := openai.New(openai.Config{URL: vllm.URL, Model: "nope"})
	var me *agent.ModelError
	if _, err := other.Info(context.Background()); !errors.As(err, &me) || me.Kind != agent.ErrModelNotFound || !strings.Contains(me.Message, "Qwen/Qwen3-8B, m") {
		t.Fatalf("unknown model: %v", err)
	}
}

func TestParseURL(t *testing.T) {
	for in, want := range map[string]string{"": openai.DefaultURL, "http://gpu:8000/v1/": "http://gpu:8000/v1", "https://h/v1": "https://h/v1"} {
		if u, err := openai.ParseURL(in); err != nil || u.String() != want {
			t.Errorf("%q: %v, %v", in, u, err)
		}
	}
	for _, bad := range []string{"gpu:8000", "ftp://h/v1", "http://user:pw@h/v1", "http://h/v1?x=1"} {
		if _, err := openai.ParseURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The API key goes out as a bearer token.
func TestAPIKey(t *testing.T) {
	var got string
	s := openaitest.NewServer([]openaitest.Model{{ID: "m"}}, "")
	defer s.Close()
	inner := s.Config.Handler
	s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		inner.ServeHTTP(w, r)
	})
	c, _ := openai.New(openai.Config{URL: s.URL, APIKey: "sk-test"})
	if _, err := c.ListModels(context.Background()); err != nil || got != "Bearer sk-test" {
		t.Fatalf("got %q, %v", got, err)
	}
}
