package harness

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/mcp"
)

// MaxToolShare is the share of the context window the tool definitions may take before agentd
// warns: every definition is sent with every request, and a small model chooses worse among many
// tools and has less room to work.
const MaxToolShare = 0.25

// ToolShare weighs a session's tool definitions against its context window.
type ToolShare struct {
	Tools  int // definitions
	Tokens int // their estimated tokens
	Window int // the context window (num_ctx)
	// MCP are the MCP servers' part, by server name.
	MCP []ServerShare
	// Warning says what to do when Tokens exceed MaxToolShare of Window ("" otherwise).
	Warning string
}

// ServerShare is one MCP server's part of the tool definitions.
type ServerShare struct {
	Server        string
	Tools, Tokens int
}

// DefinitionTokens estimates the tokens of one tool definition as a chat template renders it:
// its name, description and schema, and the wrapper around them. The built-in tools measure about
// 4.3 bytes a token with the Qwen3, Llama 3.1 and Gemma 3 tokenizers (docs/benchmarks.md); 4 is
// used.
func DefinitionTokens(d tools.Definition) int {
	return (len(d.Name) + len(d.Description) + len(d.Parameters) + 60) / 4
}

// WeighTools weighs definitions against a window. An MCP tool's name is "server__tool".
func WeighTools(defs []tools.Definition, window int) ToolShare {
	s := ToolShare{Tools: len(defs), Window: window}
	byServer := map[string]*ServerShare{}
	for _, d := range defs {
		n := DefinitionTokens(d)
		s.Tokens += n
		if server, _, ok := strings.Cut(d.Name, mcp.Separator); ok {
			ss := byServer[server]
			if ss == nil {
				ss = &ServerShare{Server: server}
				byServer[server] = ss
			}
			ss.Tools++
			ss.Tokens += n
		}
	}
	for _, ss := range byServer {
		s.MCP = append(s.MCP, *ss)
	}
	sort.Slice(s.MCP, func(i, j int) bool { return s.MCP[i].Tokens > s.MCP[j].Tokens })
	if window <= 0 || float64(s.Tokens) <= MaxToolShare*float64(window) {
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the definitions of the %d tools take about %d tokens, %d%% of the %d-token context window",
		s.Tools, s.Tokens, s.Tokens*100/window, window)
	if len(s.MCP) > 0 {
		parts := make([]string, len(s.MCP))
		for i, ss := range s.MCP {
			parts[i] = fmt.Sprintf("%s %d tools, ~%d tokens", ss.Server, ss.Tools, ss.Tokens)
		}
		fmt.Fprintf(&b, " (MCP servers: %s)", strings.Join(parts, "; "))
	}
	b.WriteString(", and go with every request: a small model chooses worse among many tools and has less room to work. ")
	if len(s.MCP) > 0 {
		b.WriteString(`Offer fewer with "tools" or "disabledTools" for a server in mcp.json, or give the model a larger window (context-length)`)
	} else {
		b.WriteString("Give the model a larger window (context-length), if it fits in memory (`agentd doctor --model`)")
	}
	s.Warning = b.String()
	return s
}

// ToolShare weighs the session's tool definitions against its context window: the one Start
// chose, else the one PlanWindow foresaw (0 before either: no warning).
func (h *Harness) ToolShare() ToolShare {
	h.mu.Lock()
	window := h.settings.NumCtx
	if window == 0 {
		window = h.planned
	}
	h.mu.Unlock()
	return WeighTools(h.registry.Definitions(), window)
}

// PlanWindow foresees the window Start will choose, so that a front end can tell the user about
// the session's setup (ToolShare) before its first turn. It asks the model server for the model's
// description; when that fails it returns 0 and Start will ask again.
func (h *Harness) PlanWindow(ctx context.Context) int {
	h.mu.Lock()
	window := h.settings.NumCtx
	h.mu.Unlock()
	if window > 0 {
		return window
	}
	info, err := h.model.Info(ctx)
	if err != nil {
		return 0
	}
	window = PlanNumCtx(info, h.registry.Definitions(), h.contextCap)
	h.mu.Lock()
	h.planned = window
	h.mu.Unlock()
	return window
}
