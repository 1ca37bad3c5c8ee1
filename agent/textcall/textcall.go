// Package textcall reads the tool calls a model wrote as text instead of sending them natively,
// and says what is wrong with the ones it cannot read.
//
// Local models write calls in their own family's format, and a server's parser does not always
// take them out of the text: Hermes/Qwen <tool_call>{…}</tool_call>, qwen3-coder's
// <function=name><parameter=key>value</parameter></function>, Mistral's [TOOL_CALLS]name[ARGS]{…}
// (and the older [TOOL_CALLS][{…}]), Llama 3.x's <|python_tag|> and bare {"name": …,
// "parameters": …}, gpt-oss's harmony "to=functions.name … <|message|>{…}", DeepSeek's
// <｜tool▁call▁begin｜> tokens, Gemma's ```tool_code fences of name(key=value) calls, and fenced or
// bare JSON. Parse recognizes these forms; it never guesses beyond them. It depends on no model
// server, so every engine's replies go through it the same way.
//
// Invariant: a JSON object counts as a call only with a name and at most one arguments key
// (arguments, args, parameters, params or input), an optional "type":"function", "id" or
// "jsonrpc" aside, or OpenAI's {"function": {…}} wrapping. The name is a non-empty string under
// "name" (any name: an unknown one is returned with Known false and answered not_found), or under
// "method", "tool", "tool_name" or "function" when it names an offered tool (so a JSON-RPC
// {"method": "read", "params": {…}} is read, an HTTP example {"method": "GET", …} is not). The
// arguments are an object, null (none), or a JSON string holding an object.
//
// Invariant: argument values are taken exactly as the format defines them: JSON strings as
// decoded; a qwen3-coder value is the text between its tags less one leading and one trailing
// newline (the reference parser's rule), nothing more, so a value the model wrote with a stray
// space keeps it and the tool can refuse it; Python literals as Python reads them.
//
// Invariant: a call written inside reasoning (<think>…</think> or a reply that opens with text
// closed by </think>, Mistral's [THINK]…[/THINK], harmony's analysis channel) is never returned
// as a call: it is reported in Found.Reasoning, so the same intended call is never run twice
// (once from the reasoning, once from the reply).
//
// Invariant: text that starts like a call of a known format (a tag, a marker, a tool_code fence,
// or JSON naming an offered tool) and cannot be read is a Problem with the reason, never silently
// plain text.
package textcall

import (
	"encoding/json"
	"slices"
	"strings"
)

// Format names a tool-call format.
type Format string

const (
	// Hermes is <tool_call>{"name": …, "arguments": {…}}</tool_call> (Hermes, Qwen2.5, Qwen3 and
	// their fine-tunes, and agentd's own text format).
	Hermes Format = "hermes"
	// QwenXML is qwen3-coder's <tool_call><function=name><parameter=key>value</parameter>…
	QwenXML Format = "qwen3-coder"
	// Mistral is [TOOL_CALLS]name[ARGS]{…} (Devstral, Mistral Small 3.2, Magistral) or the older
	// [TOOL_CALLS][{"name": …, "arguments": {…}}].
	Mistral Format = "mistral"
	// Llama is Llama 3.x: <|python_tag|> followed by calls, or a bare {"name": …, "parameters": …}.
	Llama Format = "llama"
	// Harmony is gpt-oss: <|channel|>commentary to=functions.name <|constrain|>json<|message|>{…}<|call|>.
	Harmony Format = "harmony"
	// DeepSeek is <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>name<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…
	// (V3.1), or with "function<｜tool▁sep｜>name" and a fenced JSON (R1, V3).
	DeepSeek Format = "deepseek"
	// Pythonic is name(key=value, …) calls: Gemma's ```tool_code fences, Llama 3.2's [f(a=1)].
	Pythonic Format = "pythonic"
	// JSON is a call object in a ```json fence or bare in the text.
	JSON Format = "json"
)

// Call is one tool call found in text.
type Call struct {
	Name string
	// Arguments is a compact JSON object, keys in the order the model wrote them.
	Arguments json.RawMessage
	// Known reports whether Name is one of the offered tools.
	Known  bool
	Format Format
}

// Problem is text that was meant as a tool call and cannot be read as one.
type Problem struct {
	Format Format
	// Name is the tool the attempt names, when it could be read ("" otherwise).
	Name string
	// Reason says what is wrong, for the model: "the JSON after [ARGS] is not valid: …".
	Reason string
	// Text is the attempt as written, cut to about 300 bytes.
	Text string
}

// Found is what a reply's text holds.
type Found struct {
	// Calls are the calls to run, in order.
	Calls []Call
	// Problems are attempted calls that could not be read, in order.
	Problems []Problem
	// Rest is the text without the calls that were read (reasoning kept), trimmed, blank lines
	// left by a removed call collapsed. With nothing found it is the trimmed text.
	Rest string
	// Text is what the reply says outside reasoning and calls, trimmed: "" when the model only
	// reasoned, or only called.
	Text string
	// Reasoning holds the calls (read, or as problems) written inside reasoning: never run.
	Reasoning []Problem
}

// Parse reads the tool calls written in text. offered are the tool names the model was given.
func Parse(text string, offered []string) Found {
	p := &parser{s: text, offered: offered}
	from := 0
	// A reply may open with reasoning whose opening tag was in the prompt (templates that end the
	// prompt with "<think>"): everything up to a first closing tag that has no opening one.
	for _, tags := range reasoningTags {
		if end := strings.Index(text, tags[1]); end >= 0 && !strings.Contains(text[:end], tags[0]) {
			p.scan(0, end, true)
			p.reasoned = append(p.reasoned, region{0, end + len(tags[1])})
			from = end + len(tags[1])
			break
		}
	}
	p.scan(from, len(text), false)
	f := Found{Calls: p.calls, Problems: p.problems, Reasoning: p.reasoning}
	for i := range f.Calls {
		f.Calls[i].Known = slices.Contains(offered, f.Calls[i].Name)
	}
	f.Rest = cut(text, p.spans)
	f.Text = cut(text, mergeRegions(p.spans, p.reasoned))
	return f
}

// reasoningTags open and close a reasoning region written in the reply.
var reasoningTags = [][2]string{{"<think>", "</think>"}, {"<thinking>", "</thinking>"}, {"[THINK]", "[/THINK]"}}

const (
	harmonyAnalysis = "<|channel|>analysis"
	harmonyEnd      = "<|end|>"
)

// region is a part of the text [start, end).
type region struct{ start, end int }

type parser struct {
	s        string
	offered  []string
	calls    []Call
	problems []Problem
	// reasoning collects what scan found inside reasoning regions.
	reasoning []Problem
	spans     []region // the calls read outside reasoning, to cut from Rest
	reasoned  []region // reasoning regions, also cut from Text
}

func (p *parser) offer(name string) bool { return slices.Contains(p.offered, name) }

// attempt is what reading at a marker gave: calls, or a problem, or neither (plain text); end is
// where scanning goes on.
type attempt struct {
	start, end int
	calls      []Call
	prob       *Problem
}

// scan reads s[from:to]. Inside reasoning, calls and problems go to p.reasoning.
func (p *parser) scan(from, to int, inReasoning bool) {
	t := p.s[:to]
	for i := from; i < to; {
		at, kind := p.nextMarker(t, i, inReasoning)
		if at < 0 {
			return
		}
		if kind == markReasoning {
			end, innerEnd, innerStart := p.reasoningRegion(t, at)
			p.scan(innerStart, innerEnd, true)
			p.reasoned = append(p.reasoned, region{at, end})
			i = end
			continue
		}
		a := p.read(t, at, kind)
		switch {
		case len(a.calls) > 0 && inReasoning:
			for _, c := range a.calls {
				p.reasoning = append(p.reasoning, Problem{Format: c.Format, Name: c.Name, Text: excerpt(t[a.start:a.end])})
			}
		case len(a.calls) > 0:
			p.calls = append(p.calls, a.calls...)
			p.spans = append(p.spans, region{a.start, a.end})
		case a.prob != nil:
			a.prob.Text = excerpt(t[a.start:min(a.end, len(t))])
			if inReasoning {
				p.reasoning = append(p.reasoning, *a.prob)
			} else {
				p.problems = append(p.problems, *a.prob)
			}
		}
		i = max(a.end, at+1)
	}
}

// reasoningRegion reads a reasoning region at `at`: where it ends, and its inside.
func (p *parser) reasoningRegion(t string, at int) (end, innerEnd, innerStart int) {
	if strings.HasPrefix(t[at:], harmonyAnalysis) {
		innerStart = at + len(harmonyAnalysis)
		if j := strings.Index(t[innerStart:], harmonyEnd); j >= 0 {
			return innerStart + j + len(harmonyEnd), innerStart + j, innerStart
		}
		return len(t), len(t), innerStart
	}
	for _, tags := range reasoningTags {
		if strings.HasPrefix(t[at:], tags[0]) {
			innerStart = at + len(tags[0])
			if j := strings.Index(t[innerStart:], tags[1]); j >= 0 {
				return innerStart + j + len(tags[1]), innerStart + j, innerStart
			}
			return len(t), len(t), innerStart
		}
	}
	return at + 1, at + 1, at + 1
}

type markerKind int

const (
	markReasoning markerKind = iota // <think>, [THINK], harmony's analysis channel
	markToolCall                    // <tool_call>
	markFunction                    // <function=
	markMistral                     // [TOOL_CALLS]
	markPythonTag                   // <|python_tag|>
	markHarmony                     // to=functions.
	markDeepSeek                    // <｜tool▁calls▁begin｜> or <｜tool▁call▁begin｜>
	markFence                       // ```
	markBrace                       // {
	markPyList                      // [name( at the start of the reply
)

const (
	toolCallOpen  = "<tool_call>"
	toolCallClose = "</tool_call>"
	functionOpen  = "<function="
	functionClose = "</function>"
	paramOpen     = "<parameter="
	paramClose    = "</parameter>"
	fenceMark     = "```"
	mistralMark   = "[TOOL_CALLS]"
	mistralArgs   = "[ARGS]"
	mistralCallID = "[CALL_ID]"
	pythonTag     = "<|python_tag|>"
	harmonyTo     = "to=functions."
)

// nextMarker finds the first place at or after i where a call (or reasoning) may start.
func (p *parser) nextMarker(s string, i int, inReasoning bool) (int, markerKind) {
	for ; i < len(s); i++ {
		switch s[i] {
		case '<':
			rest := s[i:]
			switch {
			case !inReasoning && (strings.HasPrefix(rest, "<think>") || strings.HasPrefix(rest, "<thinking>") || strings.HasPrefix(rest, harmonyAnalysis)):
				return i, markReasoning
			case strings.HasPrefix(rest, toolCallOpen):
				return i, markToolCall
			case strings.HasPrefix(rest, functionOpen):
				return i, markFunction
			case strings.HasPrefix(rest, pythonTag):
				return i, markPythonTag
			}
			if name, _ := deepSeekToken(s, i); name == "tool_calls_begin" || name == "tool_call_begin" {
				return i, markDeepSeek
			}
		case '[':
			rest := s[i:]
			switch {
			case !inReasoning && strings.HasPrefix(rest, "[THINK]"):
				return i, markReasoning
			case strings.HasPrefix(rest, mistralMark):
				return i, markMistral
			case strings.TrimSpace(s[:i]) == "" && looksLikePyList(rest):
				return i, markPyList
			}
		case 't':
			if strings.HasPrefix(s[i:], harmonyTo) {
				return i, markHarmony
			}
		case '`':
			if strings.HasPrefix(s[i:], fenceMark) {
				return i, markFence
			}
		case '{':
			return i, markBrace
		}
	}
	return -1, 0
}

// read tries to read calls at a marker.
func (p *parser) read(s string, at int, kind markerKind) attempt {
	switch kind {
	case markToolCall:
		return p.readToolCall(s, at)
	case markFunction:
		return p.readFunction(s, at)
	case markMistral:
		return p.readMistral(s, at)
	case markPythonTag:
		return p.readPythonTag(s, at)
	case markHarmony:
		return p.readHarmony(s, at)
	case markDeepSeek:
		return p.readDeepSeek(s, at)
	case markFence:
		return p.readFence(s, at)
	case markBrace:
		return p.readBare(s, at)
	case markPyList:
		return p.readPyList(s, at)
	}
	return attempt{start: at, end: at + 1}
}

// closing finds the closing tag from i: the body ends before it and the region after it. Without a
// closing tag (a reply cut at the end) the body runs to the end of the text.
func closing(s string, i int, tag string) (bodyEnd, end int) {
	if j := strings.Index(s[i:], tag); j >= 0 {
		return i + j, i + j + len(tag)
	}
	return len(s), len(s)
}

func problem(start, end int, f Format, name, reason string) attempt {
	return attempt{start: start, end: end, prob: &Problem{Format: f, Name: name, Reason: reason}}
}

func found(start, end int, calls []Call) attempt {
	return attempt{start: start, end: end, calls: calls}
}

// excerpt cuts an attempt's text for a message: about 300 bytes, whole characters.
func excerpt(s string) string {
	s = strings.TrimSpace(s)
	const limit = 300
	if len(s) <= limit {
		return s
	}
	cutAt := limit
	for cutAt > 0 && s[cutAt]&0xC0 == 0x80 {
		cutAt--
	}
	return s[:cutAt] + " …"
}

// validName accepts identifier-like names (letters, digits, _ - . :), as tool and parameter names are.
func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.', r == ':':
		default:
			return false
		}
	}
	return true
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// mergeRegions returns a and b as one list sorted by start, overlapping regions merged.
func mergeRegions(a, b []region) []region {
	all := append(slices.Clone(a), b...)
	slices.SortFunc(all, func(x, y region) int { return x.start - y.start })
	var out []region
	for _, r := range all {
		if n := len(out); n > 0 && r.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, r.end)
			continue
		}
		out = append(out, r)
	}
	return out
}

// cut removes the regions (sorted, disjoint) from s. At each seam the white space on both sides
// becomes one space, one newline or one blank line, the most that either side had; the result is
// trimmed.
func cut(s string, spans []region) string {
	if len(spans) == 0 {
		return strings.TrimSpace(s)
	}
	out := s[:spans[0].start]
	gapNL := 0 // newlines of white-space-only pieces between consecutive spans
	for k, sp := range spans {
		next := len(s)
		if k+1 < len(spans) {
			next = spans[k+1].start
		}
		piece := s[sp.end:next]
		if strings.Trim(piece, " \t\r\n") == "" {
			gapNL = max(gapNL, strings.Count(piece, "\n"))
			continue
		}
		left := strings.TrimRight(out, " \t\r\n")
		right := strings.TrimLeft(piece, " \t\r\n")
		nl := max(gapNL, strings.Count(out[len(left):], "\n"), strings.Count(piece[:len(piece)-len(right)], "\n"))
		gapNL = 0
		out = left
		if left != "" {
			switch nl {
			case 0:
				out += " "
			case 1:
				out += "\n"
			default:
				out += "\n\n"
			}
		}
		out += right
	}
	return strings.TrimSpace(out)
}
