package agent

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentd/agentd/agent/textcall"
)

// unreadCalls are the tool calls a reply attempted that cannot run: the model is told what was
// wrong (nudgeUnread), never left to believe they ran, and the turn never ends on them silently.
type unreadCalls struct {
	// problems are attempts in the reply that could not be read.
	problems []textcall.Problem
	// reasoning are calls written only in the reasoning (the reply had none): never run.
	reasoning []textcall.Problem
	// server is the server's own failure to parse the model's call (nothing came back).
	server *ModelError
	// empty: the reply had no text, no call and no attempt at one.
	empty bool
}

func (u unreadCalls) none() bool {
	return len(u.problems) == 0 && len(u.reasoning) == 0 && u.server == nil
}

// first is the problem the turn's error names when the model keeps failing.
func (u unreadCalls) first() textcall.Problem {
	switch {
	case len(u.problems) > 0:
		return u.problems[0]
	case len(u.reasoning) > 0:
		p := u.reasoning[0]
		p.Reason = "the call was written inside the model's reasoning, where calls are not run"
		return p
	case u.server != nil:
		return serverProblem(u.server)
	}
	return textcall.Problem{}
}

// serverProblem describes a server's parse failure as a problem.
func serverProblem(me *ModelError) textcall.Problem {
	return textcall.Problem{Reason: "the server could not parse it: " + me.Message, Text: me.Raw}
}

// nudgeUnread tells the model which of its calls could not be run and why, and the one format to
// write them in; and tells the user, through the log (stderr for `agentd run`, the output panel
// for editors).
func (s *Session) nudgeUnread(turnID string, u unreadCalls, n int) {
	var b strings.Builder
	var name string
	var format textcall.Format
	switch {
	case u.server != nil:
		b.WriteString("The server could not read your tool call, so nothing was run: " + u.server.Message + ".")
		if u.server.Raw != "" {
			b.WriteString("\nYou wrote:" + quoteExcerpt(u.server.Raw))
		}
		name = s.toolNamed(u.server.Raw)
	case len(u.problems) > 0:
		if len(u.problems) == 1 {
			b.WriteString("Your tool call could not be read, so it was not run: ")
		} else {
			fmt.Fprintf(&b, "%d of your tool calls could not be read, so they were not run:", len(u.problems))
		}
		for _, p := range u.problems {
			if len(u.problems) > 1 {
				b.WriteString("\n- ")
			}
			b.WriteString(p.Reason + ".")
			if p.Text != "" {
				b.WriteString("\nYou wrote:" + quoteExcerpt(p.Text))
			}
			if name == "" {
				name, format = p.Name, p.Format
			}
		}
	default:
		names := []string{}
		for _, p := range u.reasoning {
			if p.Name != "" && !contains(names, p.Name) {
				names = append(names, p.Name)
			}
			if name == "" {
				name, format = p.Name, p.Format
			}
		}
		which := "Your tool call was"
		if len(names) > 0 {
			which = "Your call to " + strings.Join(names, ", ") + " was"
		}
		b.WriteString(which + " written inside your reasoning, where tool calls are not run, so nothing was run. Write the call in your reply, after your reasoning.")
	}
	b.WriteString("\nCall the tool again in exactly this format:\n" + s.callExample(format, name))
	s.appendMessage(turnID, Message{Role: RoleUser, Content: b.String(), Kind: KindNudge})
	p := u.first()
	slog.Warn(fmt.Sprintf("the model's tool call could not be run (%s); agentd told it what was wrong (%d of %d)", p.Reason, n, s.cfg.MaxUnreadCalls-1),
		"session", s.cfg.ID, "model", s.cfg.Info.Name)
}

// unreadError ends a turn whose model kept writing calls that cannot be read.
func (s *Session) unreadError(n int, last textcall.Problem) error {
	msg := fmt.Sprintf("the model wrote tool calls that could not be read %d times in a row; the last: %s", n, last.Reason)
	if last.Text != "" {
		msg += "; it wrote:" + quoteExcerpt(last.Text)
	}
	return &ModelError{Kind: ErrBadToolCall, Message: msg, Raw: last.Text,
		Fix: "this is the model's output, not a setting or a load failure: ask again in smaller steps " +
			"(a whole file's content in one call is where calls break most), or use a model that " +
			"calls tools reliably (e.g. qwen3:8b, qwen2.5-coder:7b), a larger one, or a less compressed quantization"}
}

// nudgeEmpty answers an empty reply once. A template-based server drops a call it cannot parse
// (malformed JSON, an unknown tool name) and sends nothing.
func (s *Session) nudgeEmpty() string {
	return "Your last reply was empty. It had no text and no tool call; if you meant to call a tool, the call " +
		"could not be read: write it in exactly this format:\n" + s.callExample("", "") +
		"\nwith one of the offered tool names. Otherwise, answer the user."
}

// callExample is the one format the model is asked to use: agentd's text format, which every
// reply is read for, except where a model's server parses the family's own format and would fail
// on another (qwen3-coder's XML, Mistral's [TOOL_CALLS]). The arguments shown are the tool's
// required parameters.
func (s *Session) callExample(f textcall.Format, name string) string {
	keys := s.requiredParams(name)
	if name == "" {
		name = "TOOL_NAME"
	}
	if len(keys) == 0 {
		keys = []string{"PARAMETER"}
	}
	if !s.textTools {
		switch f {
		case textcall.QwenXML:
			var b strings.Builder
			b.WriteString("<tool_call>\n<function=" + name + ">\n")
			for _, k := range keys {
				b.WriteString("<parameter=" + k + ">\nVALUE\n</parameter>\n")
			}
			b.WriteString("</function>\n</tool_call>")
			return b.String()
		case textcall.Mistral:
			return "[TOOL_CALLS]" + name + "[ARGS]" + exampleArgs(keys)
		}
	}
	return `<tool_call>{"name": "` + name + `", "arguments": ` + exampleArgs(keys) + `}</tool_call>`
}

func exampleArgs(keys []string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%q: VALUE", k)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// requiredParams are the required parameters of an offered tool, in its schema's order.
func (s *Session) requiredParams(name string) []string {
	for _, d := range s.defs {
		if d.Name != name {
			continue
		}
		var schema struct {
			Required []string `json:"required"`
		}
		if json.Unmarshal(d.Parameters, &schema) == nil {
			return schema.Required
		}
	}
	return nil
}

// toolNamed finds the offered tool a server's raw text is a call of: the one it names ("name":
// "read", <function=read>), else the one tool whose required parameters it holds the most of
// (harmony's raw text is the arguments alone). "" when that is not one tool.
func (s *Session) toolNamed(raw string) string {
	for _, n := range s.names {
		if strings.Contains(raw, `"`+n+`"`) || strings.Contains(raw, "="+n+">") {
			return n
		}
	}
	best, bestN, tie := "", 0, false
	for _, n := range s.names {
		req := s.requiredParams(n)
		have := 0
		for _, k := range req {
			if strings.Contains(raw, `"`+k+`"`) {
				have++
			}
		}
		switch {
		case have == 0 || have < len(req) || have < bestN:
		case have == bestN:
			tie = true
		default:
			best, bestN, tie = n, have, false
		}
	}
	if tie {
		return ""
	}
	return best
}

// quoteExcerpt is what the model wrote, cut to 300 bytes, on a line of its own.
func quoteExcerpt(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		i := 300
		for i > 0 && s[i]&0xC0 == 0x80 {
			i--
		}
		s = s[:i] + " …"
	}
	return "\n" + s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
