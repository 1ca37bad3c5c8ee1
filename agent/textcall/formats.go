package textcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// readToolCall reads <tool_call>…</tool_call>: JSON (Hermes) or the function form (qwen3-coder).
func (p *parser) readToolCall(s string, at int) attempt {
	bodyStart := at + len(toolCallOpen)
	if j := strings.Index(s[bodyStart:], toolCallClose); j >= 0 {
		end := bodyStart + j + len(toolCallClose)
		calls, f, why := p.body(s[bodyStart : bodyStart+j])
		if why != "" {
			return problem(at, end, f, nameIn(s[bodyStart:bodyStart+j]), why+" (in <tool_call>)")
		}
		return found(at, end, calls)
	}
	// No closing tag: the reply stopped after the call, or went on with prose.
	if end, calls, why := p.readJSONCalls(s, bodyStart, Hermes, false); why == "" && len(calls) > 0 {
		return found(at, end, calls)
	}
	calls, f, why := p.body(s[bodyStart:])
	if why != "" {
		return problem(at, len(s), f, nameIn(s[bodyStart:]), why+" (in <tool_call>, which is not closed by </tool_call>)")
	}
	return found(at, len(s), calls)
}

// looseName matches a name key in text that may not be valid JSON: "name": "x", 'name': 'x'.
var looseName = regexp.MustCompile(`["'](?:name|method|tool|tool_name|function)["']\s*:\s*["']([A-Za-z0-9_.:-]{1,128})["']`)

// nameIn finds a tool's name in a failed attempt, for the message: "name": "x" or <function=x>.
func nameIn(s string) string {
	if m := looseName.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	if i := strings.Index(s, functionOpen); i >= 0 {
		rest := s[i+len(functionOpen):]
		if gt := strings.IndexByte(rest, '>'); gt >= 0 && validName(strings.TrimSpace(rest[:gt])) {
			return strings.TrimSpace(rest[:gt])
		}
	}
	return ""
}

// body reads the inside of a <tool_call> tag or a fence: JSON calls, function forms, or a nested
// tag, possibly wrapped in a fence.
func (p *parser) body(body string) ([]Call, Format, string) {
	body = strings.TrimSpace(body)
	if strings.HasPrefix(body, fenceMark) {
		nl := strings.IndexByte(body, '\n')
		if nl < 0 {
			return nil, Hermes, "it holds an empty fence"
		}
		body = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(body[nl+1:]), fenceMark))
	}
	switch {
	case body == "":
		return nil, Hermes, "it is empty"
	case strings.HasPrefix(body, toolCallOpen):
		inner, end := closing(body, len(toolCallOpen), toolCallClose)
		if strings.TrimSpace(body[end:]) != "" {
			return nil, Hermes, "text follows the nested </tool_call>"
		}
		return p.body(body[len(toolCallOpen):inner])
	case strings.HasPrefix(body, functionOpen):
		var calls []Call
		for body != "" {
			if !strings.HasPrefix(body, functionOpen) {
				return nil, QwenXML, fmt.Sprintf("text outside <function=…>…</function>: %q", excerpt(body))
			}
			bodyEnd, end := closing(body, 0, functionClose)
			c, why := parseFunction(body[:bodyEnd])
			if why != "" {
				return nil, QwenXML, why
			}
			calls = append(calls, c)
			body = strings.TrimSpace(body[end:])
		}
		return calls, QwenXML, ""
	}
	calls, why := p.jsonBody(body, Hermes)
	return calls, Hermes, why
}

// readFunction reads a qwen3-coder function form without the <tool_call> tag.
func (p *parser) readFunction(s string, at int) attempt {
	bodyEnd, end := closing(s, at, functionClose)
	c, why := parseFunction(s[at:bodyEnd])
	if why != "" {
		return problem(at, end, QwenXML, nameIn(s[at:bodyEnd]), why)
	}
	return found(at, end, []Call{c})
}

// parseFunction reads "<function=name>" followed by <parameter=key>value</parameter> pairs, a
// JSON object, or nothing; s ends before "</function>" (or at the end of a cut reply).
//
// A value is the text between <parameter=key> and </parameter>, less one leading and one trailing
// newline (qwen3-coder writes each value on its own lines), exactly as the reference parser takes
// it: other white space is part of the value. A value whose </parameter> is missing ends at the
// next <parameter= or at the end of the function, by the same rule.
func parseFunction(s string) (Call, string) {
	rest := s[len(functionOpen):]
	gt := strings.IndexByte(rest, '>')
	if gt < 0 {
		return Call{}, "<function=NAME> is not closed by >"
	}
	name := strings.TrimSpace(rest[:gt])
	if !validName(name) {
		return Call{}, fmt.Sprintf("%q is not a tool name", name)
	}
	body := strings.TrimSpace(rest[gt+1:])
	if body == "" {
		return Call{Name: name, Arguments: json.RawMessage("{}"), Format: QwenXML}, ""
	}
	if body[0] == '{' {
		if why := jsonError(body); why != "" {
			return Call{Name: name}, "the JSON in <function=" + name + "> is not valid: " + why
		}
		args, why := argumentsObject(json.RawMessage(body), "arguments")
		if why != "" {
			return Call{Name: name}, why
		}
		return Call{Name: name, Arguments: args, Format: QwenXML}, ""
	}
	var keys []string
	values := map[string]string{}
	for body != "" {
		if !strings.HasPrefix(body, paramOpen) {
			return Call{Name: name}, fmt.Sprintf("text outside <parameter=…>…</parameter> in <function=%s>: %q", name, excerpt(body))
		}
		body = body[len(paramOpen):]
		gt := strings.IndexByte(body, '>')
		if gt < 0 {
			return Call{Name: name}, "<parameter=NAME> is not closed by >"
		}
		key := strings.TrimSpace(body[:gt])
		if !validName(key) {
			return Call{Name: name}, fmt.Sprintf("%q is not a parameter name", key)
		}
		body = body[gt+1:]
		valueEnd, next := len(body), len(body)
		if j := strings.Index(body, paramClose); j >= 0 {
			valueEnd, next = j, j+len(paramClose)
		}
		if j := strings.Index(body[:valueEnd], paramOpen); j >= 0 {
			valueEnd, next = j, j
		}
		value := strings.TrimSuffix(strings.TrimPrefix(body[:valueEnd], "\n"), "\n")
		if _, seen := values[key]; seen {
			return Call{Name: name}, fmt.Sprintf("the parameter %q is given twice", key)
		}
		keys = append(keys, key)
		values[key] = value
		body = strings.TrimSpace(body[next:])
	}
	// Values stay strings: the kernel coerces them against the tool's schema ("5" → 5).
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeString(&buf, k)
		buf.WriteByte(':')
		writeString(&buf, values[k])
	}
	buf.WriteByte('}')
	return Call{Name: name, Arguments: json.RawMessage(buf.Bytes()), Format: QwenXML}, ""
}

// readMistral reads [TOOL_CALLS]name[ARGS]{…} (with an optional [CALL_ID]id before [ARGS]) or
// [TOOL_CALLS][{…}, …].
func (p *parser) readMistral(s string, at int) attempt {
	i := skipSpace(s, at+len(mistralMark))
	if i < len(s) && (s[i] == '[' || s[i] == '{') {
		end, calls, why := p.readJSONCalls(s, i, Mistral, false)
		if why != "" || len(calls) == 0 {
			if why == "" {
				why = "no call follows [TOOL_CALLS]"
			}
			return problem(at, max(end, matchEnd(s, i)), Mistral, nameIn(s[i:]), why+" (after [TOOL_CALLS])")
		}
		return found(at, end, calls)
	}
	// name[ARGS]{…}
	j := i
	for j < len(s) && validName(s[j:j+1]) {
		j++
	}
	name := s[i:j]
	j = skipSpace(s, j)
	if !validName(name) {
		return problem(at, j, Mistral, "", fmt.Sprintf("[TOOL_CALLS] must be followed by the tool's name, [ARGS] and a JSON object, got %q", excerpt(s[i:min(len(s), i+40)])))
	}
	if strings.HasPrefix(s[j:], mistralCallID) {
		k := strings.Index(s[j:], mistralArgs)
		if k < 0 {
			return problem(at, len(s), Mistral, name, "[CALL_ID] is not followed by [ARGS] and the arguments")
		}
		j += k
	}
	switch {
	case strings.HasPrefix(s[j:], mistralArgs):
		j += len(mistralArgs)
	case j < len(s) && s[j] == '{' && p.offer(name):
		// name{…}: the [ARGS] token left out.
	default:
		return problem(at, j, Mistral, name, fmt.Sprintf("[TOOL_CALLS]%s must be followed by [ARGS] and a JSON object of arguments", name))
	}
	j = skipSpace(s, j)
	if j >= len(s) || s[j] != '{' {
		return problem(at, j, Mistral, name, "[ARGS] must be followed by a JSON object of arguments")
	}
	k := matchBrace(s, j)
	if k < 0 {
		return problem(at, len(s), Mistral, name, "the JSON arguments of "+name+" are not complete: a { is never closed")
	}
	if why := jsonError(s[j:k]); why != "" {
		return problem(at, k, Mistral, name, "the JSON arguments of "+name+" are not valid: "+why)
	}
	args, why := argumentsObject(json.RawMessage(s[j:k]), "[ARGS]")
	if why != "" {
		return problem(at, k, Mistral, name, why)
	}
	return found(at, k, []Call{{Name: name, Arguments: args, Format: Mistral}})
}

// matchEnd is where a JSON value starting at i ends, or the end of s when it is not closed.
func matchEnd(s string, i int) int {
	if k := matchBrace(s, i); k >= 0 {
		return k
	}
	return len(s)
}

// readPythonTag reads Llama 3.x's <|python_tag|> followed by JSON calls (separated by ";") or
// name(key=value) calls, up to <|eom_id|>, <|eot_id|> or the end.
func (p *parser) readPythonTag(s string, at int) attempt {
	bodyStart := at + len(pythonTag)
	bodyEnd, end := len(s), len(s)
	for _, tag := range []string{"<|eom_id|>", "<|eot_id|>"} {
		if j := strings.Index(s[bodyStart:], tag); j >= 0 && bodyStart+j < bodyEnd {
			bodyEnd, end = bodyStart+j, bodyStart+j+len(tag)
		}
	}
	body := strings.TrimSpace(s[bodyStart:bodyEnd])
	if strings.HasPrefix(body, "{") || strings.HasPrefix(body, "[{") {
		k, calls, why := p.readJSONCalls(body, 0, Llama, true)
		if why == "" && len(calls) > 0 && strings.TrimSpace(body[k:]) == "" {
			return found(at, end, calls)
		}
		if why == "" {
			why = fmt.Sprintf("text follows the JSON: %q", excerpt(body[k:]))
		}
		return problem(at, end, Llama, nameIn(body), why+" (after <|python_tag|>)")
	}
	calls, name, why := p.pythonCalls(body, Llama)
	if why != "" {
		return problem(at, end, Llama, name, why+" (after <|python_tag|>)")
	}
	return found(at, end, calls)
}

// readHarmony reads gpt-oss's "to=functions.NAME" then <|constrain|>json (or " json"),
// <|message|> and the JSON arguments, ending at <|call|> or <|end|> if there.
func (p *parser) readHarmony(s string, at int) attempt {
	start := harmonyStart(s, at)
	i := at + len(harmonyTo)
	j := i
	for j < len(s) && (validName(s[j:j+1]) && s[j] != '.') {
		j++
	}
	name := s[i:j]
	if name == "" {
		return problem(start, j, Harmony, "", "to=functions. must be followed by the tool's name")
	}
	// The header's tokens between the name and the arguments, in any order.
	for skipped := true; skipped; {
		j = skipSpace(s, j)
		skipped = false
		for _, tok := range []string{"<|constrain|>", "<|message|>", "<|channel|>commentary", "json"} {
			if strings.HasPrefix(s[j:], tok) {
				j, skipped = j+len(tok), true
				break
			}
		}
	}
	if j >= len(s) || s[j] != '{' {
		return problem(start, j, Harmony, name, fmt.Sprintf("the call to functions.%s must be followed by its arguments as one JSON object", name))
	}
	k := matchBrace(s, j)
	if k < 0 {
		return problem(start, len(s), Harmony, name, "the JSON object of arguments is not complete: a { is never closed")
	}
	if why := jsonError(s[j:k]); why != "" {
		return problem(start, k, Harmony, name, "the JSON arguments are not valid: "+why)
	}
	args, why := argumentsObject(json.RawMessage(s[j:k]), "arguments")
	if why != "" {
		return problem(start, k, Harmony, name, why)
	}
	end := k
	for _, tag := range []string{"<|call|>", "<|end|>"} {
		if e := skipSpace(s, end); strings.HasPrefix(s[e:], tag) {
			end = e + len(tag)
			break
		}
	}
	return found(start, end, []Call{{Name: name, Arguments: args, Format: Harmony}})
}

// harmonyStart backs up from "to=functions." over the header tokens before it on its line
// (<|start|>assistant, <|channel|>commentary), so that they are cut with the call.
func harmonyStart(s string, at int) int {
	j := at
	for {
		k := j
		for k > 0 && (s[k-1] == ' ' || s[k-1] == '\t') {
			k--
		}
		moved := false
		for _, tok := range []string{"<|channel|>commentary", "<|start|>assistant", "<|channel|>", "<|start|>", "commentary"} {
			if strings.HasSuffix(s[:k], tok) {
				j, moved = k-len(tok), true
				break
			}
		}
		if !moved {
			return j
		}
	}
}

// deepSeekToken reads a DeepSeek special token at s[i]: <｜tool▁call▁begin｜> and its ASCII
// spellings (| for ｜, _ for ▁). It returns the token's name in ASCII ("tool_call_begin") and
// where it ends, or "" when none is there.
func deepSeekToken(s string, i int) (string, int) {
	if i >= len(s) || s[i] != '<' {
		return "", i
	}
	j := i + 1
	bar := func() bool {
		switch {
		case strings.HasPrefix(s[j:], "｜"):
			j += len("｜")
		case strings.HasPrefix(s[j:], "|"):
			j++
		default:
			return false
		}
		return true
	}
	if !bar() {
		return "", i
	}
	var name strings.Builder
	for j < len(s) && name.Len() < 24 {
		switch {
		case strings.HasPrefix(s[j:], "▁"):
			name.WriteByte('_')
			j += len("▁")
		case s[j] == '_' || (s[j] >= 'a' && s[j] <= 'z'):
			name.WriteByte(s[j])
			j++
		default:
			if !bar() || j >= len(s) || s[j] != '>' {
				return "", i
			}
			switch n := name.String(); n {
			case "tool_calls_begin", "tool_calls_end", "tool_call_begin", "tool_call_end", "tool_sep":
				return n, j + 1
			}
			return "", i
		}
	}
	return "", i
}

// readDeepSeek reads DeepSeek's tool-call tokens: calls begin, then for each call
// <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜> (V3.1) or
// <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜> (R1, V3),
// then calls end.
func (p *parser) readDeepSeek(s string, at int) attempt {
	i := at
	if n, e := deepSeekToken(s, i); n == "tool_calls_begin" {
		i = e
	}
	var calls []Call
	for {
		i = skipSpace(s, i)
		n, e := deepSeekToken(s, i)
		if n == "tool_calls_end" {
			i = e
			break
		}
		if n != "tool_call_begin" {
			if len(calls) == 0 {
				return problem(at, i, DeepSeek, "", "the tool-calls block holds no <｜tool▁call▁begin｜>")
			}
			break
		}
		// The call runs to its end token (or the next call, or the end of the text).
		bodyStart := e
		bodyEnd, next := len(s), len(s)
		for k := bodyStart; k < len(s); k++ {
			if s[k] != '<' {
				continue
			}
			if t, te := deepSeekToken(s, k); t == "tool_call_end" {
				bodyEnd, next = k, te
				break
			} else if t == "tool_call_begin" || t == "tool_calls_end" {
				bodyEnd, next = k, k
				break
			}
		}
		c, why := p.deepSeekCall(s[bodyStart:bodyEnd])
		if why != "" {
			return problem(at, next, DeepSeek, c.Name, why)
		}
		calls = append(calls, c)
		i = next
	}
	return found(at, i, calls)
}

func (p *parser) deepSeekCall(body string) (Call, string) {
	sep := -1
	sepEnd := 0
	for k := 0; k < len(body); k++ {
		if t, e := deepSeekToken(body, k); t == "tool_sep" {
			sep, sepEnd = k, e
			break
		}
	}
	if sep < 0 {
		r := &pyReader{s: strings.TrimSpace(body)}
		return Call{Name: r.ident()}, "the call has no <｜tool▁sep｜> between the name and the arguments"
	}
	name, args := strings.TrimSpace(body[:sep]), body[sepEnd:]
	if name == "function" {
		// function<｜tool▁sep｜>NAME\n```json\n{…}\n```
		nl := strings.IndexByte(args, '\n')
		if nl < 0 {
			nl = len(args)
		}
		name, args = strings.TrimSpace(args[:nl]), args[nl:]
	}
	if !validName(name) {
		return Call{}, fmt.Sprintf("%q is not a tool name", name)
	}
	args = strings.TrimSpace(args)
	if strings.HasPrefix(args, fenceMark) {
		if nl := strings.IndexByte(args, '\n'); nl >= 0 {
			args = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(args[nl+1:]), fenceMark))
		}
	}
	if args == "" {
		return Call{Name: name, Arguments: json.RawMessage("{}"), Format: DeepSeek}, ""
	}
	if why := jsonError(args); why != "" {
		return Call{Name: name}, "the JSON arguments are not valid: " + why
	}
	obj, why := argumentsObject(json.RawMessage(args), "arguments")
	if why != "" {
		return Call{Name: name}, why
	}
	return Call{Name: name, Arguments: obj, Format: DeepSeek}, ""
}

// readFence reads a fenced block at `at`. Only blocks tagged json (or a tool-call tag, or nothing)
// hold JSON calls and tool_code blocks name(key=value) calls; any fence that holds none is
// skipped whole.
func (p *parser) readFence(s string, at int) attempt {
	infoStart := at + len(fenceMark)
	nl := strings.IndexByte(s[infoStart:], '\n')
	if nl < 0 {
		return attempt{start: at, end: len(s)} // a fence opened on the last line: nothing more to read
	}
	info := strings.ToLower(strings.TrimSpace(s[infoStart : infoStart+nl]))
	bodyStart := infoStart + nl + 1
	bodyEnd, end := len(s), len(s)
	if j := strings.Index(s[bodyStart:], fenceMark); j >= 0 {
		bodyEnd, end = bodyStart+j, bodyStart+j+len(fenceMark)
	}
	callFence := false // a fence whose tag says it holds a call
	switch info {
	case "tool_call", "tool_calls", "tool_code", "tool":
		callFence = true
	case "", "json", "jsonc", "json5", "xml":
	default:
		return attempt{start: at, end: end}
	}
	// JSON first, read up to where it ends: a string in it may hold a fence of its own
	// ("content": "```go\n…```"), which must not close the block.
	if k, calls, why := p.readJSONCalls(s, bodyStart, JSON, false); why == "" && len(calls) > 0 {
		j := skipSpace(s, k)
		switch {
		case j == len(s):
			return found(at, len(s), calls)
		case strings.HasPrefix(s[j:], fenceMark):
			return found(at, j+len(fenceMark), calls)
		}
	}
	body := strings.TrimSpace(s[bodyStart:bodyEnd])
	switch {
	case strings.HasPrefix(body, toolCallOpen), strings.HasPrefix(body, functionOpen):
		calls, f, why := p.body(body)
		if why != "" {
			return problem(at, end, f, nameIn(body), why)
		}
		return found(at, end, calls)
	case strings.HasPrefix(body, "{") || strings.HasPrefix(body, "["):
		calls, why := p.jsonBody(body, JSON)
		if why == "" {
			return found(at, end, calls)
		}
		if name, ok := p.attemptedJSON(body); ok || callFence {
			return problem(at, end, JSON, name, why+" (in the ```"+info+" block)")
		}
		return attempt{start: at, end: end}
	case callFence:
		calls, name, why := p.pythonCalls(body, Pythonic)
		if why != "" {
			return problem(at, end, Pythonic, name, why+" (in the ```"+info+" block)")
		}
		return found(at, end, calls)
	}
	return attempt{start: at, end: end}
}

// attemptedJSON reports whether a fenced JSON body that is not a call was meant as one.
func (p *parser) attemptedJSON(body string) (string, bool) {
	if json.Valid([]byte(body)) {
		return p.attemptedName(body)
	}
	m := callPrefix.FindStringSubmatch(body)
	if m == nil {
		return "", false
	}
	name := strings.TrimSpace(m[2])
	return name, p.offer(name) || (m[1] == "name" && argsKeyNear.MatchString(body))
}

// readPyList reads Llama 3.2's whole-reply list of calls, [name(key=value), …], when every name
// is an offered tool.
func (p *parser) readPyList(s string, at int) attempt {
	body := strings.TrimSpace(s[at:])
	if !strings.HasSuffix(body, "]") {
		return attempt{start: at, end: at + 1}
	}
	calls, name, why := p.pythonCalls(body[1:len(body)-1], Pythonic)
	if why != "" {
		if p.offer(name) {
			return problem(at, len(s), Pythonic, name, why)
		}
		return attempt{start: at, end: at + 1}
	}
	for _, c := range calls {
		if !p.offer(c.Name) {
			return attempt{start: at, end: at + 1}
		}
	}
	return found(at, len(s), calls)
}

// looksLikePyList: "[" then an identifier then "(".
func looksLikePyList(s string) bool {
	i := 1
	for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9') {
		i++
	}
	return i > 1 && i < len(s) && s[i] == '('
}
