package textcall

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

var offered = []string{"read_file", "write_file", "get_weather", "get_time", "run"}

type wantCall struct {
	Name  string
	Args  string
	Known bool
}

func calls(cs []Call) []wantCall {
	var out []wantCall
	for _, c := range cs {
		out = append(out, wantCall{c.Name, string(c.Arguments), c.Known})
	}
	return out
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []wantCall
		rest    string
		problem string // a Problem's reason contains it ("": no problem)
	}{
		{
			name:    "plain text",
			content: "  The answer is 42.\n",
			rest:    "The answer is 42.",
		},
		{
			name:    "tagged call",
			content: `<tool_call>{"name":"read_file","arguments":{"path":"a.go"}}</tool_call>`,
			want:    []wantCall{{"read_file", `{"path":"a.go"}`, true}},
		},
		{
			name:    "tagged call after text, as recorded (20c)",
			content: "Let me check the weather.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>",
			want:    []wantCall{{"get_weather", `{"city":"Rome"}`, true}},
			rest:    "Let me check the weather.",
		},
		{
			name:    "tagged call without closing tag at the end",
			content: "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n",
			want:    []wantCall{{"get_time", `{}`, true}},
		},
		{
			name:    "unterminated tag followed by prose",
			content: "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}\nI will wait for the result.",
			want:    []wantCall{{"get_time", `{}`, true}},
			rest:    "I will wait for the result.",
		},
		{
			name: "two tagged calls",
			content: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n" +
				"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
			want: []wantCall{{"get_weather", `{"city":"Paris"}`, true}, {"get_time", `{}`, true}},
		},
		{
			name:    "two calls in one tag, one a line",
			content: "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}\n</tool_call>",
			want:    []wantCall{{"get_time", `{}`, true}, {"read_file", `{"path":"b"}`, true}},
		},
		{
			name:    "fenced json",
			content: "I'll read the file.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"main.go\"}}\n```\n",
			want:    []wantCall{{"read_file", `{"path":"main.go"}`, true}},
			rest:    "I'll read the file.",
		},
		{
			name:    "fence without language",
			content: "```\n{\"name\": \"get_time\", \"arguments\": {}}\n```",
			want:    []wantCall{{"get_time", `{}`, true}},
		},
		{
			name:    "fenced array of two calls",
			content: "```json\n[{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": \"run\", \"arguments\": {\"cmd\": \"ls\"}}]\n```",
			want:    []wantCall{{"get_time", `{}`, true}, {"run", `{"cmd":"ls"}`, true}},
		},
		{
			name:    "fenced json whose string holds a fence",
			content: "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"R.md\", \"content\": \"```go\\nx := 1\\n```\"}}\n```\nDone.",
			want:    []wantCall{{"write_file", `{"path":"R.md","content":"` + "```go\\nx := 1\\n```" + `"}`, true}},
			rest:    "Done.",
		},
		{
			name:    "bare JSON in prose, as recorded (21d)",
			content: `Sure: {"name": "get_weather", "arguments": {"city": "Lima"}}`,
			want:    []wantCall{{"get_weather", `{"city":"Lima"}`, true}},
			rest:    "Sure:",
		},
		{
			name:    "call inside prose",
			content: `I'll read it: {"name": "read_file", "arguments": {"path": "x"}} and then report.`,
			want:    []wantCall{{"read_file", `{"path":"x"}`, true}},
			rest:    "I'll read it: and then report.",
		},
		{
			name:    "parameters instead of arguments",
			content: `{"name": "get_weather", "parameters": {"city": "Oslo"}}`,
			want:    []wantCall{{"get_weather", `{"city":"Oslo"}`, true}},
		},
		{
			name:    "arguments as a JSON string",
			content: `{"name": "get_weather", "arguments": "{\"city\": \"Kyiv\"}"}`,
			want:    []wantCall{{"get_weather", `{"city":"Kyiv"}`, true}},
		},
		{
			name:    "arguments null",
			content: `{"name": "get_time", "arguments": null}`,
			want:    []wantCall{{"get_time", `{}`, true}},
		},
		{
			name:    "nested braces in strings",
			content: `{"name":"write_file","arguments":{"path":"x.go","content":"func f() { if x { return \"}\" } }"}}`,
			want:    []wantCall{{"write_file", `{"path":"x.go","content":"func f() { if x { return \"}\" } }"}`, true}},
		},
		{
			name:    "escaped quotes and backslashes",
			content: `Writing: {"name": "write_file", "arguments": {"path": "a\\b.txt", "content": "say \"hi\" {"}}`,
			want:    []wantCall{{"write_file", `{"path":"a\\b.txt","content":"say \"hi\" {"}`, true}},
			rest:    "Writing:",
		},
		{
			name:    "two bare calls on separate lines",
			content: "First:\n{\"name\": \"get_time\", \"arguments\": {}}\n{\"name\": \"run\", \"arguments\": {\"cmd\": \"go test\"}}\nThat's all.",
			want:    []wantCall{{"get_time", `{}`, true}, {"run", `{"cmd":"go test"}`, true}},
			rest:    "First:\nThat's all.",
		},
		{
			name:    "key order and characters kept",
			content: `{"name": "run", "arguments": {"z": 1, "a": [2, 3], "cmd": "a < b && c"}}`,
			want:    []wantCall{{"run", `{"z":1,"a":[2,3],"cmd":"a < b && c"}`, true}},
		},
		{
			name:    "JSON that is not a call",
			content: `The config is {"name": "app", "version": "1.0"} as shown.`,
			rest:    `The config is {"name": "app", "version": "1.0"} as shown.`,
		},
		{
			name:    "call shape with an extra key is not a call",
			content: `{"name": "run", "arguments": {"cmd": "ls"}, "reason": "look"}`,
			rest:    `{"name": "run", "arguments": {"cmd": "ls"}, "reason": "look"}`,
			problem: `it has the key "reason"`,
		},
		{
			name:    "call shape nested in other JSON is not a call",
			content: `Response: {"result": {"name": "run", "arguments": {}}}`,
			rest:    `Response: {"result": {"name": "run", "arguments": {}}}`,
		},
		{
			name:    "name that is not a string",
			content: `{"name": 5, "arguments": {}}`,
			rest:    `{"name": 5, "arguments": {}}`,
		},
		{
			name:    "empty name",
			content: `{"name": " ", "arguments": {}}`,
			rest:    `{"name": " ", "arguments": {}}`,
			problem: `"name" is empty`,
		},
		{
			name:    "arguments that are an array",
			content: `{"name": "run", "arguments": ["ls"]}`,
			rest:    `{"name": "run", "arguments": ["ls"]}`,
			problem: `"arguments" must be a JSON object of the tool's parameters, got ["ls"]`,
		},
		{
			name:    "arguments string that is not JSON",
			content: `{"name": "run", "arguments": "ls -la"}`,
			rest:    `{"name": "run", "arguments": "ls -la"}`,
			problem: `got the string "ls -la"`,
		},
		{
			name:    "invented tool name",
			content: `<tool_call>{"name": "delete_everything", "arguments": {"really": true}}</tool_call>`,
			want:    []wantCall{{"delete_everything", `{"really":true}`, false}},
		},
		{
			name:    "malformed JSON in a tag",
			content: "Reading.\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": }</tool_call>",
			rest:    "Reading.\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": }</tool_call>",
			problem: "invalid character '}' looking for beginning of value, near",
		},
		{
			name:    "malformed bare JSON",
			content: `Try {"name": "read_file", "arguments": {"path": "a.go"}`,
			rest:    `Try {"name": "read_file", "arguments": {"path": "a.go"}`,
			problem: "the JSON is not complete",
		},
		{
			name:    "malformed JSON in a fence does not let an inner object through",
			content: "```json\n{\"calls\": [{\"name\": \"run\", \"arguments\": {}}\n```",
			rest:    "```json\n{\"calls\": [{\"name\": \"run\", \"arguments\": {}}\n```",
		},
		{
			name:    "call-shaped JSON in a go fence is code",
			content: "Example:\n```go\nx := `{\"name\": \"run\", \"arguments\": {}}`\n```",
			rest:    "Example:\n```go\nx := `{\"name\": \"run\", \"arguments\": {}}`\n```",
		},
		{
			name:    "qwen3-coder function form",
			content: "<tool_call>\n<function=write_file>\n<parameter=path>\nmain.go\n</parameter>\n<parameter=content>\npackage main\n\nfunc main() {}\n\n</parameter>\n</function>\n</tool_call>",
			want:    []wantCall{{"write_file", `{"path":"main.go","content":"package main\n\nfunc main() {}\n"}`, true}},
		},
		{
			name:    "function form without the tool_call tag, after text",
			content: "Let me look.\n<function=read_file><parameter=path>a.go</parameter></function>",
			want:    []wantCall{{"read_file", `{"path":"a.go"}`, true}},
			rest:    "Let me look.",
		},
		{
			name:    "function form cut at the end",
			content: "<tool_call>\n<function=run>\n<parameter=cmd>\ngo test ./...\n</parameter>\n",
			want:    []wantCall{{"run", `{"cmd":"go test ./..."}`, true}},
		},
		{
			name:    "function with a JSON body",
			content: `<function=get_weather>{"city": "Rome", "days": 2}</function>`,
			want:    []wantCall{{"get_weather", `{"city":"Rome","days":2}`, true}},
		},
		{
			name:    "function without parameters",
			content: `<function=get_time></function>`,
			want:    []wantCall{{"get_time", `{}`, true}},
		},
		{
			name:    "function form with stray text is not a call",
			content: `<function=run>please run ls</function>`,
			rest:    `<function=run>please run ls</function>`,
			problem: "text outside <parameter=…>",
		},
		{
			name:    "OpenAI shape",
			content: `{"type": "function", "function": {"name": "get_time", "arguments": "{}"}}`,
			want:    []wantCall{{"get_time", `{}`, true}},
		},
		{
			name:    "type and id allowed",
			content: `{"id": "1", "type": "function", "name": "get_time", "parameters": {}}`,
			want:    []wantCall{{"get_time", `{}`, true}},
		},
		{
			name:    "type other than function",
			content: `{"type": "object", "name": "get_time", "arguments": {}}`,
			rest:    `{"type": "object", "name": "get_time", "arguments": {}}`,
			problem: `"type" is "object"`,
		},
		{
			name:    "Mistral marker",
			content: `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Nice"}}]`,
			want:    []wantCall{{"get_weather", `{"city":"Nice"}`, true}},
		},
		{
			name:    "blank lines around a removed call",
			content: "Step one.\n\n<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>\n\nStep two.",
			want:    []wantCall{{"get_time", `{}`, true}},
			rest:    "Step one.\n\nStep two.",
		},
		{
			name:    "code braces before a call",
			content: "In Go, `if x { y }` is a block. {\"name\": \"run\", \"arguments\": {\"cmd\": \"go vet\"}}",
			want:    []wantCall{{"run", `{"cmd":"go vet"}`, true}},
			rest:    "In Go, `if x { y }` is a block.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Parse(tt.content, offered)
			if !reflect.DeepEqual(calls(f.Calls), tt.want) {
				t.Errorf("calls:\n got %#v\nwant %#v", calls(f.Calls), tt.want)
			}
			if f.Rest != tt.rest {
				t.Errorf("rest:\n got %q\nwant %q", f.Rest, tt.rest)
			}
			var reasons []string
			for _, p := range f.Problems {
				reasons = append(reasons, p.Reason)
			}
			if (tt.problem == "") != (len(f.Problems) == 0) || (tt.problem != "" && !strings.Contains(strings.Join(reasons, "|"), tt.problem)) {
				t.Errorf("problems %q, want one saying %q", reasons, tt.problem)
			}
		})
	}
}

// TestParseFormats: every family's format, as its chat template or reference parser defines it,
// with the arguments exactly as the format gives them.
func TestParseFormats(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []wantCall
		rest    string
		format  Format
	}{
		{"hermes, args instead of arguments",
			"<tool_call>\n{\"name\": \"read_file\", \"args\": {\"path\": \"a.go\"}}\n</tool_call>",
			[]wantCall{{"read_file", `{"path":"a.go"}`, true}}, "", Hermes},
		{"JSON-RPC shape naming an offered tool",
			`{"jsonrpc": "2.0", "id": 1, "method": "read_file", "params": {"path": "a.go"}}`,
			[]wantCall{{"read_file", `{"path":"a.go"}`, true}}, "", JSON},
		{"tool instead of name, input instead of arguments",
			`{"type": "tool_use", "tool": "get_time", "input": {}}`,
			[]wantCall{{"get_time", `{}`, true}}, "", JSON},
		{"qwen3-coder: one newline each side is the format's, the rest is the value",
			"<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/a.txt\n</parameter>\n<parameter=content>\n  indented\n\n</parameter>\n</function>\n</tool_call>",
			[]wantCall{{"write_file", `{"path":"src/a.txt","content":"  indented\n"}`, true}}, "", QwenXML},
		{"qwen3-coder without </parameter>: the stray space stays in the value",
			"<tool_call>\n<function=write_file>\n<parameter=path> test.txt\n<parameter=content> hello\n</function>\n</tool_call>",
			[]wantCall{{"write_file", `{"path":" test.txt","content":" hello"}`, true}}, "", QwenXML},
		{"mistral v11: name[ARGS]{…}",
			`[TOOL_CALLS]get_weather[ARGS]{"city": "Nice"}`,
			[]wantCall{{"get_weather", `{"city":"Nice"}`, true}}, "", Mistral},
		{"mistral: two calls, with a call id, after text",
			`Checking. [TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Nice"}[TOOL_CALLS]get_time[ARGS]{}`,
			[]wantCall{{"get_weather", `{"city":"Nice"}`, true}, {"get_time", `{}`, true}}, "Checking.", Mistral},
		{"mistral v3: a JSON list",
			`[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Nice"}, "id": "abc123def"}]`,
			[]wantCall{{"get_weather", `{"city":"Nice"}`, true}}, "", Mistral},
		{"llama 3.1: python_tag and parameters",
			`<|python_tag|>{"name": "get_weather", "parameters": {"city": "Oslo"}}<|eom_id|>`,
			[]wantCall{{"get_weather", `{"city":"Oslo"}`, true}}, "", Llama},
		{"llama 3.1: python_tag, two calls separated by ;",
			`<|python_tag|>{"name": "get_time", "parameters": {}}; {"name": "run", "parameters": {"cmd": "ls"}}`,
			[]wantCall{{"get_time", `{}`, true}, {"run", `{"cmd":"ls"}`, true}}, "", Llama},
		{"llama 3.1: python_tag with a python call",
			`<|python_tag|>get_weather(city="Oslo")`,
			[]wantCall{{"get_weather", `{"city":"Oslo"}`, true}}, "", Llama},
		{"llama 3.2: a whole reply of python calls",
			`[get_weather(city="San Francisco", days=2), get_time()]`,
			[]wantCall{{"get_weather", `{"city":"San Francisco","days":2}`, true}, {"get_time", `{}`, true}}, "", Pythonic},
		{"gpt-oss harmony, special tokens kept",
			`<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Tokyo"}<|call|>`,
			[]wantCall{{"get_weather", `{"city":"Tokyo"}`, true}}, "", Harmony},
		{"gpt-oss harmony, tokens stripped",
			`commentary to=functions.read_file json{"path": "go.mod"}`,
			[]wantCall{{"read_file", `{"path":"go.mod"}`, true}}, "", Harmony},
		{"deepseek v3.1",
			`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Tokyo"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
			[]wantCall{{"get_weather", `{"city":"Tokyo"}`, true}}, "", DeepSeek},
		{"deepseek r1: function, name and a fenced JSON",
			"Let me check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Tokyo\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			[]wantCall{{"get_weather", `{"city":"Tokyo"}`, true}, {"get_time", `{}`, true}}, "Let me check.", DeepSeek},
		{"deepseek with ASCII tokens",
			`<|tool_calls_begin|><|tool_call_begin|>get_time<|tool_sep|>{}<|tool_call_end|><|tool_calls_end|>`,
			[]wantCall{{"get_time", `{}`, true}}, "", DeepSeek},
		{"gemma tool_code fence",
			"I'll look.\n```tool_code\nprint(get_weather(city='Rome', units=\"metric\", days=3, hourly=False))\n```",
			[]wantCall{{"get_weather", `{"city":"Rome","units":"metric","days":3,"hourly":false}`, true}}, "I'll look.", Pythonic},
		{"gemma fenced JSON with parameters",
			"```json\n{\"name\": \"get_time\", \"parameters\": {}}\n```",
			[]wantCall{{"get_time", `{}`, true}}, "", JSON},
		{"python literals: escapes, lists, dicts, None",
			"```tool_code\nrun(cmd=\"echo 'a\\tb'\", env={'A': [1, 2.5, None]}, quiet=True)\n```",
			[]wantCall{{"run", `{"cmd":"echo 'a\tb'","env":{"A":[1,2.5,null]},"quiet":true}`, true}}, "", Pythonic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Parse(tt.content, offered)
			if !reflect.DeepEqual(calls(f.Calls), tt.want) {
				t.Errorf("calls:\n got %#v\nwant %#v", calls(f.Calls), tt.want)
			}
			for _, c := range f.Calls {
				if c.Format != tt.format {
					t.Errorf("format %q, want %q", c.Format, tt.format)
				}
			}
			if f.Rest != tt.rest {
				t.Errorf("rest %q, want %q", f.Rest, tt.rest)
			}
			if len(f.Problems) > 0 {
				t.Errorf("problems: %+v", f.Problems)
			}
		})
	}
}

// TestParseProblems: text that starts like a call of a known format and cannot be read is a
// Problem that says what is wrong, never plain text; text that only mentions calls is text.
func TestParseProblems(t *testing.T) {
	tests := []struct {
		name, content string
		format        Format
		tool          string
		reason        string
	}{
		{"mistral without [ARGS]", `[TOOL_CALLS]get_weather city=Nice`, Mistral, "get_weather", "must be followed by [ARGS]"},
		{"mistral without [ARGS], invalid JSON", `[TOOL_CALLS]get_weather {"city" "Nice"}`, Mistral, "get_weather", "the JSON arguments of get_weather are not valid: invalid character '\"' after object key"},
		{"mistral invalid JSON after [ARGS]", `[TOOL_CALLS]get_weather[ARGS]{"city": Nice}`, Mistral, "get_weather", "are not valid: invalid character 'N'"},
		{"hermes with two argument keys", `<tool_call>{"name": "run", "args": {}, "arguments": {"cmd": "ls"}}</tool_call>`, Hermes, "", `both "arguments" and "args"`},
		{"hermes with an empty body", `<tool_call></tool_call>`, Hermes, "", "it is empty"},
		{"qwen3-coder with text between parameters", "<function=run>\n<parameter=cmd>\nls\n</parameter>\nthen\n</function>", QwenXML, "run", "text outside <parameter=…>"},
		{"qwen3-coder with a parameter given twice", "<function=run><parameter=cmd>ls</parameter><parameter=cmd>pwd</parameter></function>", QwenXML, "run", "given twice"},
		{"python tag that is neither JSON nor a call", `<|python_tag|>run the tests`, Llama, "", "(key=value"},
		{"harmony without JSON", `<|channel|>commentary to=functions.run <|message|>ls -la<|call|>`, Harmony, "run", "arguments as one JSON object"},
		{"harmony with invalid JSON", `<|channel|>commentary to=functions.run <|message|>{"cmd": "ls}<|call|>`, Harmony, "run", "not complete"},
		{"deepseek without a separator", `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time {}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`, DeepSeek, "", "no <｜tool▁sep｜>"},
		{"tool_code with positional arguments", "```tool_code\nget_weather('Rome')\n```", Pythonic, "", "must be named"},
		{"fenced JSON naming an offered tool, invalid", "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": 'a'}}\n```", JSON, "read_file", "not valid"},
		{"bare JSON naming an offered tool, with an extra key", `{"name": "get_time", "arguments": {}, "why": "asked"}`, JSON, "", `the key "why"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Parse(tt.content, offered)
			if len(f.Calls) != 0 || len(f.Problems) != 1 {
				t.Fatalf("calls %#v, problems %+v: want one problem", calls(f.Calls), f.Problems)
			}
			p := f.Problems[0]
			if p.Format != tt.format || !strings.Contains(p.Reason, tt.reason) || (tt.tool != "" && p.Name != tt.tool) {
				t.Errorf("problem %+v, want format %s, tool %q, reason with %q", p, tt.format, tt.tool, tt.reason)
			}
			if p.Text == "" || f.Rest != strings.TrimSpace(tt.content) {
				t.Errorf("text %q, rest %q: the attempt must stay in the text", p.Text, f.Rest)
			}
		})
	}
	for _, text := range []string{
		`Use {"method": "GET", "params": {}} for the request.`,
		"```python\nread_file(path='a')\n```",
		`[1, 2, 3] and [x(1)]`,
		`The reply was {"name": "app", "version": 2}.`,
	} {
		if f := Parse(text, offered); len(f.Calls)+len(f.Problems) != 0 {
			t.Errorf("%q: calls %#v, problems %+v; want plain text", text, calls(f.Calls), f.Problems)
		}
	}
}

// TestParseReasoning: a call inside reasoning is never a call to run (the same call in the reply
// runs once); it is reported, read or not, in Reasoning.
func TestParseReasoning(t *testing.T) {
	call := `<tool_call>{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}</tool_call>`
	tests := []struct {
		name, content string
		calls         int
		reasoning     int
		text          string
	}{
		{"think block with the call, then the call", "<think>I will write it: " + call + "</think>\n" + call, 1, 1, ""},
		{"think block only", "<think>I will write it: " + call + "</think>", 0, 1, ""},
		{"opening tag in the prompt", "I will write it: " + call + "</think>\n\nDone thinking. " + call, 1, 1, "Done thinking."},
		{"mistral [THINK]", "[THINK]maybe [TOOL_CALLS]get_time[ARGS]{}[/THINK][TOOL_CALLS]get_time[ARGS]{}", 1, 1, ""},
		{"harmony analysis", `<|channel|>analysis<|message|>call to=functions.get_time {}<|end|><|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}<|call|>`, 1, 1, ""},
		{"a malformed call in reasoning", "<think><tool_call>{\"name\": \"run\", \"arguments\": {</tool_call></think>The answer.", 0, 1, "The answer."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Parse(tt.content, offered)
			if len(f.Calls) != tt.calls || len(f.Reasoning) != tt.reasoning || len(f.Problems) != 0 {
				t.Fatalf("calls %#v, reasoning %+v, problems %+v", calls(f.Calls), f.Reasoning, f.Problems)
			}
			if f.Text != tt.text {
				t.Errorf("text %q, want %q", f.Text, tt.text)
			}
		})
	}
}

// TestParseNoOffered: with no tools offered, calls are still found, all unknown.
func TestParseNoOffered(t *testing.T) {
	got := Parse(`<tool_call>{"name": "read_file", "arguments": {}}</tool_call>`, nil).Calls
	if len(got) != 1 || got[0].Known {
		t.Fatalf("got %#v, want one unknown call", calls(got))
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"plain",
		`<tool_call>{"name":"read_file","arguments":{"path":"a"}}</tool_call>`,
		"```json\n[{\"name\":\"run\",\"arguments\":{}}]\n```",
		`Sure: {"name": "get_weather", "arguments": "{\"city\": \"x\"}"}`,
		"<function=run><parameter=cmd>ls</parameter></function>",
		"<tool_call>\n<function=run>\n<parameter=cmd>\nls",
		`[TOOL_CALLS][{"name":"run","arguments":{}}]`,
		`{"type":"function","function":{"name":"run","arguments":null}}`,
		"{\"name\": \"x\", \"arguments\": {\"a\": \"\\\"}\"}} {",
		"[TOOL_CALLS]run[CALL_ID]x[ARGS]{\"cmd\": \"ls\"}",
		"<|python_tag|>{\"name\": \"run\", \"parameters\": {}}; run(cmd='x')",
		"<|channel|>analysis<|message|>x<|end|>commentary to=functions.run json{}<|call|>",
		"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>run\n```json\n{}\n```<｜tool▁call▁end｜>",
		"```tool_code\nprint(run(cmd=\"\"\"a\nb\"\"\", n=[1, (2, 3)], d={'k': -1.5e3}))\n```",
		"a</think>b<think>c",
		"[run(cmd='ls')]",
		"```\n```\n```json\n{",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		f := Parse(content, offered)
		got, rest := f.Calls, f.Rest
		if len(rest) > len(content) {
			t.Fatalf("rest longer than content: %q", rest)
		}
		if rest != strings.TrimSpace(rest) {
			t.Fatalf("rest not trimmed: %q", rest)
		}
		if len(f.Text) > len(rest) {
			t.Fatalf("text %q longer than rest %q", f.Text, rest)
		}
		if len(got) == 0 && rest != strings.TrimSpace(content) {
			t.Fatalf("no call, but rest %q differs from the trimmed content", rest)
		}
		for _, c := range got {
			if c.Name == "" {
				t.Fatalf("call without a name: %#v", c)
			}
			var obj map[string]any
			if err := json.Unmarshal(c.Arguments, &obj); err != nil || obj == nil {
				t.Fatalf("arguments of %q are not a JSON object: %q", c.Name, c.Arguments)
			}
			known := false
			for _, o := range offered {
				known = known || o == c.Name
			}
			if known != c.Known {
				t.Fatalf("Known = %v for %q", c.Known, c.Name)
			}
		}
	})
}
