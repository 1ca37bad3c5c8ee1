package agent

import (
	_ "embed"
	"encoding/json"
	"strings"
	"text/template"

	"github.com/agentd/agentd/tools"
)

//go:embed system.md
var systemTemplate string

var systemTmpl = template.Must(template.New("system").Parse(systemTemplate))

// WorkspaceFacts are what the system prompt tells the model about where it works.
type WorkspaceFacts struct {
	Root string
	OS   string
	// Git summarises the repository state ("branch main, 3 changed files"), empty outside a repo.
	Git string
}

// SystemPrompt renders the system prompt: short, concrete guidance written for 7–32B local models.
// With textTools (a model without native tool calling) it also lists the tools and the text format
// for calling them. The result depends only on its inputs, so it is stable for a session.
func SystemPrompt(f WorkspaceFacts, defs []tools.Definition, textTools bool) string {
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
		WorkspaceFacts
		TextTools bool
		ToolList  string
	}{f, textTools, strings.TrimRight(list.String(), "\n")})
	if err != nil {
		panic(err) // the template is embedded and fixed
	}
	return strings.TrimSpace(b.String())
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
