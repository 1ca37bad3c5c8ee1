package policy

import (
	"bytes"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wordInfo is what the classifier knows about one shell word.
type wordInfo struct {
	// value is the word after quote removal when static, otherwise its source text.
	value string
	// static: the word is the same whatever the environment (only literals and quotes; a leading
	// tilde is allowed: it expands to a home directory, never to an option).
	static bool
	// glob: the word holds unquoted pattern characters (* ? [) or an extended glob, so the shell
	// may replace it with file names, including names that look like options.
	glob bool
	// reason says why the word is not static.
	reason string
}

// word analyses a word, recursing into the command substitutions it holds so that their commands
// are classified too.
func (c *classifier) word(w *syntax.Word) wordInfo {
	wi := wordInfo{static: true}
	if w == nil {
		return wi
	}
	var val bytes.Buffer
	// shape mirrors the word with every quoted or escaped byte replaced by 'q', so that pattern
	// and brace characters are only seen where the shell would see them.
	var shape bytes.Buffer
	dynamic := func(reason string) {
		if wi.static {
			wi.static = false
			wi.reason = reason
		}
	}
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v, s := unescapeUnquoted(p.Value)
			val.WriteString(v)
			shape.WriteString(s)
		case *syntax.SglQuoted:
			if p.Dollar {
				dynamic("ANSI-C quoting $'…' is not analysed")
			}
			val.WriteString(p.Value)
			shape.WriteString(strings.Repeat("q", len(p.Value)))
		case *syntax.DblQuoted:
			if p.Dollar {
				dynamic("locale quoting $\"…\" is not analysed")
			}
			for _, ip := range p.Parts {
				switch ip := ip.(type) {
				case *syntax.Lit:
					v := unescapeDouble(ip.Value)
					val.WriteString(v)
					shape.WriteString(strings.Repeat("q", len(v)))
				default:
					dynamic(c.partReason(ip))
				}
			}
		default:
			dynamic(c.partReason(p))
		}
	}
	if !wi.static {
		wi.value = printWord(w)
		return wi
	}
	wi.value = val.String()
	sh := shape.String()
	wi.glob = strings.ContainsAny(sh, "*?[") || hasBraceExpansion(sh)
	return wi
}

// partReason says why a word part is dynamic and classifies the commands it holds.
func (c *classifier) partReason(p syntax.WordPart) string {
	switch p := p.(type) {
	case *syntax.CmdSubst:
		c.stmts(p.Stmts)
		if p.Backquotes {
			return "command substitution `…`"
		}
		return "command substitution $(…)"
	case *syntax.ProcSubst:
		c.stmts(p.Stmts)
		return "process substitution " + p.Op.String() + "(…)"
	case *syntax.ParamExp:
		c.generic(p)
		name := "…"
		if p.Param != nil {
			name = p.Param.Value
		}
		return "parameter expansion $" + name
	case *syntax.ArithmExp:
		c.generic(p)
		return "arithmetic expansion $((…))"
	case *syntax.ExtGlob:
		return "extended glob " + p.Op.String() + "(…)"
	case *syntax.BraceExp:
		return "brace expansion"
	}
	return "a word part that is not analysed"
}

func printWord(w *syntax.Word) string {
	var b bytes.Buffer
	if err := syntax.NewPrinter().Print(&b, w); err != nil {
		return "<word>"
	}
	return b.String()
}

// unescapeUnquoted removes backslash escapes from an unquoted literal as bash does, and returns
// the shape of the result: escaped bytes become 'q' (they lose any special meaning).
func unescapeUnquoted(s string) (val, shape string) {
	var v, sh strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue // line continuation
			}
			v.WriteByte(s[i])
			sh.WriteByte('q')
			continue
		}
		v.WriteByte(ch)
		sh.WriteByte(ch)
	}
	return v.String(), sh.String()
}

// unescapeDouble removes the backslash escapes that are special inside double quotes: \$ \` \" \\
// and backslash-newline. Any other backslash stays.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				b.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(ch)
	}
	return b.String()
}

// hasBraceExpansion reports whether the unquoted shape of a word may brace-expand: an unquoted
// '{', then an unquoted ',' or "..", then an unquoted '}'. It errs on the side of yes.
func hasBraceExpansion(shape string) bool {
	open := strings.IndexByte(shape, '{')
	if open < 0 {
		return false
	}
	rest := shape[open+1:]
	closeAt := strings.LastIndexByte(rest, '}')
	if closeAt < 0 {
		return false
	}
	inner := rest[:closeAt]
	return strings.Contains(inner, ",") || strings.Contains(inner, "..")
}
