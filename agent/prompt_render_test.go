package agent_test

// Offline renders of the prompt agentd sends, through Ollama's own template package and the chat
// templates recorded from a real Ollama server (ollama/testdata/wire): the request is the one the
// real adapter (ollama.Client) sends to a fake server, for two different workspaces. The shared
// prefix of the two rendered prompts is what Ollama's prompt cache can reuse when a session
// starts in another folder.
//
//	go test -run TestPromptLayoutRenders -v ./agent/   # prints the table of docs/benchmarks.md

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/ollama/ollama/api"
	ollamatemplate "github.com/ollama/ollama/template"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/sandbox"
)

type renderCase struct {
	name   string // as in the table
	source string // an /api/show response (its "template") or a template file
	caps   []string
}

var renderCases = []renderCase{
	// tiny: the Qwen2.5 tool template (qwen2.5-coder uses the same), plus the test model's cues.
	{"qwen2.5-coder layout (recorded `tiny`)", "../ollama/testdata/wire/03-show-tiny.response.ndjson", []string{"completion", "tools"}},
	// tiny-think: the Qwen3 template with <think>, plus the test model's cues.
	{"qwen3 layout (recorded `tiny-think`)", "../ollama/testdata/wire/03b-show-tiny-think.response.ndjson", []string{"completion", "tools", "thinking"}},
	// tiny-plain: a legacy .System/.Prompt template without tools: agentd's text tool calls.
	{"no tools capability (recorded `tiny-plain`)", "../ollama/testdata/wire/03c-show-tiny-plain.response.ndjson", []string{"completion"}},
	// Not recorded: a template written for this test with llama3.1's layout.
	{"llama3.1 layout (written for the test)", "testdata/llama31-shape.gotmpl", []string{"completion", "tools"}},
}

// Two workspaces: different path, git state and project instructions.
var (
	workspaceA = agent.WorkspaceFacts{Root: "/home/ada/src/shop", OS: "linux/amd64",
		Git: "a git repository, branch main, 2 changed files",
		Instructions: agent.NewInstructions("AGENTS.md",
			[]byte(strings.Repeat("- Run `make check` before you answer; keep functions short.\n", 20)), 1220)}
	workspaceB = agent.WorkspaceFacts{Root: "/home/ada/src/agentd", OS: "linux/amd64",
		Git: "a git repository, branch feature/cache, no uncommitted changes"}
)

const userPrompt = "make the failing test pass"

func TestPromptLayoutRenders(t *testing.T) {
	reg := builtinRegistry(t)
	var table []string
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := loadTemplate(t, tc.source)
			reqA := firstRequest(t, tc, reg, workspaceA)
			reqB := firstRequest(t, tc, reg, workspaceB)
			afterA, afterB := render(t, tmpl, reqA), render(t, tmpl, reqB)
			beforeA := render(t, tmpl, legacyRequest(t, reqA, workspaceA))
			beforeB := render(t, tmpl, legacyRequest(t, reqB, workspaceB))

			static := reqA.Messages[0].Content
			block := agent.ContextBlock(workspaceA)
			// Nothing is lost: the static prompt, the facts, the instructions and the prompt are
			// all in the rendered prompt, the block before the user's words.
			iStatic, iBlock, iPrompt := strings.Index(afterA, static), strings.Index(afterA, block), strings.LastIndex(afterA, userPrompt)
			if iStatic < 0 || iBlock < 0 || iPrompt < 0 || !(iStatic < iBlock && iBlock < iPrompt) {
				t.Fatalf("rendered prompt lacks or misorders the system prompt (%d), the context block (%d) or the prompt (%d):\n%s", iStatic, iBlock, iPrompt, afterA)
			}
			// The part before the block is the same in both workspaces, and holds the whole system
			// prompt and every tool.
			shared := commonPrefix(afterA, afterB)
			if shared < iBlock {
				t.Errorf("the prompts of two workspaces differ at byte %d, before the context block (byte %d):\n%s", shared, iBlock, afterA[:min(len(afterA), shared+200)])
			}
			for _, d := range reg.Definitions() {
				if !strings.Contains(afterA[:shared], `"`+d.Name+`"`) && !strings.Contains(afterA[:shared], "- "+d.Name+":") {
					t.Errorf("tool %s is not in the shared prefix", d.Name)
				}
			}
			before := commonPrefix(beforeA, beforeB)
			if before >= shared {
				t.Errorf("the old layout shares %d bytes, the new one %d: no gain", before, shared)
			}
			table = append(table, fmt.Sprintf("| %s | %d | ~%d | %d | ~%d | %d |", tc.name, before, before/3, shared, shared/3, len(afterA)))
		})
	}
	t.Logf("shared prefix of the first prompt in two workspaces (tokens ≈ bytes/3):\n"+
		"| template | before: bytes | tokens | after: bytes | tokens | whole prompt A, bytes |\n|---|---|---|---|---|---|\n%s",
		strings.Join(table, "\n"))
}

// TestSecondSystemMessageWouldNotKeepTheCache checks, with Ollama's template package, why the
// facts go into the first user message and not into a second system message: Ollama joins every
// system message into the one .System, which the Qwen templates render before the tool block, so
// a second system message still precedes the tools. (llama3.1's layout puts the tools in the last
// user message, after any system message; a legacy .System/.Prompt template has no tool block.)
func TestSecondSystemMessageWouldNotKeepTheCache(t *testing.T) {
	msgs := []api.Message{
		{Role: "system", Content: "STATIC-INSTRUCTIONS"},
		{Role: "system", Content: "WORKSPACE-FACTS"},
		{Role: "user", Content: userPrompt},
	}
	tool := api.Tool{Type: "function", Function: api.ToolFunction{Name: "read_the_file", Description: "reads"}}
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := loadTemplate(t, tc.source)
			req := &api.ChatRequest{Messages: msgs}
			hasTools := strings.Contains(tmpl.String(), ".Tools")
			if hasTools {
				req.Tools = api.Tools{tool}
			}
			out := render(t, tmpl, req)
			iStatic, iFacts, iTool := strings.Index(out, "STATIC-INSTRUCTIONS"), strings.Index(out, "WORKSPACE-FACTS"), strings.Index(out, "read_the_file")
			switch {
			case !strings.Contains(tmpl.String(), ".Messages"):
				// Adjacent system messages are joined (collate) into the one .System; no tools.
				if iStatic < 0 || iFacts < iStatic {
					t.Errorf("legacy template: want both system messages joined, got:\n%s", out)
				}
			case strings.Contains(tc.source, "llama31"):
				// The tools are in the last user message: both system messages precede them.
				if iStatic < 0 || iFacts < iStatic || iTool < iFacts {
					t.Errorf("want both system messages before the tools, got:\n%s", out)
				}
			default:
				if iStatic < 0 || iFacts < iStatic || iTool < iFacts {
					t.Errorf("want the second system message joined into .System before the tools, got:\n%s", out)
				}
			}
		})
	}
}

// firstRequest runs one turn of a session in workspace f through the real adapter against a fake
// Ollama server, and returns the chat request the server received.
func firstRequest(t *testing.T, tc renderCase, reg *tools.Registry, f agent.WorkspaceFacts) *api.ChatRequest {
	t.Helper()
	fake := ollamatest.NewServer(&ollamatest.Script{Models: []ollamatest.Model{{Name: "m:latest", Capabilities: tc.caps, ContextLength: 40960}}})
	t.Cleanup(fake.Close)
	fake.Enqueue(ollamatest.Text("done"))
	client, err := ollama.New(ollama.Config{Host: fake.URL, Model: "m:latest"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	info, err := client.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ends := make(chan agent.TurnEnd, 1)
	sess, err := agent.NewSession(agent.SessionConfig{ID: "s", Model: client, Info: info, NumCtx: 16384,
		Think: info.Thinking, Kernel: agent.Config{Registry: reg}, Facts: f,
		Sink: func(e agent.Event) {
			if te, ok := e.(agent.TurnEnd); ok {
				ends <- te
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.Prompt(userPrompt); err != nil {
		t.Fatal(err)
	}
	select {
	case end := <-ends:
		if end.Reason != "done" {
			t.Fatalf("turn ended %q: %v", end.Reason, end.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for the end of the turn")
	}
	rec, ok := fake.LastChat()
	if !ok {
		t.Fatal("the fake server received no chat request")
	}
	return &rec.Request
}

// legacySystemTemplate is agent/system.md before the facts moved out of it (commit bf5b4cc).
const legacySystemTemplate = `You are agentd, a coding agent working in the user's workspace through tools. The user watches in
their editor and approves changes.

Workspace: {{.Root}}
Operating system: {{.OS}}
{{- if .Git}}
Git: {{.Git}}
{{- end}}

How to work:
- Work one step at a time. Call a tool, read its result, then decide the next step.
- Read a file before you edit it. Use grep and glob to find code; do not guess paths.
- Prefer ` + "`edit`" + ` (exact string replacement) over ` + "`write`" + `. Copy old_string exactly from the file as
  ` + "`read`" + ` showed it, without the line numbers, with enough lines to be unique.
- Keep each tool call small. Several small edits are better than one huge one.
- Run the project's tests or build with ` + "`bash`" + ` after changing code when they exist.
- If a tool returns an error, read it: it says what to do. Do not repeat the same failing call.
- If the user rejects a change, respect the reason they give.
- When the task is done, answer briefly: what you changed and why. Do not call tools after that.
- Paths are relative to the workspace root.
{{- if .TextTools}}

Tools: you call a tool by writing exactly one block like this in your reply, and nothing after it:
<tool_call>{"name": "TOOL_NAME", "arguments": {ARGUMENTS AS A JSON OBJECT}}</tool_call>
The result comes back in the next message. The tools and their JSON Schema arguments:
{{.ToolList}}
{{- end}}`

// legacyRequest rewrites a request into the old layout: the facts in the system prompt, no
// context block (the old layout had no project instructions).
func legacyRequest(t *testing.T, req *api.ChatRequest, f agent.WorkspaceFacts) *api.ChatRequest {
	t.Helper()
	const listIntro = "The tools and their JSON Schema arguments:\n"
	sys := req.Messages[0].Content
	toolList := ""
	textTools := strings.Contains(sys, listIntro)
	if textTools {
		toolList = sys[strings.Index(sys, listIntro)+len(listIntro):]
	}
	var b strings.Builder
	err := template.Must(template.New("").Parse(legacySystemTemplate)).Execute(&b, map[string]any{
		"Root": f.Root, "OS": f.OS, "Git": f.Git, "TextTools": textTools, "ToolList": toolList})
	if err != nil {
		t.Fatal(err)
	}
	out := *req
	out.Messages = append([]api.Message(nil), req.Messages...)
	out.Messages[0].Content = strings.TrimSpace(b.String())
	prefix := agent.ContextBlock(f) + "\n\n"
	if !strings.HasPrefix(out.Messages[1].Content, prefix) {
		t.Fatalf("the first user message does not start with the context block: %q", out.Messages[1].Content)
	}
	out.Messages[1].Content = strings.TrimPrefix(out.Messages[1].Content, prefix)
	return &out
}

func render(t *testing.T, tmpl *ollamatemplate.Template, req *api.ChatRequest) string {
	t.Helper()
	var b bytes.Buffer
	think := req.Think != nil && req.Think.Bool()
	if err := tmpl.Execute(&b, ollamatemplate.Values{Messages: req.Messages, Tools: req.Tools, Think: think}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// loadTemplate reads a template from an /api/show response (its "template" field) or a file.
func loadTemplate(t *testing.T, source string) *ollamatemplate.Template {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(source))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if strings.HasSuffix(source, ".ndjson") {
		var show api.ShowResponse
		if err := json.NewDecoder(bytes.NewReader(data)).Decode(&show); err != nil || show.Template == "" {
			t.Fatalf("%s: no template in the recorded /api/show response (%v)", source, err)
		}
		text = show.Template
	}
	tmpl, err := ollamatemplate.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// builtinRegistry is the seven built-in tools, whose schemas are the bulk of the static prompt.
func builtinRegistry(t *testing.T) *tools.Registry {
	t.Helper()
	ws, err := fsafe.NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	ts, err := builtin.New(builtin.Config{FS: fsafe.New(ws, fsafe.Options{}), Bash: builtin.BashConfig{Runner: noRunner{}}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry(ts...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// noRunner: the renders never run a command.
type noRunner struct{}

func (noRunner) Command(context.Context, []string, string, bool) (*sandbox.Cmd, error) {
	return nil, errors.New("no commands in this test")
}
func (noRunner) Describe(bool) (string, error) { return "none", nil }
