package textcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Keys of a call object (see the package invariant).
var (
	argKeys      = []string{"arguments", "args", "parameters", "params", "input"}
	altNameKeys  = []string{"method", "tool", "tool_name", "function"}
	ignoredKeys  = []string{"id", "jsonrpc", "index"}
	allowedTypes = []string{"function", "tool_use", "tool_call"}
)

// objectCall reads a call object. It returns the call, or why the object is not one.
func (p *parser) objectCall(raw []byte, f Format) (Call, string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Call{}, "it is not a JSON object"
	}
	if t, ok := obj["type"]; ok {
		var s string
		if json.Unmarshal(t, &s) != nil || !contains(allowedTypes, s) {
			return Call{}, fmt.Sprintf(`"type" is %s, not "function"`, t)
		}
		delete(obj, "type")
	}
	for _, k := range ignoredKeys {
		delete(obj, k)
	}
	if fn, ok := obj["function"]; ok && bytes.HasPrefix(bytes.TrimSpace(fn), []byte("{")) {
		if len(obj) != 1 {
			return Call{}, `"function" holds the call: nothing else may be beside it`
		}
		return p.objectCall(fn, f) // {"function": {"name": …, "arguments": …}}
	}
	name, nameKey, why := p.callName(obj)
	if why != "" {
		return Call{}, why
	}
	delete(obj, nameKey)
	var argsRaw json.RawMessage
	argKey := ""
	for _, k := range argKeys {
		if v, ok := obj[k]; ok {
			if argKey != "" {
				return Call{Name: name}, fmt.Sprintf("it has both %q and %q: put every argument in one \"arguments\" object", argKey, k)
			}
			argKey, argsRaw = k, v
		}
	}
	delete(obj, argKey)
	for k := range obj {
		return Call{Name: name}, fmt.Sprintf("it has the key %q: a call object holds only \"name\" and \"arguments\" (put every argument inside \"arguments\")", k)
	}
	if argKey == "" {
		return Call{Name: name, Arguments: json.RawMessage("{}"), Format: f}, ""
	}
	args, why := argumentsObject(argsRaw, argKey)
	if why != "" {
		return Call{Name: name}, why
	}
	return Call{Name: name, Arguments: args, Format: f}, ""
}

// callName finds the name of a call object, and the key that held it.
func (p *parser) callName(obj map[string]json.RawMessage) (name, key, why string) {
	str := func(k string) (string, bool) {
		var s string
		if json.Unmarshal(obj[k], &s) != nil {
			return "", false
		}
		return strings.TrimSpace(s), true
	}
	if _, ok := obj["name"]; ok {
		s, ok := str("name")
		switch {
		case !ok:
			return "", "", fmt.Sprintf(`"name" must be a string (the tool's name), got %s`, obj["name"])
		case s == "":
			return "", "", `"name" is empty: give the tool's name`
		}
		return s, "name", ""
	}
	for _, k := range altNameKeys {
		if s, ok := str(k); ok && p.offer(s) {
			return s, k, ""
		}
	}
	return "", "", `it has no "name": give the tool's name in "name"`
}

// argumentsObject accepts an object, null (no arguments), or a JSON string holding an object (or
// nothing), and returns the object compacted.
func argumentsObject(raw json.RawMessage, key string) (json.RawMessage, string) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return nil, fmt.Sprintf("%q is empty", key)
	case bytes.Equal(raw, []byte("null")):
		return json.RawMessage("{}"), ""
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, fmt.Sprintf("%q is not a valid JSON string", key)
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return json.RawMessage("{}"), ""
		}
		if s[0] != '{' || !json.Valid([]byte(s)) {
			return nil, fmt.Sprintf("%q must be a JSON object of the tool's parameters, got the string %s", key, excerptJSON(raw))
		}
		raw = []byte(s)
	case raw[0] != '{':
		return nil, fmt.Sprintf("%q must be a JSON object of the tool's parameters, got %s", key, excerptJSON(raw))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Sprintf("%q is not valid JSON: %v", key, err)
	}
	return json.RawMessage(buf.Bytes()), ""
}

func excerptJSON(b []byte) string {
	if len(b) > 60 {
		return string(b[:57]) + "…"
	}
	return string(b)
}

// jsonError describes why raw is not valid JSON, with where: "invalid character '}' looking for
// beginning of value, at `"path": }`".
func jsonError(raw string) string {
	var v any
	err := json.Unmarshal([]byte(raw), &v)
	if err == nil {
		return ""
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		at := int(se.Offset)
		from := max(0, at-24)
		near := strings.ReplaceAll(raw[from:min(len(raw), at+8)], "\n", `\n`)
		return fmt.Sprintf("%s, near `%s`", strings.TrimPrefix(err.Error(), "json: "), near)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// incomplete says why a JSON value that never closes is not valid: the first syntax error in it,
// or that it ends too soon.
func incomplete(rest string) string {
	var v any
	err := json.Unmarshal([]byte(rest), &v)
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Error() != "unexpected end of JSON input" {
		return "the JSON is not valid: " + jsonError(rest)
	}
	return "the JSON is not complete: a { or [ is never closed"
}

// readJSONCalls reads call-shaped JSON values (objects or arrays of objects) from s[i:] for as
// long as they come, separated by white space (and, with semi, semicolons). end is where the last
// one ended. A value that is not a call stops the reading: reason says why.
func (p *parser) readJSONCalls(s string, i int, f Format, semi bool) (end int, calls []Call, reason string) {
	end = i
	for {
		j := skipSpace(s, end)
		if semi && len(calls) > 0 && j < len(s) && s[j] == ';' {
			j = skipSpace(s, j+1)
		}
		if j >= len(s) || (s[j] != '{' && s[j] != '[') {
			return end, calls, ""
		}
		k := matchBrace(s, j)
		if k < 0 {
			return end, calls, incomplete(s[j:])
		}
		cs, why := p.jsonValueCalls(s[j:k], f)
		if why != "" {
			return end, calls, why
		}
		calls = append(calls, cs...)
		end = k
	}
}

// jsonValueCalls reads a call object or an array of call objects.
func (p *parser) jsonValueCalls(raw string, f Format) ([]Call, string) {
	if why := jsonError(raw); why != "" {
		return nil, "the JSON is not valid: " + why
	}
	if raw[0] == '{' {
		c, why := p.objectCall([]byte(raw), f)
		if why != "" {
			return nil, why
		}
		return []Call{c}, ""
	}
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &items); err != nil || len(items) == 0 {
		return nil, "the JSON array holds no call objects"
	}
	calls := make([]Call, 0, len(items))
	for _, it := range items {
		c, why := p.objectCall(it, f)
		if why != "" {
			return nil, why
		}
		calls = append(calls, c)
	}
	return calls, ""
}

// jsonBody reads a whole body as JSON calls: nothing may follow them.
func (p *parser) jsonBody(body string, f Format) ([]Call, string) {
	end, calls, why := p.readJSONCalls(body, 0, f, false)
	switch {
	case why != "":
		return nil, why
	case len(calls) == 0:
		return nil, "it holds no JSON call object"
	case strings.TrimSpace(body[end:]) != "":
		return nil, fmt.Sprintf("text follows the JSON: %q", excerpt(body[end:]))
	}
	return calls, ""
}

// callPrefix matches the start of a JSON object that names a tool: {"name": "read" …
var callPrefix = regexp.MustCompile(`^\{\s*"(name|method|tool|tool_name|function)"\s*:\s*"([^"\\]{1,128})"`)

// argsKeyNear matches an arguments key, for JSON that names an unknown tool.
var argsKeyNear = regexp.MustCompile(`"(arguments|parameters)"\s*:`)

// readBare reads a JSON object in the text. It is a call when it has a call's shape and names an
// offered tool or has an arguments key; it is an attempt that failed when it names an offered tool
// (or has "name" and an arguments key) and is not valid JSON, or not a valid call.
func (p *parser) readBare(s string, at int) attempt {
	if !looksLikeObject(s[at:]) {
		return attempt{start: at, end: at + 1}
	}
	end := matchBrace(s, at)
	if end < 0 || jsonError(s[at:end]) != "" {
		m := callPrefix.FindStringSubmatch(s[at:])
		if m == nil {
			return attempt{start: at, end: at + 1}
		}
		name := strings.TrimSpace(m[2])
		if !p.offer(name) && !(m[1] == "name" && argsKeyNear.MatchString(s[at:min(len(s), at+4096)])) {
			return attempt{start: at, end: at + 1}
		}
		if end < 0 {
			return problem(at, len(s), JSON, name, incomplete(s[at:]))
		}
		return problem(at, end, JSON, name, "the JSON is not valid: "+jsonError(s[at:end]))
	}
	raw := s[at:end]
	c, why := p.objectCall([]byte(raw), JSON)
	switch {
	case why == "" && (p.offer(c.Name) || hasArgsKey(raw)):
		return found(at, end, []Call{c})
	case why != "":
		if name, ok := p.attemptedName(raw); ok {
			return problem(at, end, JSON, name, why)
		}
	}
	return attempt{start: at, end: end} // some other JSON object: skip all of it, nested objects included
}

// attemptedName reports whether a JSON object that is not a valid call was meant as one: it names
// an offered tool, or has "name" and an arguments key.
func (p *parser) attemptedName(raw string) (string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &obj) != nil {
		return "", false
	}
	if fn, ok := obj["function"]; ok && bytes.HasPrefix(bytes.TrimSpace(fn), []byte("{")) {
		return p.attemptedName(string(fn))
	}
	for _, k := range append([]string{"name"}, altNameKeys...) {
		var s string
		if json.Unmarshal(obj[k], &s) == nil && p.offer(strings.TrimSpace(s)) {
			return strings.TrimSpace(s), true
		}
	}
	var s string
	if json.Unmarshal(obj["name"], &s) == nil && hasArgsKey(raw) {
		return strings.TrimSpace(s), true
	}
	return "", false
}

func hasArgsKey(raw string) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &obj) != nil {
		return false
	}
	for _, k := range argKeys {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	_, fn := obj["function"]
	return fn
}

// looksLikeObject reports whether s starts like a JSON object with a key: "{" then white space then
// a quote. It keeps the scan from trying every brace of a code snippet.
func looksLikeObject(s string) bool {
	i := skipSpace(s, 1)
	return i < len(s) && s[i] == '"'
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeString writes s as a JSON string, without HTML escaping.
func writeString(buf *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	buf.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
}
