package ollamatest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/ollama/ollama/api"
)

// wire is where the recorded real exchanges live (copied from /work/shared/ollama-wire).
const wire = "../testdata/wire"

func post(t *testing.T, srv *ollamatest.Server, path string, body []byte) (*http.Response, []byte) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return resp, b
}

func chatBody(t *testing.T, req api.ChatRequest) []byte {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func user(content string) api.ChatRequest {
	return api.ChatRequest{Model: "m", Messages: []api.Message{{Role: "user", Content: content}}}
}

// lines decodes an NDJSON body.
func lines(t *testing.T, body []byte) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

var callIDRE = regexp.MustCompile(`"call_[0-9a-z]{8}"`)

// normalize keeps what a client may rely on in a chat stream: the keys of every line, the message,
// done and done_reason; it drops times, durations and the random ids (checked for their shape).
func normalize(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, l := range lines(t, body) {
		keys := make([]string, 0, len(l))
		for k := range l {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		msg := callIDRE.ReplaceAll(l["message"], []byte(`"call_ID"`))
		out = append(out, strings.Join(keys, ",")+" | "+string(msg)+" | "+string(l["done"])+" "+string(l["done_reason"])+" "+string(l["error"]))
	}
	return out
}

func readWire(t *testing.T, name, ext string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(wire, name+ext))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFidelity: fed the recorded request, the fake answers like the real server did, line for line
// (same keys, same messages, same status and content type), for each reply form.
func TestFidelity(t *testing.T) {
	tiny := []ollamatest.Model{
		{Name: "tiny", Capabilities: []string{"completion", "tools"}, ContextLength: 2048, Architecture: "llama"},
		{Name: "tiny-think", Capabilities: []string{"completion", "tools", "thinking"}, ContextLength: 2048, Architecture: "llama"},
		{Name: "tiny-plain", Capabilities: []string{"completion"}, ContextLength: 2048, Architecture: "llama"},
		{Name: "tiny-q3", Capabilities: []string{"completion", "tools"}, ContextLength: 2048, Architecture: "llama"},
		{Name: "tiny-broken", Capabilities: []string{"completion"}, ContextLength: 2048, Architecture: "llama"},
	}
	tokens := func(ts ...string) []ollamatest.Chunk {
		var cs []ollamatest.Chunk
		for _, s := range ts {
			cs = append(cs, ollamatest.Chunk{Content: s})
		}
		return cs
	}
	cases := []struct {
		rec   string
		reply *ollamatest.Reply // nil: the fake's own checks answer
	}{
		{"06-chat-stream-text", &ollamatest.Reply{Chunks: tokens("Hello", "!", " I", " am", " a", " tiny", " test", " model", ".")}},
		{"07-chat-stream-tools", &ollamatest.Reply{ToolCalls: []ollamatest.ToolCall{
			ollamatest.Call("get_weather", `{"city":"Paris","days":3,"metric":true,"tags":["a","b"],"loc":{"lat":48.85}}`),
			ollamatest.Call("get_time", `{}`),
		}}},
		{"10b-think-true", &ollamatest.Reply{Chunks: []ollamatest.Chunk{{Thinking: "Let me think about this."}, {Content: "The answer is 42."}}}},
		{"10g-think-truncated-by-num-predict", &ollamatest.Reply{Chunks: []ollamatest.Chunk{{Thinking: "Let me think about this."}}, DoneReason: "length"}},
		{"21e-toolcall-text-when-no-tools-sent", &ollamatest.Reply{Chunks: tokens("<tool", "_call>", "\n{\"na", "me\": \"get_", "weather\", \"argu", "ments\": {\"city\": \"Os", "lo\"}}\n</tool", "_call>\n")}},
		{"30-q3parser-mixedbad-midstream-error", &ollamatest.Reply{
			Chunks: tokens("Checking the weather now.", " One moment."),
			Error:  "failed to parse JSON: invalid character 'o' looking for beginning of object key string",
		}},
		{"27-model-load-failure", &ollamatest.Reply{Status: 500, Error: "llama runner process has terminated: error loading model: missing tensor 'blk.1.ffn_down.weight'"}},
		{"11-think-on-nonthinking-model", nil},
		{"11b-tools-on-model-without-tools", nil},
		{"12-model-not-found", nil},
		{"12c-model-empty-name", nil},
		{"05-chat-preload-empty-messages", nil},
		{"19e-unload-empty-messages-keepalive-0", nil},
	}
	for _, tc := range cases {
		t.Run(tc.rec, func(t *testing.T) {
			script := &ollamatest.Script{Models: tiny}
			if tc.reply != nil {
				script.Turns = []ollamatest.Turn{{Reply: *tc.reply}}
			}
			srv := ollamatest.NewServer(script)
			defer srv.Close()
			resp, got := post(t, srv, "/api/chat", readWire(t, tc.rec, ".request.json"))
			want := readWire(t, tc.rec, ".response.ndjson")
			meta := string(readWire(t, tc.rec, ".meta.txt"))
			if m := regexp.MustCompile(`< HTTP/1.1 (\d+) `).FindStringSubmatch(meta); m == nil || m[1] != resp.Status[:3] {
				t.Errorf("status %s, recorded %v", resp.Status, m)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.Contains(meta, "< Content-Type: "+ct+"\n") {
				t.Errorf("content type %q differs from the recording", ct)
			}
			if g, w := normalize(t, got), normalize(t, want); !reflect.DeepEqual(g, w) {
				t.Errorf("stream differs\n got %s\nwant %s", strings.Join(g, "\n     "), strings.Join(w, "\n     "))
			}
			if n := len(srv.Chats()); n != 1 {
				t.Errorf("%d chats recorded", n)
			}
		})
	}
}

func TestShowTagsVersion(t *testing.T) {
	srv := ollamatest.NewServer(&ollamatest.Script{Version: "0.99.0", Models: []ollamatest.Model{
		{Name: "qwen3:8b", Capabilities: []string{"completion", "tools", "thinking"}, ContextLength: 40960},
		{Name: "llama3.2", Architecture: "llama"},
	}})
	defer srv.Close()
	c := api.NewClient(mustURL(t, srv.URL), srv.Client())
	ctx := context.Background()

	show, err := c.Show(ctx, &api.ShowRequest{Model: "qwen3:8b"})
	if err != nil {
		t.Fatal(err)
	}
	var caps []string
	for _, c := range show.Capabilities {
		caps = append(caps, string(c))
	}
	if !reflect.DeepEqual(caps, []string{"completion", "tools", "thinking"}) ||
		show.ModelInfo["general.architecture"] != "qwen3" || show.ModelInfo["qwen3.context_length"] != float64(40960) {
		t.Errorf("show %+v", show)
	}
	show, err = c.Show(ctx, &api.ShowRequest{Model: "llama3.2:latest"})
	if err != nil || show.ModelInfo["llama.context_length"] != float64(32768) || len(show.Capabilities) != 2 {
		t.Errorf("show defaults %+v, %v", show, err)
	}
	_, err = c.Show(ctx, &api.ShowRequest{Model: "nope"})
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != 404 || se.ErrorMessage != "model 'nope' not found" {
		t.Errorf("show missing model: %v", err)
	}

	list, err := c.List(ctx)
	if err != nil || len(list.Models) != 2 || list.Models[0].Name != "qwen3:8b" || list.Models[1].Name != "llama3.2:latest" {
		t.Errorf("tags %+v, %v", list, err)
	}
	v, err := c.Version(ctx)
	if err != nil || v != "0.99.0" {
		t.Errorf("version %q, %v", v, err)
	}
	if err := c.Heartbeat(ctx); err != nil {
		t.Errorf("heartbeat: %v", err)
	}
	ps, err := c.ListRunning(ctx)
	if err != nil || len(ps.Models) != 0 {
		t.Errorf("ps %+v, %v", ps, err)
	}
	want := []string{"POST /api/show", "POST /api/show", "POST /api/show", "GET /api/tags", "GET /api/version", "HEAD /", "GET /api/ps"}
	if got := srv.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls %q", got)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// streamChat runs a chat through the api client, as the adapter does.
func streamChat(t *testing.T, srv *ollamatest.Server, req api.ChatRequest) ([]api.ChatResponse, error) {
	t.Helper()
	c := api.NewClient(mustURL(t, srv.URL), srv.Client())
	var got []api.ChatResponse
	err := c.Chat(context.Background(), &req, func(r api.ChatResponse) error {
		got = append(got, r)
		return nil
	})
	return got, err
}

func TestTurnMatching(t *testing.T) {
	srv := ollamatest.NewServer(&ollamatest.Script{Turns: []ollamatest.Turn{
		{Name: "after tool", When: &ollamatest.Match{LastRole: "tool"}, Reply: ollamatest.Text("tool seen")},
		{Name: "weather", When: &ollamatest.Match{LastUserContains: "weather", HasTools: ollamatest.Bool(true)}, Reply: ollamatest.Calls(ollamatest.Call("get_weather", `{"city":"Oslo"}`))},
		{Name: "thinking", When: &ollamatest.Match{Think: ollamatest.Bool(true), Model: "m:latest"}, Reply: ollamatest.Thinking("hmm", "ok")},
		{Name: "fallback", When: &ollamatest.Match{LastContains: "hello"}, Repeat: true, Reply: ollamatest.Text("hi")},
	}})
	defer srv.Close()
	if srv.Pending() != 3 {
		t.Fatalf("pending %d", srv.Pending())
	}

	// "weather" without tools does not match its turn, nor any other.
	_, err := streamChat(t, srv, user("weather in Oslo?"))
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != 500 || !strings.Contains(se.ErrorMessage, "no scripted turn matches") {
		t.Fatalf("unmatched request: %v", err)
	}
	if u := srv.Unmatched(); len(u) != 1 || !strings.Contains(u[0], `user: "weather in Oslo?"`) {
		t.Errorf("unmatched %q", u)
	}

	req := user("weather in Oslo?")
	req.Tools = api.Tools{{Type: "function", Function: api.ToolFunction{Name: "get_weather"}}}
	got, err := streamChat(t, srv, req)
	if err != nil || len(got) != 2 || got[0].Message.ToolCalls[0].Function.Name != "get_weather" || !got[1].Done {
		t.Fatalf("weather turn: %+v, %v", got, err)
	}

	for range 2 { // a Repeat turn answers again and again
		got, err = streamChat(t, srv, user("hello there"))
		if err != nil || got[0].Message.Content != "hi" {
			t.Fatalf("repeat turn: %+v, %v", got, err)
		}
	}

	req = user("x")
	req.Messages = append(req.Messages, api.Message{Role: "tool", Content: "42"})
	if got, err = streamChat(t, srv, req); err != nil || got[0].Message.Content != "tool" {
		t.Fatalf("tool turn: %+v, %v", got, err)
	}

	req = user("think")
	req.Think = &api.ThinkValue{Value: true}
	if got, err = streamChat(t, srv, req); err != nil || got[0].Message.Thinking != "hmm" || got[1].Message.Content != "ok" {
		t.Fatalf("thinking turn: %+v, %v", got, err)
	}
	if srv.Pending() != 0 {
		t.Errorf("pending %d", srv.Pending())
	}
	var turns []int
	for _, c := range srv.Chats() {
		turns = append(turns, c.Turn)
	}
	if want := []int{-1, 1, 3, 3, 0, 2}; !reflect.DeepEqual(turns, want) {
		t.Errorf("turns %v, want %v", turns, want)
	}
}

func TestHandleChat(t *testing.T) {
	srv := ollamatest.NewServer(nil)
	defer srv.Close()
	srv.HandleChat(func(r *api.ChatRequest) ollamatest.Reply {
		return ollamatest.Text("echo: " + r.Messages[len(r.Messages)-1].Content)
	})
	got, err := streamChat(t, srv, user("ping"))
	if err != nil || got[0].Message.Content+got[1].Message.Content != "echo: ping" {
		t.Fatalf("%+v, %v", got, err)
	}
}

func TestReplyForms(t *testing.T) {
	srv := ollamatest.NewServer(nil)
	defer srv.Close()

	// Metrics: an estimate clamped below num_ctx, or num_ctx itself for a "truncated" prompt.
	srv.Enqueue(ollamatest.Text(strings.TrimSpace(strings.Repeat("word ", 10))), ollamatest.Reply{Text: "x", FillContext: true})
	req := user(strings.Repeat("long prompt ", 100))
	req.Options = map[string]any{"num_ctx": 64}
	got, err := streamChat(t, srv, req)
	if err != nil {
		t.Fatal(err)
	}
	done := got[len(got)-1]
	if !done.Done || done.DoneReason != "stop" || done.PromptEvalCount != 63 || done.EvalCount != 10 || done.TotalDuration == 0 {
		t.Errorf("done chunk %+v", done)
	}
	got, _ = streamChat(t, srv, req)
	if d := got[len(got)-1]; d.PromptEvalCount != 64 {
		t.Errorf("fillContext: prompt_eval_count %d", d.PromptEvalCount)
	}

	// Abort: the client reads a cut stream.
	srv.Enqueue(ollamatest.Reply{Text: "partial", Abort: true})
	got, err = streamChat(t, srv, user("x"))
	if err == nil || len(got) != 1 {
		t.Errorf("abort: %+v, %v", got, err)
	}

	// NoDone: a clean end without the done chunk; the api client reports no error (the trap).
	srv.Enqueue(ollamatest.Reply{Text: "partial", NoDone: true})
	got, err = streamChat(t, srv, user("x"))
	if err != nil || len(got) != 1 || got[0].Done {
		t.Errorf("noDone: %+v, %v", got, err)
	}

	// EmptyBody: the same trap with an error status.
	srv.Enqueue(ollamatest.Reply{Status: 503, EmptyBody: true})
	resp, body := post(t, srv, "/api/chat", chatBody(t, user("x")))
	if resp.StatusCode != 503 || len(body) != 0 {
		t.Errorf("empty body: %d %q", resp.StatusCode, body)
	}

	// stream:false: one object with everything.
	no := false
	srv.Enqueue(ollamatest.Reply{Thinking: "a b", Text: "c d", ToolCalls: []ollamatest.ToolCall{{ID: "call_x", Name: "f"}}})
	req = user("x")
	req.Stream = &no
	resp, body = post(t, srv, "/api/chat", chatBody(t, req))
	var whole api.ChatResponse
	if err := json.Unmarshal(body, &whole); err != nil || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("whole: %s, %v", body, err)
	}
	if !whole.Done || whole.Message.Thinking != "a b" || whole.Message.Content != "c d" || whole.Message.ToolCalls[0].ID != "call_x" {
		t.Errorf("whole %+v", whole)
	}

	// Generated call ids are unique and shaped like Ollama's.
	srv.Enqueue(ollamatest.Calls(ollamatest.Call("a", ""), ollamatest.Call("b", `{"k":1}`)))
	got, _ = streamChat(t, srv, user("x"))
	id0, id1 := got[0].Message.ToolCalls[0].ID, got[1].Message.ToolCalls[0].ID
	if !callIDRE.MatchString(`"`+id0+`"`) || id0 == id1 || got[1].Message.ToolCalls[0].Function.Index != 1 {
		t.Errorf("ids %q %q", id0, id1)
	}
}

func TestDelayAndHang(t *testing.T) {
	srv := ollamatest.NewServer(nil)
	srv.Enqueue(ollamatest.Reply{Text: "slow", Delay: ollamatest.Duration(150 * time.Millisecond)})
	start := time.Now()
	if _, err := streamChat(t, srv, user("x")); err != nil || time.Since(start) < 150*time.Millisecond {
		t.Errorf("delay: %v after %v", err, time.Since(start))
	}

	// A hanging reply ends when the client leaves…
	srv.Enqueue(ollamatest.Reply{Text: "one", Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	c := api.NewClient(mustURL(t, srv.URL), srv.Client())
	req := user("x")
	err := c.Chat(ctx, &req, func(api.ChatResponse) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) && ctx.Err() == nil {
		t.Errorf("hang: %v", err)
	}

	// …and when the server closes: Close must not wait for it.
	srv.Enqueue(ollamatest.Reply{Text: "one", Hang: true})
	started := make(chan struct{})
	go func() {
		req := user("x")
		c.Chat(context.Background(), &req, func(api.ChatResponse) error {
			close(started)
			return nil
		})
	}()
	<-started
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs on a hanging reply")
	}
}

func TestFakeEndpoints(t *testing.T) {
	srv := ollamatest.NewServer(&ollamatest.Script{Turns: []ollamatest.Turn{{Reply: ollamatest.Text("a")}}})
	defer srv.Close()
	streamChat(t, srv, user("first"))

	resp, err := srv.Client().Get(srv.URL + "/_fake/requests")
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct {
		Body json.RawMessage `json:"body"`
		Turn int             `json:"turn"`
	}
	json.NewDecoder(resp.Body).Decode(&recs)
	resp.Body.Close()
	if len(recs) != 1 || recs[0].Turn != 0 || !bytes.Contains(recs[0].Body, []byte(`"content":"first"`)) {
		t.Errorf("requests %+v", recs)
	}

	// Reset with a new script over HTTP.
	resp2, body := post(t, srv, "/_fake/reset", []byte(`{"turns":[{"when":{"lastUserContains":"x"},"reply":{"text":"new"}}]}`))
	if resp2.StatusCode != 200 {
		t.Fatalf("reset: %d %s", resp2.StatusCode, body)
	}
	if got, err := streamChat(t, srv, user("x")); err != nil || got[0].Message.Content != "new" {
		t.Errorf("after reset: %+v, %v", got, err)
	}
	if n := len(srv.Chats()); n != 1 {
		t.Errorf("%d chats after reset", n)
	}
	resp2, _ = post(t, srv, "/_fake/reset", []byte(`{"turns":[{"reply":{"txt":"typo"}}]}`))
	if resp2.StatusCode != 400 {
		t.Errorf("reset with an unknown field: %d", resp2.StatusCode)
	}
}

func TestParseScript(t *testing.T) {
	s, err := ollamatest.ParseScript([]byte(`{"turns":[{"reply":{"delay":250,"chunkDelay":"1.5s","toolCalls":[{"name":"f","arguments":{"a":1}}]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Turns[0].Reply
	if time.Duration(r.Delay) != 250*time.Millisecond || time.Duration(r.ChunkDelay) != 1500*time.Millisecond {
		t.Errorf("durations %v %v", r.Delay, r.ChunkDelay)
	}
	for _, bad := range []string{
		`{"turns":[{"reply":{"text":"x","unknown":1}}]}`,
		`{"turns":[{"reply":{"toolCalls":[{"name":"f","arguments":"{\"a\":1}"}]}}]}`,
		`{"turns":[{"reply":{"status":42}}]}`,
		`{"models":[{"name":""}]}`,
		`{"turns":[]} {}`,
		`{"turns":[{"reply":{"delay":true}}]}`,
	} {
		if _, err := ollamatest.ParseScript([]byte(bad)); err == nil {
			t.Errorf("ParseScript(%s) accepted", bad)
		}
	}
}

func TestStartAndServeScriptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(path, []byte(`{"models":[{"name":"m"}],"turns":[{"reply":{"text":"from file"}}]}`), 0o644)
	srv, err := ollamatest.ServeScriptFile("127.0.0.1:0", path)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	got, err := streamChat(t, srv, user("x"))
	if err != nil || got[0].Message.Content+got[1].Message.Content != "from file" {
		t.Errorf("%+v, %v", got, err)
	}
	if _, err := ollamatest.ServeScriptFile("127.0.0.1:0", filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing script accepted")
	}
}

// /api/ps sizes a loaded model by its window, and reports the part the GPU holds; the done chunk's
// durations follow the model's rates.
func TestLoadedModelSizeAndSpeed(t *testing.T) {
	srv := ollamatest.NewServer(&ollamatest.Script{GPUMemory: 6_000_000_000, Models: []ollamatest.Model{
		{Name: "m", Weights: 4_000_000_000, KVPerToken: 100_000, PromptRate: 500, EvalRate: 25}}})
	t.Cleanup(srv.Close)
	c := api.NewClient(mustURL(t, srv.URL), srv.Client())
	ctx := context.Background()
	for _, tc := range []struct {
		numCtx     int
		size, vram int64
	}{{8192, 4_819_200_000, 4_819_200_000}, {32768, 7_276_800_000, 6_000_000_000}} {
		srv.Enqueue(ollamatest.Reply{Text: "a b c", PromptEvalCount: 1000, EvalCount: 50})
		var done api.ChatResponse
		err := c.Chat(ctx, &api.ChatRequest{Model: "m", Messages: []api.Message{{Role: "user", Content: "hi"}},
			Options: map[string]any{"num_ctx": tc.numCtx}}, func(r api.ChatResponse) error { done = r; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if done.PromptEvalDuration != 2*time.Second || done.EvalDuration != 2*time.Second {
			t.Errorf("durations %v %v, want 2s each (1000 at 500/s, 50 at 25/s)", done.PromptEvalDuration, done.EvalDuration)
		}
		ps, err := c.ListRunning(ctx)
		if err != nil || len(ps.Models) != 1 || ps.Models[0].Size != tc.size || ps.Models[0].SizeVRAM != tc.vram || ps.Models[0].ContextLength != tc.numCtx {
			t.Errorf("num_ctx %d: ps %+v, %v; want size %d, vram %d", tc.numCtx, ps, err, tc.size, tc.vram)
		}
	}
}
