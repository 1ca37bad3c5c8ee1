package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools"
	"github.com/ollama/ollama/api"
)

// These tests drive whole turns through the real loop, the real Ollama adapter and the real
// built-in tools against the fake server: every tool call a model attempts, in any family's
// format, runs exactly once, or the model is told exactly what was wrong — the turn never ends on
// it silently, and a value is never changed on the way (a stray space is refused, not created).

// turnRun is what one turn did.
type turnRun struct {
	end    agent.TurnEnd
	starts []agent.ToolStart
	ends   []agent.ToolEnd
	chats  []ollamatest.ChatRecord
	ws     string
}

// writes counts the write calls that ran (ToolEnd without an error).
func (r turnRun) writes() int {
	n := 0
	for _, e := range r.ends {
		if e.Tool == "write" && !e.Result.IsError {
			n++
		}
	}
	return n
}

// nudges are the messages agentd sent the model on its own, in order (the last request holds them
// all).
func (r turnRun) nudges() []string {
	if len(r.chats) == 0 {
		return nil
	}
	var out []string
	msgs := r.chats[len(r.chats)-1].Request.Messages
	for i, m := range msgs {
		if m.Role == "user" && i > 1 && !strings.Contains(m.Content, "Create out.txt") {
			out = append(out, m.Content)
		}
	}
	return out
}

// runTurn runs "Create out.txt" in a new yolo session of a qwen3:8b model (native tools) whose
// replies are the given ones, then a final text answer for any request after them.
func runTurn(t *testing.T, replies ...ollamatest.Reply) turnRun {
	t.Helper()
	fake := ollamatest.NewServer(&ollamatest.Script{Models: []ollamatest.Model{
		{Name: "qwen3:8b", Capabilities: []string{"completion", "tools", "thinking"}, ContextLength: 40960},
	}})
	t.Cleanup(fake.Close)
	fake.Enqueue(replies...)
	fake.HandleChat(func(*api.ChatRequest) ollamatest.Reply { return ollamatest.Text("Done.") })
	home := t.TempDir()
	rt, err := NewRuntime(Options{
		Version: "test", OllamaHost: fake.URL, Model: "qwen3:8b", ApprovalMode: "yolo",
		StateDir: filepath.Join(home, "state"), BuildCache: filepath.Join(home, "cache"),
		Policy: policy.Locations{ConfigDir: filepath.Join(home, "config"), StateDir: filepath.Join(home, "state")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	ws := t.TempDir()
	h, err := rt.Open(SessionSpec{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	var mu sync.Mutex
	run := turnRun{ws: ws}
	ends := make(chan agent.TurnEnd, 1)
	sess, err := h.Start(context.Background(), nil, func(e agent.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e := e.(type) {
		case agent.ToolStart:
			run.starts = append(run.starts, e)
		case agent.ToolEnd:
			run.ends = append(run.ends, e)
		case agent.TurnEnd:
			ends <- e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	if _, err := sess.Prompt("Create out.txt saying hi there."); err != nil {
		t.Fatal(err)
	}
	select {
	case run.end = <-ends:
	case <-time.After(60 * time.Second):
		t.Fatal("timed out waiting for the turn's end")
	}
	mu.Lock()
	defer mu.Unlock()
	run.chats = fake.Chats()
	return run
}

// The intended call, in every format a major open-weight family writes (its chat template's, or
// its reference parser's), and a malformed variant of it as such models write it.
var callFormats = []struct {
	family, call, malformed, reason string
}{
	{"Hermes / Qwen2.5 / Qwen3 <tool_call>",
		`<tool_call>{"name": "write", "arguments": {"path": "out.txt", "content": "hi there"}}</tool_call>`,
		`<tool_call>{"name": "write", "arguments": {"path": "out.txt", "content": "hi there"}</tool_call>`,
		"the JSON is not complete"},
	{"Hermes with \"args\"",
		`<tool_call>{"name": "write", "args": {"path": "out.txt", "content": "hi there"}}</tool_call>`,
		`<tool_call>{'name': 'write', 'args': {'path': 'out.txt', 'content': 'hi there'}}</tool_call>`,
		"invalid character '\\''"},
	{"JSON-RPC shape",
		`{"jsonrpc": "2.0", "id": 1, "method": "write", "params": {"path": "out.txt", "content": "hi there"}}`,
		`{"jsonrpc": "2.0", "id": 1, "method": "write", "params": "path=out.txt content=hi there"}`,
		`"params" must be a JSON object`},
	{"qwen3-coder XML",
		"<tool_call>\n<function=write>\n<parameter=path>\nout.txt\n</parameter>\n<parameter=content>\nhi there\n</parameter>\n</function>\n</tool_call>",
		"<tool_call>\n<function=write>\n<parameter=path>\nout.txt\n</parameter>\ncontent: hi there\n</function>\n</tool_call>",
		"text outside <parameter=…>"},
	{"Mistral / Devstral [TOOL_CALLS]name[ARGS]",
		`[TOOL_CALLS]write[ARGS]{"path": "out.txt", "content": "hi there"}`,
		`[TOOL_CALLS]write[ARGS]path="out.txt" content="hi there"`,
		"[ARGS] must be followed by a JSON object"},
	{"Mistral v3 [TOOL_CALLS][…]",
		`[TOOL_CALLS][{"name": "write", "arguments": {"path": "out.txt", "content": "hi there"}, "id": "a1b2c3d4e"}]`,
		`[TOOL_CALLS][{"name": "write", "arguments": {"path": "out.txt", "content": "hi there"}, "id": "a1b2c3d4e"}`,
		"the JSON is not complete"},
	{"Llama 3.1 <|python_tag|>",
		`<|python_tag|>{"name": "write", "parameters": {"path": "out.txt", "content": "hi there"}}<|eom_id|>`,
		`<|python_tag|>{"name": "write", "parameters": {"path": "out.txt", "content": "hi there"}<|eom_id|>`,
		"the JSON is not complete"},
	{"Llama 3.x bare JSON",
		`{"name": "write", "parameters": {"path": "out.txt", "content": "hi there"}}`,
		`{"name": "write", "parameters": {"path": "out.txt", "content": hi there}}`,
		"invalid character 'h'"},
	{"Llama 3.2 pythonic list",
		`[write(path="out.txt", content="hi there")]`,
		`[write("out.txt", "hi there")]`,
		"must be named"},
	{"gpt-oss harmony",
		`<|channel|>commentary to=functions.write <|constrain|>json<|message|>{"path": "out.txt", "content": "hi there"}<|call|>`,
		`<|channel|>commentary to=functions.write <|constrain|>json<|message|>path: out.txt<|call|>`,
		"arguments as one JSON object"},
	{"DeepSeek V3.1",
		`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write<｜tool▁sep｜>{"path": "out.txt", "content": "hi there"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
		`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write{"path": "out.txt", "content": "hi there"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
		"no <｜tool▁sep｜>"},
	{"DeepSeek R1",
		"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>write\n```json\n{\"path\": \"out.txt\", \"content\": \"hi there\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>write\n```json\n{\"path\": \"out.txt\", \"content\": \"hi there\",}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		"invalid character '}'"},
	{"Gemma ```tool_code",
		"```tool_code\nprint(write(path=\"out.txt\", content=\"hi there\"))\n```",
		"```tool_code\nwrite(path=out.txt, content=\"hi there\")\n```",
		"is not a Python literal"},
	{"Gemma ```json",
		"```json\n{\"name\": \"write\", \"parameters\": {\"path\": \"out.txt\", \"content\": \"hi there\"}}\n```",
		"```json\n{\"name\": \"write\", \"parameters\": {\"path\": \"out.txt\", \"content\": \"hi there\"}\n```",
		"the JSON is not complete"},
}

// TestEveryFormatRunsOnceOrTheModelIsTold: each format's call runs once at the first step; its
// malformed variant runs nothing, the model is told what was wrong and the one format to use, and
// the call it sends next runs: two steps to the intended call, where the turn used to end at the
// first, silently, with the raw call as the answer. `go test -run TestEveryFormat -v ./harness/`
// prints the table of docs/benchmarks.md.
func TestEveryFormatRunsOnceOrTheModelIsTold(t *testing.T) {
	var table []string
	for _, f := range callFormats {
		t.Run(f.family, func(t *testing.T) {
			r := runTurn(t, ollamatest.Text(f.call))
			if r.end.Reason != "done" || r.writes() != 1 || len(r.starts) != 1 || len(r.nudges()) != 0 {
				t.Fatalf("well-formed: turn %q (%v), %d starts, %d writes, nudges %q", r.end.Reason, r.end.Err, len(r.starts), r.writes(), r.nudges())
			}
			wantFile(t, r.ws, "out.txt", "hi there")

			r = runTurn(t, ollamatest.Text(f.malformed), ollamatest.Text(f.call))
			if r.end.Reason != "done" || r.writes() != 1 || len(r.starts) != 1 {
				t.Fatalf("malformed then fixed: turn %q (%v), %d starts, %d writes", r.end.Reason, r.end.Err, len(r.starts), r.writes())
			}
			wantFile(t, r.ws, "out.txt", "hi there")
			nudges := r.nudges()
			params := `"path": VALUE, "content": VALUE`
			if strings.Contains(f.call, "<function=") {
				params = "<parameter=path>\nVALUE\n</parameter>\n<parameter=content>\nVALUE\n</parameter>"
			}
			if len(nudges) != 1 || !strings.Contains(nudges[0], f.reason) || !strings.Contains(nudges[0], "so it was not run") ||
				!strings.Contains(nudges[0], "in exactly this format") || !strings.Contains(nudges[0], params) {
				t.Fatalf("the model was told %q; want one nudge with %q, the format and the write tool's parameters", nudges, f.reason)
			}
			// The model's own words reach the request that follows it (the attempt is kept in the
			// history), and the call it sent next is the first tool call of the turn: the step
			// count to the intended call is 2.
			steps := len(r.chats) - 1
			table = append(table, fmt.Sprintf("| %s | `%s` | %s | %d |", strings.ReplaceAll(f.family, "|", `\|`), strings.ReplaceAll(strings.ReplaceAll(f.malformed, "\n", `\n`), "|", `\|`), f.reason, steps))
		})
	}
	t.Log("| format | malformed variant | what the model is told (excerpt) | steps to the intended call |\n|---|---|---|---|\n" + strings.Join(table, "\n"))
}

// TestACallIsNeverRunTwice: a call written in the reasoning as well as in the reply runs once, in
// both streams (<think>…</think> in the text, or the thinking field); a call written only in the
// reasoning runs nothing and the model is told to write it in its reply.
func TestACallIsNeverRunTwice(t *testing.T) {
	call := callFormats[0].call
	for _, tc := range []struct {
		name    string
		replies []ollamatest.Reply
		nudge   string
	}{
		{"think block in the text, then the call", []ollamatest.Reply{ollamatest.Text("<think>I will write the file: " + call + "</think>\n" + call)}, ""},
		{"thinking stream, then the call", []ollamatest.Reply{ollamatest.Thinking("I will write the file: "+call, call)}, ""},
		{"reasoning opened by the template", []ollamatest.Reply{ollamatest.Text("I will write the file: " + call + "\n</think>\n\n" + call)}, ""},
		{"only in a think block", []ollamatest.Reply{ollamatest.Text("<think>I will call " + call + "</think>"), ollamatest.Text(call)}, "Your call to write was written inside your reasoning"},
		{"only in the thinking stream", []ollamatest.Reply{ollamatest.Thinking("I will call "+call, ""), ollamatest.Text(call)}, "Your call to write was written inside your reasoning"},
		{"native call and the same call in the text", []ollamatest.Reply{{Text: call, ToolCalls: []ollamatest.ToolCall{ollamatest.Call("write", `{"path": "out.txt", "content": "hi there"}`)}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTurn(t, tc.replies...)
			if r.end.Reason != "done" || len(r.starts) != 1 || r.writes() != 1 {
				t.Fatalf("turn %q (%v): %d calls started, %d writes; want exactly one", r.end.Reason, r.end.Err, len(r.starts), r.writes())
			}
			nudges := r.nudges()
			if (tc.nudge == "") != (len(nudges) == 0) || (tc.nudge != "" && !strings.Contains(nudges[0], tc.nudge)) {
				t.Fatalf("nudges %q, want %q", nudges, tc.nudge)
			}
		})
	}
}

// TestAStraySpaceIsRefusedNotCreated: qwen3-coder's XML without </parameter> keeps the space the
// model put after the tag (the value is what the format defines); the write tool refuses a path
// that does not exist and starts with white space, names the path meant, and nothing is created
// until the model sends it.
func TestAStraySpaceIsRefusedNotCreated(t *testing.T) {
	bad := "<tool_call>\n<function=write>\n<parameter=path> test.txt\n<parameter=content> hello\n</function>\n</tool_call>"
	good := "<tool_call>\n<function=write>\n<parameter=path>\ntest.txt\n</parameter>\n<parameter=content>\nhello\n</parameter>\n</function>\n</tool_call>"
	r := runTurn(t, ollamatest.Text(bad), ollamatest.Text(good))
	if r.end.Reason != "done" || len(r.ends) != 2 {
		t.Fatalf("turn %q (%v), %d calls", r.end.Reason, r.end.Err, len(r.ends))
	}
	first := r.ends[0].Result
	if !first.IsError || first.Type != tools.InvalidArgs || !strings.Contains(first.Text(), `"test.txt"`) || !strings.Contains(first.Text(), "white space") {
		t.Fatalf("first call: %+v; want invalid_args naming \"test.txt\"", first)
	}
	entries, _ := os.ReadDir(r.ws)
	for _, e := range entries {
		if strings.TrimSpace(e.Name()) != e.Name() {
			t.Errorf("created %q", e.Name())
		}
	}
	wantFile(t, r.ws, "test.txt", "hello")
}

// TestServerParseFailureIsRetriedWithItsRawText: Ollama's 500 "error parsing tool call" does not
// end the turn: the model is shown what it wrote and the parser's error, and its next call runs;
// three in a row end the turn with advice about the model's tool calls, not about memory.
func TestServerParseFailureIsRetriedWithItsRawText(t *testing.T) {
	parse500 := ollamatest.HTTPError(500, `error parsing tool call: raw='{"path":"out.txt","content":"hi \there}', err=invalid character 't' in string escape code`)
	native := ollamatest.Calls(ollamatest.Call("write", `{"path": "out.txt", "content": "hi there"}`))
	r := runTurn(t, parse500, native)
	if r.end.Reason != "done" || r.writes() != 1 {
		t.Fatalf("turn %q (%v), %d writes", r.end.Reason, r.end.Err, r.writes())
	}
	nudges := r.nudges()
	if len(nudges) != 1 || !strings.Contains(nudges[0], "invalid character 't' in string escape code") ||
		!strings.Contains(nudges[0], `{"path":"out.txt","content":"hi \there}`) || !strings.Contains(nudges[0], `"name": "write"`) {
		t.Fatalf("nudges %q: want the server's error, the raw text and the write tool's format", nudges)
	}

	r = runTurn(t, parse500, parse500, parse500, native)
	var me *agent.ModelError
	if r.end.Reason != "error" || !asModelError(r.end.Err, &me) || me.Kind != agent.ErrBadToolCall {
		t.Fatalf("turn %q (%v), want an error of kind %s", r.end.Reason, r.end.Err, agent.ErrBadToolCall)
	}
	if len(r.chats) != 3 || r.writes() != 0 || strings.Contains(me.Fix, "memory") || !strings.Contains(me.Fix, "the model's output") {
		t.Fatalf("%d requests, %d writes, fix %q", len(r.chats), r.writes(), me.Fix)
	}
}

// TestUnreadCallsEndTheTurnAfterTheLimit: a model that keeps writing unreadable calls is told
// twice, then the turn ends with the error and what it wrote (never a silent "done").
func TestUnreadCallsEndTheTurnAfterTheLimit(t *testing.T) {
	bad := ollamatest.Text(callFormats[4].malformed)
	r := runTurn(t, bad, bad, bad)
	var me *agent.ModelError
	if r.end.Reason != "error" || !asModelError(r.end.Err, &me) || me.Kind != agent.ErrBadToolCall ||
		!strings.Contains(me.Message, "3 times in a row") || !strings.Contains(me.Message, "[TOOL_CALLS]write") {
		t.Fatalf("turn %q (%v)", r.end.Reason, r.end.Err)
	}
	if len(r.chats) != 3 || len(r.nudges()) != 2 || len(r.starts) != 0 {
		t.Fatalf("%d requests, %d nudges, %d calls", len(r.chats), len(r.nudges()), len(r.starts))
	}
}

func asModelError(err error, me **agent.ModelError) bool {
	e, ok := err.(*agent.ModelError)
	*me = e
	return ok
}

func wantFile(t *testing.T, ws, name, content string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, name))
	if err != nil || string(b) != content {
		t.Fatalf("%s: %q, %v; want %q", name, b, err, content)
	}
}
