package agent_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentd/agentd/agent"
)

// promptPart is one part of the static prompt as the model reads it: the system prompt, or one
// tool's definition as a Qwen3 template renders it.
type promptPart struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// staticBudget caps the bytes of agentd's static prompt (the system prompt and the seven tool
// definitions as the qwen3 template renders them). The budget is 1,500 Qwen3 tokens, measured
// with the real tokenizer by `make bench` (scripts/tokens); the bytes cap keeps the figure from
// creeping up between measurements (these parts run at about 4.3 bytes a Qwen3 token).
const staticBudget = 6300

// TestStaticPromptFitsItsBudget renders the first request of a session (native tools, the
// recorded qwen3 template) and checks that the system prompt and the tool definitions stay within
// the budget. With AGENTD_PROMPT_PARTS=file it writes the parts there, for scripts/tokens.
func TestStaticPromptFitsItsBudget(t *testing.T) {
	reg := builtinRegistry(t)
	qwen3 := renderCases[1]
	req := firstRequest(t, qwen3, reg, agent.WorkspaceFacts{})
	rendered := render(t, loadTemplate(t, qwen3.source), req)
	parts := []promptPart{{"system", req.Messages[0].Content}}
	// Each tool's line of the <tools> block, as Ollama's template package renders it (its json
	// function writes the properties in key order, not the schema's).
	lines := strings.Split(rendered, "\n")
	for _, tool := range req.Tools {
		prefix := `{"type": "function", "function": {"name":"` + tool.Function.Name + `"`
		var line string
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("tool %s is not in the rendered prompt:\n%s", tool.Function.Name, rendered)
		}
		parts = append(parts, promptPart{tool.Function.Name, line})
	}
	textReq := firstRequest(t, renderCases[2], reg, agent.WorkspaceFacts{})
	total := 0
	for _, p := range parts {
		total += len(p.Text)
		t.Logf("%-8s %5d bytes", p.Name, len(p.Text))
	}
	t.Logf("total    %5d bytes (budget %d); system prompt for text tool calls: %d bytes", total, staticBudget, len(textReq.Messages[0].Content))
	if total > staticBudget {
		t.Errorf("the static prompt is %d bytes, over its budget of %d (1,500 Qwen3 tokens): measure with `make bench` and trim", total, staticBudget)
	}
	if path := os.Getenv("AGENTD_PROMPT_PARTS"); path != "" {
		parts = append(parts, promptPart{"system (text tool calls)", textReq.Messages[0].Content})
		b, _ := json.MarshalIndent(parts, "", "  ")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
