// Package textcall finds tool calls that a model printed as text instead of sending them natively.
//
// Local models often write the call into their reply: tagged (<tool_call>{…}</tool_call>), in a
// fenced ```json block, as a bare {"name": …, "arguments": …} object in prose, in qwen3-coder's
// <function=name><parameter=key>value</parameter></function> form, or after Mistral's
// [TOOL_CALLS] marker. Parse recognizes these forms; it never guesses beyond them.
//
// Invariant: JSON counts as a call only with the exact shape {name, arguments|parameters} (an
// optional "type":"function" and "id" aside, or OpenAI's {"function": {…}} wrapping), name being a
// non-empty string and the arguments an object (or a JSON string holding one). Anything else stays
// text.
//
// Invariant: names are checked against the offered tools; an unknown name is still returned, with
// Known false, so the kernel answers it with not_found and never executes it.
package textcall

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Call is one tool call found in text.
type Call struct {
	Name string
	// Arguments is a compact JSON object, keys in the order the model wrote them.
	Arguments json.RawMessage
	// Known reports whether Name is one of the offered tools.
	Known bool
}

// Parse returns the tool calls written in content, in order, and the content without them (trimmed,
// blank lines left by a removed call collapsed). When nothing is found, rest is the trimmed content.
// Malformed calls are not calls: their text stays in rest.
func Parse(content string, offered []string) (calls []Call, rest string) {
	var spans []span
	for i := 0; i < len(content); {
		at, kind := nextMarker(content, i)
		if at < 0 {
			break
		}
		sp, skipTo := parseAt(content, at, kind)
		if sp != nil {
			spans = append(spans, *sp)
			i = sp.end
			continue
		}
		i = max(skipTo, at+1)
	}
	if len(spans) == 0 {
		return nil, strings.TrimSpace(content)
	}
	for _, sp := range spans {
		for _, c := range sp.calls {
			c.Known = slices.Contains(offered, c.Name)
			calls = append(calls, c)
		}
	}
	return calls, cut(content, spans)
}

// span is a region of the content that holds calls.
type span struct {
	start, end int
	calls      []Call
}

type markerKind int

const (
	markToolCall markerKind = iota // <tool_call>
	markFunction                   // <function=
	markFence                      // ```
	markMistral                    // [TOOL_CALLS]
	markBrace                      // {
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
)

// nextMarker finds the first place at or after i where a call may start.
func nextMarker(s string, i int) (int, markerKind) {
	for ; i < len(s); i++ {
		switch s[i] {
		case '<':
			if strings.HasPrefix(s[i:], toolCallOpen) {
				return i, markToolCall
			}
			if strings.HasPrefix(s[i:], functionOpen) {
				return i, markFunction
			}
		case '`':
			if strings.HasPrefix(s[i:], fenceMark) {
				return i, markFence
			}
		case '[':
			if strings.HasPrefix(s[i:], mistralMark) {
				return i, markMistral
			}
		case '{':
			return i, markBrace
		}
	}
	return -1, 0
}

// parseAt tries to read calls at the marker. On failure it returns nil and where scanning goes on:
// past a whole tagged region or fence that is not a call, so nothing inside it is taken for one.
func parseAt(s string, at int, kind markerKind) (*span, int) {
	switch kind {
	case markToolCall:
		bodyStart := at + len(toolCallOpen)
		if j := strings.Index(s[bodyStart:], toolCallClose); j >= 0 {
			end := bodyStart + j + len(toolCallClose)
			if calls, ok := parseBody(s[bodyStart : bodyStart+j]); ok {
				return &span{at, end, calls}, end
			}
			return nil, end
		}
		// No closing tag: the reply stopped after the call, or went on with prose.
		if end, calls, ok := decodeCallsPrefix(s, bodyStart); ok {
			return &span{at, end, calls}, end
		}
		if calls, ok := parseBody(s[bodyStart:]); ok {
			return &span{at, len(s), calls}, len(s)
		}
		return nil, len(s)
	case markFunction:
		bodyEnd, end := closing(s, at, functionClose)
		if c, ok := parseFunction(s[at:bodyEnd]); ok {
			return &span{at, end, []Call{c}}, end
		}
		return nil, at + 1
	case markFence:
		return parseFence(s, at)
	case markMistral:
		bodyStart := at + len(mistralMark)
		end, calls, ok := decodeCallsPrefix(s, bodyStart)
		if ok {
			return &span{at, end, calls}, end
		}
		return nil, at + 1
	case markBrace:
		if !looksLikeObject(s[at:]) {
			return nil, at + 1
		}
		end := matchBrace(s, at)
		if end < 0 {
			return nil, at + 1
		}
		raw := []byte(s[at:end])
		if !json.Valid(raw) {
			return nil, at + 1
		}
		if c, ok := callFromJSON(raw); ok {
			return &span{at, end, []Call{c}}, end
		}
		return nil, end // some other JSON object: skip all of it, nested objects included
	}
	return nil, at + 1
}

// closing finds the closing tag from i: the body ends before it and the region after it. Without a
// closing tag (a reply cut at the end) the body runs to the end of the text.
func closing(s string, i int, tag string) (bodyEnd, end int) {
	if j := strings.Index(s[i:], tag); j >= 0 {
		return i + j, i + j + len(tag)
	}
	return len(s), len(s)
}

// parseBody reads the inside of a <tool_call> tag or a fence: JSON calls, a function form, or a
// tag, possibly wrapped in a fence.
func parseBody(body string) ([]Call, bool) {
	body = strings.TrimSpace(body)
	if strings.HasPrefix(body, fenceMark) {
		nl := strings.IndexByte(body, '\n')
		if nl < 0 {
			return nil, false
		}
		body = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(body[nl+1:]), fenceMark))
	}
	switch {
	case body == "":
		return nil, false
	case strings.HasPrefix(body, toolCallOpen):
		inner, end := closing(body, len(toolCallOpen), toolCallClose)
		if strings.TrimSpace(body[end:]) != "" {
			return nil, false
		}
		return parseBody(body[len(toolCallOpen):inner])
	case strings.HasPrefix(body, functionOpen):
		var calls []Call
		for body != "" {
			if !strings.HasPrefix(body, functionOpen) {
				return nil, false
			}
			bodyEnd, end := closing(body, 0, functionClose)
			c, ok := parseFunction(body[:bodyEnd])
			if !ok {
				return nil, false
			}
			calls = append(calls, c)
			body = strings.TrimSpace(body[end:])
		}
		return calls, true
	}
	return decodeCalls(body)
}

// parseFence reads a fenced block at `at`. Only blocks tagged json (or a tool-call tag, or nothing)
// can hold calls; any fence that holds none is skipped whole.
func parseFence(s string, at int) (*span, int) {
	infoStart := at + len(fenceMark)
	nl := strings.IndexByte(s[infoStart:], '\n')
	if nl < 0 {
		return nil, len(s) // a fence opened on the last line: nothing more to read
	}
	info := strings.ToLower(strings.TrimSpace(s[infoStart : infoStart+nl]))
	bodyStart := infoStart + nl + 1
	bodyEnd, end := len(s), len(s)
	if j := strings.Index(s[bodyStart:], fenceMark); j >= 0 {
		bodyEnd, end = bodyStart+j, bodyStart+j+len(fenceMark)
	}
	switch info {
	case "", "json", "jsonc", "json5", "tool_call", "tool_calls", "tool_code", "tool", "xml":
	default:
		return nil, end
	}
	// JSON first, read up to where it ends: a string in it may hold a fence of its own
	// ("content": "```go\n…```"), which must not close the block.
	if k, calls, ok := decodeCallsPrefix(s, bodyStart); ok {
		j := k
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		switch {
		case j == len(s):
			return &span{at, len(s), calls}, len(s)
		case strings.HasPrefix(s[j:], fenceMark):
			return &span{at, j + len(fenceMark), calls}, j + len(fenceMark)
		}
	}
	if calls, ok := parseBody(s[bodyStart:bodyEnd]); ok {
		return &span{at, end, calls}, end
	}
	return nil, end
}

// decodeCalls reads one or more JSON values, separated by white space, each a call or an array of
// calls. Anything else fails the whole body.
func decodeCalls(body string) ([]Call, bool) {
	end, calls, ok := decodeCallsPrefix(body, 0)
	if !ok || strings.TrimSpace(body[end:]) != "" {
		return nil, false
	}
	return calls, true
}

// decodeCallsPrefix reads call-shaped JSON values from s[i:] for as long as they come; end is where
// the last one ended.
func decodeCallsPrefix(s string, i int) (end int, calls []Call, ok bool) {
	end = i
	for {
		j := end
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		if j >= len(s) || (s[j] != '{' && s[j] != '[') {
			break
		}
		k := matchBrace(s, j)
		if k < 0 {
			break
		}
		cs, good := callsFromJSON([]byte(s[j:k]))
		if !good {
			break
		}
		calls = append(calls, cs...)
		end = k
	}
	return end, calls, len(calls) > 0
}

// callsFromJSON reads a call object or an array of call objects.
func callsFromJSON(raw []byte) ([]Call, bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	raw = bytes.TrimSpace(raw)
	if raw[0] == '{' {
		c, ok := callFromJSON(raw)
		if !ok {
			return nil, false
		}
		return []Call{c}, true
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, false
	}
	calls := make([]Call, 0, len(items))
	for _, it := range items {
		c, ok := callFromJSON(it)
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
	}
	return calls, true
}

// callFromJSON accepts exactly the call shapes (see the package invariant).
func callFromJSON(raw []byte) (Call, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Call{}, false
	}
	if t, ok := obj["type"]; ok {
		var s string
		if json.Unmarshal(t, &s) != nil || s != "function" {
			return Call{}, false
		}
		delete(obj, "type")
	}
	if id, ok := obj["id"]; ok {
		var s string
		if json.Unmarshal(id, &s) != nil {
			return Call{}, false
		}
		delete(obj, "id")
	}
	if fn, ok := obj["function"]; ok {
		if len(obj) != 1 {
			return Call{}, false
		}
		return callFromJSON(fn) // {"function": {"name": …, "arguments": …}}
	}
	nameRaw, ok := obj["name"]
	if !ok || len(obj) != 2 {
		return Call{}, false
	}
	var name string
	if json.Unmarshal(nameRaw, &name) != nil {
		return Call{}, false
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return Call{}, false
	}
	argsRaw, ok := obj["arguments"]
	if !ok {
		if argsRaw, ok = obj["parameters"]; !ok {
			return Call{}, false
		}
	}
	args, ok := argumentsObject(argsRaw)
	if !ok {
		return Call{}, false
	}
	return Call{Name: name, Arguments: args}, true
}

// argumentsObject accepts an object, null (no arguments), or a JSON string holding an object (or
// nothing), and returns the object compacted.
func argumentsObject(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return nil, false
	case bytes.Equal(raw, []byte("null")):
		return json.RawMessage("{}"), true
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return json.RawMessage("{}"), true
		}
		if s[0] != '{' || !json.Valid([]byte(s)) {
			return nil, false
		}
		raw = []byte(s)
	case raw[0] != '{':
		return nil, false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, false
	}
	return json.RawMessage(buf.Bytes()), true
}

// parseFunction reads "<function=name>" followed by a JSON object, <parameter=key>value</parameter>
// pairs, or nothing; s ends before "</function>" (or at the end of a cut reply).
func parseFunction(s string) (Call, bool) {
	rest := s[len(functionOpen):]
	gt := strings.IndexByte(rest, '>')
	if gt < 0 {
		return Call{}, false
	}
	name := strings.TrimSpace(rest[:gt])
	if !validName(name) {
		return Call{}, false
	}
	body := strings.TrimSpace(rest[gt+1:])
	if body == "" {
		return Call{Name: name, Arguments: json.RawMessage("{}")}, true
	}
	if body[0] == '{' {
		args, ok := argumentsObject(json.RawMessage(body))
		if !ok || !json.Valid([]byte(body)) {
			return Call{}, false
		}
		return Call{Name: name, Arguments: args}, true
	}
	var keys []string
	values := map[string]string{}
	for body != "" {
		if !strings.HasPrefix(body, paramOpen) {
			return Call{}, false
		}
		body = body[len(paramOpen):]
		gt := strings.IndexByte(body, '>')
		if gt < 0 {
			return Call{}, false
		}
		key := strings.TrimSpace(body[:gt])
		if !validName(key) {
			return Call{}, false
		}
		body = body[gt+1:]
		// The value ends at </parameter>; a model that forgets it ends the value at the next
		// parameter or at the end of the function.
		valueEnd, next := len(body), len(body)
		if j := strings.Index(body, paramClose); j >= 0 {
			valueEnd, next = j, j+len(paramClose)
		}
		if j := strings.Index(body[:valueEnd], paramOpen); j >= 0 {
			valueEnd, next = j, j
		}
		value := body[:valueEnd]
		// qwen3-coder puts the value on its own lines: drop one newline each side, keep the rest.
		value = strings.TrimPrefix(value, "\n")
		value = strings.TrimSuffix(value, "\n")
		if _, seen := values[key]; !seen {
			keys = append(keys, key)
		}
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
	return Call{Name: name, Arguments: json.RawMessage(buf.Bytes())}, true
}

func writeString(buf *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	buf.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
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

// looksLikeObject reports whether s starts like a JSON object with a key: "{" then white space then
// a quote. It keeps the scan from trying every brace of a code snippet.
func looksLikeObject(s string) bool {
	for i := 1; i < len(s); i++ {
		if isSpace(s[i]) {
			continue
		}
		return s[i] == '"'
	}
	return false
}

// matchBrace returns the end (exclusive) of the JSON object or array starting at s[i], following
// strings and escapes, or -1 when it is not closed.
func matchBrace(s string, i int) int {
	depth := 0
	inString := false
	for j := i; j < len(s); j++ {
		c := s[j]
		if inString {
			switch c {
			case '\\':
				j++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1
			}
			if depth < 0 {
				return -1
			}
		}
	}
	return -1
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// cut removes the spans from s. At each seam the white space on both sides becomes one space, one
// newline or one blank line, the most that either side had; the result is trimmed.
func cut(s string, spans []span) string {
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
