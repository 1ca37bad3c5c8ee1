package textcall

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pythonCalls reads name(key=value, …) calls, one or more, separated by commas, semicolons or
// line breaks, each optionally wrapped in print(…) (Gemma's tool_code blocks show it). Values are
// Python literals: strings, numbers, True, False, None, lists and dicts of them. Positional
// arguments are refused: a call names every argument.
// On failure it returns the name of the call it could not read, when it got that far.
func (p *parser) pythonCalls(body string, f Format) ([]Call, string, string) {
	r := &pyReader{s: strings.TrimSpace(body)}
	var calls []Call
	for {
		r.space()
		if r.i >= len(r.s) {
			break
		}
		if len(calls) > 0 && (r.s[r.i] == ',' || r.s[r.i] == ';') {
			r.i++
			r.space()
		}
		c, why := r.call()
		if why != "" {
			return nil, c.Name, why
		}
		c.Format = f
		calls = append(calls, c)
	}
	if len(calls) == 0 {
		return nil, "", "it holds no call"
	}
	return calls, "", ""
}

type pyReader struct {
	s string
	i int
}

func (r *pyReader) space() {
	for r.i < len(r.s) && (isSpace(r.s[r.i])) {
		r.i++
	}
}

func (r *pyReader) ident() string {
	j := r.i
	for r.i < len(r.s) {
		c := r.s[r.i]
		if c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (r.i > j && c >= '0' && c <= '9') {
			r.i++
			continue
		}
		break
	}
	return r.s[j:r.i]
}

// items reads comma-separated items up to closeBy (a trailing comma allowed), with item reading
// the n-th; notClosed is the reason when neither a comma nor closeBy follows an item.
func (r *pyReader) items(closeBy byte, notClosed string, item func(n int) string) string {
	for n := 0; ; n++ {
		r.space()
		if r.i < len(r.s) && r.s[r.i] == closeBy {
			r.i++
			return ""
		}
		if n > 0 {
			if r.i >= len(r.s) || r.s[r.i] != ',' {
				return notClosed
			}
			r.i++
			r.space()
			if r.i < len(r.s) && r.s[r.i] == closeBy {
				r.i++
				return ""
			}
		}
		r.space()
		if why := item(n); why != "" {
			return why
		}
	}
}

// call reads name(key=value, …), or print(name(…)).
func (r *pyReader) call() (Call, string) {
	name := r.ident()
	if name == "" {
		return Call{}, fmt.Sprintf("expected a call like name(key=value), got %q", excerpt(r.s[r.i:]))
	}
	r.space()
	if r.i >= len(r.s) || r.s[r.i] != '(' {
		return Call{Name: name}, fmt.Sprintf("%s must be followed by (key=value, …)", name)
	}
	r.i++
	if name == "print" {
		r.space()
		c, why := r.call()
		if why != "" {
			return c, why
		}
		r.space()
		if r.i >= len(r.s) || r.s[r.i] != ')' {
			return c, "print( is not closed"
		}
		r.i++
		return c, ""
	}
	// functions.read(…), default_api.read(…), and Llama's read.call(…).
	name = strings.TrimSuffix(name, ".call")
	name = name[strings.LastIndexByte(name, '.')+1:]
	var buf bytes.Buffer
	buf.WriteByte('{')
	seen := map[string]bool{}
	why := r.items(')', fmt.Sprintf("the arguments of %s( are not separated by commas or not closed by )", name), func(n int) string {
		key := r.ident()
		r.space()
		if key == "" || r.i >= len(r.s) || r.s[r.i] != '=' {
			return fmt.Sprintf("the arguments of %s( must be named: %s(key=value)", name, name)
		}
		r.i++
		if seen[key] {
			return fmt.Sprintf("the argument %q is given twice", key)
		}
		seen[key] = true
		if n > 0 {
			buf.WriteByte(',')
		}
		writeString(&buf, key)
		buf.WriteByte(':')
		if why := r.literal(&buf, 0); why != "" {
			return fmt.Sprintf("the value of %s in %s( %s", key, name, why)
		}
		return ""
	})
	if why != "" {
		return Call{Name: name}, why
	}
	buf.WriteByte('}')
	return Call{Name: name, Arguments: buf.Bytes()}, ""
}

// literal reads a Python literal and writes it as JSON.
func (r *pyReader) literal(buf *bytes.Buffer, depth int) string {
	if depth > 32 {
		return "is nested too deeply"
	}
	r.space()
	if r.i >= len(r.s) {
		return "is missing"
	}
	switch c := r.s[r.i]; {
	case c == '"' || c == '\'':
		s, why := r.str()
		if why != "" {
			return why
		}
		writeString(buf, s)
	case c == '[' || c == '(':
		closeBy := byte(']')
		if c == '(' {
			closeBy = ')'
		}
		r.i++
		buf.WriteByte('[')
		if why := r.items(closeBy, "has a list that is not closed", func(n int) string {
			if n > 0 {
				buf.WriteByte(',')
			}
			return r.literal(buf, depth+1)
		}); why != "" {
			return why
		}
		buf.WriteByte(']')
	case c == '{':
		r.i++
		buf.WriteByte('{')
		if why := r.items('}', "has a dict that is not closed", func(n int) string {
			if n > 0 {
				buf.WriteByte(',')
			}
			if r.i >= len(r.s) || (r.s[r.i] != '"' && r.s[r.i] != '\'') {
				return "has a dict key that is not a string"
			}
			k, why := r.str()
			if why != "" {
				return why
			}
			writeString(buf, k)
			r.space()
			if r.i >= len(r.s) || r.s[r.i] != ':' {
				return "has a dict entry without ':'"
			}
			r.i++
			buf.WriteByte(':')
			return r.literal(buf, depth+1)
		}); why != "" {
			return why
		}
		buf.WriteByte('}')
	default:
		j := r.i
		for r.i < len(r.s) && (r.s[r.i] == '+' || r.s[r.i] == '-' || r.s[r.i] == '.' || r.s[r.i] == '_' ||
			r.s[r.i] >= '0' && r.s[r.i] <= '9' || r.s[r.i] >= 'a' && r.s[r.i] <= 'z' || r.s[r.i] >= 'A' && r.s[r.i] <= 'Z') {
			r.i++
		}
		word := r.s[j:r.i]
		switch word {
		case "True", "true":
			buf.WriteString("true")
		case "False", "false":
			buf.WriteString("false")
		case "None", "null":
			buf.WriteString("null")
		default:
			f, err := strconv.ParseFloat(strings.ReplaceAll(word, "_", ""), 64)
			if err != nil || word == "" {
				return fmt.Sprintf("is not a Python literal (a quoted string, a number, True, False, None, a list or a dict): %q", excerpt(r.s[j:min(len(r.s), j+30)]))
			}
			if i, err := strconv.ParseInt(strings.ReplaceAll(word, "_", ""), 10, 64); err == nil {
				buf.WriteString(strconv.FormatInt(i, 10))
			} else {
				buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
			}
		}
	}
	return ""
}

// str reads a Python string literal: '…', "…", or triple-quoted, with backslash escapes.
func (r *pyReader) str() (string, string) {
	q := r.s[r.i]
	delim := string(q)
	if strings.HasPrefix(r.s[r.i:], strings.Repeat(delim, 3)) {
		delim = strings.Repeat(delim, 3)
	}
	r.i += len(delim)
	var b strings.Builder
	for r.i < len(r.s) {
		if strings.HasPrefix(r.s[r.i:], delim) {
			r.i += len(delim)
			return b.String(), ""
		}
		c := r.s[r.i]
		if c == '\n' && len(delim) == 1 {
			return "", "has a string that is not closed on its line"
		}
		if c != '\\' {
			_, size := utf8.DecodeRuneInString(r.s[r.i:])
			b.WriteString(r.s[r.i : r.i+size])
			r.i += size
			continue
		}
		r.i++
		if r.i >= len(r.s) {
			break
		}
		e := r.s[r.i]
		r.i++
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case '\\', '\'', '"':
			b.WriteByte(e)
		case '\n':
			// a line continuation
		case 'u', 'x':
			n := 4
			if e == 'x' {
				n = 2
			}
			if r.i+n > len(r.s) {
				return "", "has a bad \\" + string(e) + " escape"
			}
			v, err := strconv.ParseUint(r.s[r.i:r.i+n], 16, 32)
			if err != nil {
				return "", "has a bad \\" + string(e) + " escape"
			}
			b.WriteRune(rune(v))
			r.i += n
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", "has a string that is not closed"
}
