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
		},
		{
			name:    "arguments that are an array",
			content: `{"name": "run", "arguments": ["ls"]}`,
			rest:    `{"name": "run", "arguments": ["ls"]}`,
		},
		{
			name:    "arguments string that is not JSON",
			content: `{"name": "run", "arguments": "ls -la"}`,
			rest:    `{"name": "run", "arguments": "ls -la"}`,
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
		},
		{
			name:    "malformed bare JSON",
			content: `Try {"name": "read_file", "arguments": {"path": "a.go"}`,
			rest:    `Try {"name": "read_file", "arguments": {"path": "a.go"}`,
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
			got, rest := Parse(tt.content, offered)
			if !reflect.DeepEqual(calls(got), tt.want) {
				t.Errorf("calls:\n got %#v\nwant %#v", calls(got), tt.want)
			}
			if rest != tt.rest {
				t.Errorf("rest:\n got %q\nwant %q", rest, tt.rest)
			}
		})
	}
}

// TestParseNoOffered: with no tools offered, calls are still found, all unknown.
func TestParseNoOffered(t *testing.T) {
	got, _ := Parse(`<tool_call>{"name": "read_file", "arguments": {}}</tool_call>`, nil)
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
		"```\n```\n```json\n{",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		got, rest := Parse(content, offered)
		if len(rest) > len(content) {
			t.Fatalf("rest longer than content: %q", rest)
		}
		if rest != strings.TrimSpace(rest) {
			t.Fatalf("rest not trimmed: %q", rest)
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
