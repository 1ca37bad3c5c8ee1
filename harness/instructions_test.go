package harness

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/agent"
)

func TestInstructionsNote(t *testing.T) {
	for _, tc := range []struct {
		in        *agent.Instructions
		untrusted bool
		want      string
	}{
		{&agent.Instructions{Path: "AGENTS.md", Bytes: 1229, Text: "x"}, false, "using AGENTS.md (1.2 KB)"},
		{&agent.Instructions{Path: "AGENTS.md", Bytes: 300, Text: "x"}, false, "using AGENTS.md (300 B)"},
		{&agent.Instructions{Path: "AGENTS.md", Bytes: 20480, Text: strings.Repeat("x", 8000), Truncated: true}, false, "using AGENTS.md (20.0 KB, truncated to 7.8 KB)"},
		{nil, true, "AGENTS.md not used: the workspace is not trusted"},
		{nil, false, ""},
	} {
		if got := InstructionsNote(tc.in, tc.untrusted); got != tc.want {
			t.Errorf("InstructionsNote(%+v, %v) = %q, want %q", tc.in, tc.untrusted, got, tc.want)
		}
	}
}
