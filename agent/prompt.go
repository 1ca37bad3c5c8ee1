package agent

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/agentd/agentd/tools"
)

//go:embed system.md
var systemTemplate string

var systemTmpl = template.Must(template.New("system").Parse(systemTemplate))

// The prompt has two parts, so that Ollama's prompt cache covers the long one in every folder:
//
//   - the system prompt (SystemPrompt): instructions and, for text tool calls, the tool list. It
//     depends only on the tools and the calling mode, never on the workspace, so it is byte-identical
//     across workspaces and sessions. Chat templates render the native tool block inside or right
//     after the system message, so whatever the system message holds precedes the tools.
//   - the context block (ContextBlock): the workspace facts and the project's instructions. It is
//     put at the start of the first user message of every request (withContext), after the system
//     message and the tool block, and is not stored in the history.
//
// A second system message would not do: Ollama's template package joins every system message into
// the one .System, which the Qwen templates render before the tool block (see
// prompt_render_test.go).

// WorkspaceFacts are what the context block tells the model about where it works.
type WorkspaceFacts struct {
	Root string
	OS   string
	// Git summarises the repository state ("branch main, 3 changed files"), empty outside a repo.
	Git string
	// Instructions are the project's instructions (AGENTS.md); nil when there are none or the
	// harness did not read them (an untrusted workspace).
	Instructions *Instructions
}

// MaxInstructionsBytes caps the project instructions that go into the prompt (about 2.7k tokens):
// small local models have small windows, and the instructions are sent with every request.
const MaxInstructionsBytes = 8 << 10

// Instructions are a project's instructions file as the model reads it.
type Instructions struct {
	// Path is the file, relative to the workspace root ("AGENTS.md").
	Path string
	// Text is what the model reads: the file's text, cut to MaxInstructionsBytes.
	Text string
	// Bytes is the file's whole size.
	Bytes int64
	// Truncated says Text is only the beginning of the file.
	Truncated bool
}

// NewInstructions builds Instructions from the beginning of a file (data, at least
// MaxInstructionsBytes+1 bytes of it when the file is that long) and the file's size. A longer
// file is cut at the last line break within the cap (or the last whole character), and says so.
func NewInstructions(path string, data []byte, size int64) *Instructions {
	in := &Instructions{Path: path, Bytes: max(size, int64(len(data)))}
	if len(data) > MaxInstructionsBytes || in.Bytes > MaxInstructionsBytes {
		in.Truncated = true
		data = data[:min(len(data), MaxInstructionsBytes)]
		if i := strings.LastIndexByte(string(data), '\n'); i >= MaxInstructionsBytes/2 {
			data = data[:i+1]
		}
		// A character cut in two is dropped.
		if i := lastRuneStart(data); i >= 0 && !utf8.FullRune(data[i:]) {
			data = data[:i]
		}
	}
	in.Text = strings.TrimSpace(strings.ToValidUTF8(string(data), "\uFFFD"))
	return in
}

// SystemPrompt renders the system prompt: short, concrete guidance written for 7–32B local models.
// With textTools (a model without native tool calling) it also lists the tools and the text format
// for calling them. It depends on nothing else — not on the workspace — so it is byte-identical
// across workspaces and sessions, and Ollama's prompt cache covers it (and the tool block the
// template renders after it) in every folder.
func SystemPrompt(defs []tools.Definition, textTools bool) string {
	var list strings.Builder
	if textTools {
		for _, d := range defs {
			list.WriteString("- ")
			list.WriteString(d.Name)
			list.WriteString(": ")
			list.WriteString(firstParagraph(d.Description))
			list.WriteString("\n  arguments: ")
			list.Write(compactJSON(d.Parameters))
			list.WriteString("\n")
		}
	}
	var b strings.Builder
	err := systemTmpl.Execute(&b, struct {
		TextTools bool
		ToolList  string
	}{textTools, strings.TrimRight(list.String(), "\n")})
	if err != nil {
		panic(err) // the template is embedded and fixed
	}
	return strings.TrimSpace(b.String())
}

// MinWorkTokens is the room a session needs beyond its static prompt to do anything: a reply and
// a few files read.
const MinWorkTokens = 8192

// StaticTokens estimates the tokens of the static prompt: the system prompt and the tool
// definitions (about 4 bytes a token: the built-ins measure 4.3 with the Qwen3 tokenizer).
func StaticTokens(defs []tools.Definition, textTools bool) int {
	n := len(SystemPrompt(defs, textTools))
	if !textTools {
		for _, d := range defs {
			n += len(d.Name) + len(d.Description) + len(d.Parameters) + 60
		}
	}
	return n / 4
}

// TooShort reports whether a model trained for `trained` tokens cannot hold the static prompt and
// MinWorkTokens: no window, compaction or new session makes room to work on such a model.
func TooShort(trained int, defs []tools.Definition, textTools bool) bool {
	return trained > 0 && trained < StaticTokens(defs, textTools)+MinWorkTokens
}

// ContextBlock renders the per-workspace part of the prompt, "" when f is empty. The result
// depends only on f, which a session fixes when it starts, so every request of a session carries
// the same bytes.
func ContextBlock(f WorkspaceFacts) string {
	if f == (WorkspaceFacts{}) {
		return ""
	}
	var b strings.Builder
	b.WriteString("<context>\n")
	if f.Root != "" {
		fmt.Fprintf(&b, "Workspace: %s\n", f.Root)
	}
	if f.OS != "" {
		fmt.Fprintf(&b, "Operating system: %s\n", f.OS)
	}
	if f.Git != "" {
		fmt.Fprintf(&b, "Git: %s\n", f.Git)
	}
	if in := f.Instructions; in != nil && in.Text != "" {
		fmt.Fprintf(&b, "\nProject instructions, from %s at the workspace root:\n%s\n", in.Path, in.Text)
		if in.Truncated {
			fmt.Fprintf(&b, "[%s is %d bytes: only the first %d are shown. Read the file for the rest.]\n", in.Path, in.Bytes, len(in.Text))
		}
	}
	b.WriteString("</context>")
	return b.String()
}

// withContext returns the history as requests send it: the context block at the start of the
// first user message (the first prompt, or the summary after a compaction). h is not modified.
func withContext(h []Message, block string) []Message {
	if block == "" {
		return h
	}
	for i, m := range h {
		if m.Role == RoleUser {
			out := slices.Clone(h)
			out[i].Content = block + "\n\n" + m.Content
			return out
		}
	}
	return h
}

// lastRuneStart is the index of the last byte that starts a character, -1 when none does.
func lastRuneStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return -1
}

func firstParagraph(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	return strings.Join(strings.Fields(s), " ")
}

func compactJSON(b json.RawMessage) []byte {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	out, _ := json.Marshal(v)
	return out
}
