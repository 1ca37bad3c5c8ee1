package search

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// matcher is a compiled search pattern, usable by both engines.
//
// Matching is line by line (like ripgrep without -U): the regex is rewritten so that it can
// never match a line terminator ('\n' is removed from every class, `.` never matches it, `^`/`$`
// and `\A`/`\z` mean start/end of line). The same rewritten tree is serialized for ripgrep
// (Rust regex syntax with explicit classes), so that both engines run the same regex: Go's RE2
// semantics, with ASCII `\d`, `\w`, `\s`, `\b`.
type matcher struct {
	re    *regexp.Regexp // line-safe, for whole-buffer scanning and per-line confirmation
	rust  string         // the same regex for ripgrep
	lit   []byte         // a case-sensitive literal every match contains, or nil
	fold  *foldLit       // an ASCII case-insensitive literal every match contains, or nil
	exact bool           // the regex is exactly lit / fold: finding it is a match
}

// compileMatcher validates and compiles a pattern. Errors are *tools.Error{InvalidArgs}.
func compileMatcher(pattern string, literal, ignoreCase, smartCase bool) (*matcher, error) {
	if pattern == "" {
		return nil, invalidArgs("pattern is empty")
	}
	if strings.ContainsRune(pattern, '\n') {
		return nil, invalidArgs("pattern contains a line break; matching is line by line, so a match can never span lines")
	}
	if !utf8.ValidString(pattern) {
		return nil, invalidArgs("pattern is not valid UTF-8")
	}
	insensitive := ignoreCase || (smartCase && !hasUppercaseLiteral(pattern, literal))
	src := pattern
	if literal {
		src = regexp.QuoteMeta(pattern)
	} else if err := checkDialect(pattern); err != nil {
		return nil, err
	}
	if insensitive {
		src = "(?i)" + src
	}
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		return nil, invalidArgs("invalid regular expression: %s (set literal=true to search for the text as is)", msg)
	}
	if err := lineSafe(re); err != nil {
		return nil, err
	}
	re = re.Simplify()
	if hasNoMatch(re) {
		return nil, invalidArgs("invalid regular expression: %q can never match", pattern)
	}
	goRe, err := regexp.Compile(re.String())
	if err != nil {
		return nil, invalidArgs("invalid regular expression: %v", err)
	}
	m := &matcher{re: goRe}
	var b strings.Builder
	writeRust(&b, re)
	m.rust = b.String()

	best := bestLiteral(requiredLits(re))
	if best != nil {
		if best.fold {
			m.fold = newFoldLit(best.s)
		} else {
			m.lit = []byte(best.s)
		}
		m.exact = re.Op == syntax.OpLiteral
	}
	return m, nil
}

// hasUppercaseLiteral implements smart case: does the pattern contain an uppercase letter
// outside escapes (\W, \p{Lu}, \x41…), group names and flag groups?
func hasUppercaseLiteral(p string, literal bool) bool {
	if literal {
		return strings.IndexFunc(p, unicode.IsUpper) >= 0
	}
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; {
		case c == '\\':
			i++
			if i >= len(rs) {
				return false
			}
			switch rs[i] {
			case 'p', 'P', 'x':
				if i+1 < len(rs) && rs[i+1] == '{' {
					for i < len(rs) && rs[i] != '}' {
						i++
					}
				} else if rs[i] == 'x' {
					i += 2
				} else {
					i++
				}
			}
		case c == '(' && i+1 < len(rs) && rs[i+1] == '?':
			i += 2
			if i < len(rs) && (rs[i] == 'P' || rs[i] == '<') {
				for i < len(rs) && rs[i] != '>' {
					i++
				}
				continue
			}
			for i < len(rs) && rs[i] != ')' && rs[i] != ':' {
				i++
			}
		case unicode.IsUpper(c):
			return true
		}
	}
	return false
}

// checkDialect rejects constructs that Rust's regex (ripgrep) and Go's RE2 both accept but read
// differently: nested classes and class set operations (&&, --, ~~), which Go reads as literal
// characters.
func checkDialect(p string) error {
	inClass := false
	first := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' {
			if !inClass && i+1 < len(p) && (p[i+1] == '<' || p[i+1] == '>') {
				return invalidArgs("invalid regular expression: GNU word boundaries \\< and \\> are not supported; use \\b")
			}
			i++
			first = false
			continue
		}
		if !inClass {
			if c == '[' {
				inClass, first = true, true
				if i+1 < len(p) && p[i+1] == '^' {
					i++
				}
			}
			continue
		}
		switch {
		case c == ']' && !first:
			inClass = false
		case c == '[' && i+1 < len(p) && p[i+1] == ':':
			if j := strings.Index(p[i:], ":]"); j > 0 {
				i += j + 1
			}
		case c == '[':
			return invalidArgs("invalid regular expression: nested character classes like [a[bc]] are not supported; escape '[' inside a class as \\[")
		case (c == '&' || c == '-' || c == '~') && i+1 < len(p) && p[i+1] == c && !first:
			return invalidArgs("invalid regular expression: character class set operations (%c%c) are not supported; escape the characters", c, c)
		}
		first = false
	}
	return nil
}

// lineSafe rewrites re in place so that it can only match within one line.
func lineSafe(re *syntax.Regexp) error {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				return invalidArgs("invalid regular expression: it matches a line break (\\n), but matching is line by line")
			}
		}
	case syntax.OpCharClass:
		var out []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if lo <= '\n' && '\n' <= hi {
				if lo < '\n' {
					out = append(out, lo, '\n'-1)
				}
				if hi > '\n' {
					out = append(out, '\n'+1, hi)
				}
				continue
			}
			out = append(out, lo, hi)
		}
		if len(out) == 0 && len(re.Rune) > 0 {
			return invalidArgs("invalid regular expression: it matches a line break (\\n), but matching is line by line")
		}
		re.Rune = out
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpBeginText:
		re.Op = syntax.OpBeginLine
	case syntax.OpEndText:
		re.Op = syntax.OpEndLine
		re.Flags &^= syntax.WasDollar
	}
	for _, s := range re.Sub {
		if err := lineSafe(s); err != nil {
			return err
		}
	}
	return nil
}

func hasNoMatch(re *syntax.Regexp) bool {
	if re.Op == syntax.OpNoMatch || (re.Op == syntax.OpCharClass && len(re.Rune) == 0) {
		return true
	}
	switch re.Op {
	case syntax.OpConcat, syntax.OpCapture, syntax.OpPlus:
		for _, s := range re.Sub {
			if hasNoMatch(s) {
				return true
			}
		}
	case syntax.OpRepeat:
		return re.Min > 0 && hasNoMatch(re.Sub[0])
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !hasNoMatch(s) {
				return false
			}
		}
		return true
	}
	return false
}

// writeRust serializes a (simplified, line-safe) syntax tree in Rust regex syntax. Every class
// is written out as explicit ranges, so Unicode tables and Perl classes mean the same in both
// engines; word boundaries are ASCII, like Go's.
func writeRust(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		b.WriteString("(?:)")
	case syntax.OpLiteral:
		fold := re.Flags&syntax.FoldCase != 0
		if fold {
			b.WriteString("(?i:")
		}
		for _, r := range re.Rune {
			writeRustChar(b, r)
		}
		if fold {
			b.WriteString(")")
		}
	case syntax.OpCharClass:
		b.WriteByte('[')
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			// Surrogates never occur in UTF-8 text and Rust rejects them as class bounds.
			if lo >= 0xD800 && lo <= 0xDFFF {
				lo = 0xE000
			}
			if hi >= 0xD800 && hi <= 0xDFFF {
				hi = 0xD7FF
			}
			if lo > hi {
				continue
			}
			writeRustChar(b, lo)
			if hi != lo {
				b.WriteByte('-')
				writeRustChar(b, hi)
			}
		}
		b.WriteByte(']')
	case syntax.OpAnyCharNotNL:
		b.WriteString(`[^\n]`)
	case syntax.OpAnyChar:
		b.WriteString(`(?s:.)`)
	case syntax.OpBeginLine, syntax.OpBeginText:
		b.WriteString(`(?m:^)`)
	case syntax.OpEndLine, syntax.OpEndText:
		b.WriteString(`(?m:$)`)
	case syntax.OpWordBoundary:
		b.WriteString(`(?-u:\b)`)
	case syntax.OpNoWordBoundary:
		b.WriteString(`(?-u:\B)`)
	case syntax.OpCapture:
		b.WriteString("(?:")
		writeRust(b, re.Sub[0])
		b.WriteString(")")
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		b.WriteString("(?:")
		writeRust(b, re.Sub[0])
		b.WriteString(")")
		switch re.Op {
		case syntax.OpStar:
			b.WriteByte('*')
		case syntax.OpPlus:
			b.WriteByte('+')
		case syntax.OpQuest:
			b.WriteByte('?')
		default:
			if re.Max == -1 {
				fmt.Fprintf(b, "{%d,}", re.Min)
			} else if re.Max == re.Min {
				fmt.Fprintf(b, "{%d}", re.Min)
			} else {
				fmt.Fprintf(b, "{%d,%d}", re.Min, re.Max)
			}
		}
		if re.Flags&syntax.NonGreedy != 0 {
			b.WriteByte('?')
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			writeRust(b, s)
		}
	case syntax.OpAlternate:
		b.WriteString("(?:")
		for i, s := range re.Sub {
			if i > 0 {
				b.WriteByte('|')
			}
			writeRust(b, s)
		}
		b.WriteString(")")
	case syntax.OpNoMatch:
		b.WriteString(`[^\x00-\x{10FFFF}]`)
	}
}

func writeRustChar(b *strings.Builder, r rune) {
	if r < utf8.RuneSelf && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_') {
		b.WriteRune(r)
		return
	}
	fmt.Fprintf(b, `\x{%X}`, r)
}

type reqLit struct {
	s    string
	fold bool
}

// requiredLits returns literals that every match of re contains.
func requiredLits(re *syntax.Regexp) []reqLit {
	switch re.Op {
	case syntax.OpLiteral:
		return []reqLit{{string(re.Rune), re.Flags&syntax.FoldCase != 0}}
	case syntax.OpCharClass:
		if len(re.Rune) == 2 && re.Rune[0] == re.Rune[1] {
			return []reqLit{{string(re.Rune[0]), false}}
		}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLits(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLits(re.Sub[0])
		}
	case syntax.OpConcat:
		var out []reqLit
		var run strings.Builder
		runFold, inRun := false, false
		flush := func() {
			if inRun {
				out = append(out, reqLit{run.String(), runFold})
				run.Reset()
				inRun = false
			}
		}
		for _, s := range re.Sub {
			var l *reqLit
			if s.Op == syntax.OpLiteral {
				l = &reqLit{string(s.Rune), s.Flags&syntax.FoldCase != 0}
			} else if s.Op == syntax.OpCharClass && len(s.Rune) == 2 && s.Rune[0] == s.Rune[1] {
				l = &reqLit{string(s.Rune[0]), false}
			}
			if l != nil {
				if inRun && runFold != l.fold {
					flush()
				}
				run.WriteString(l.s)
				runFold, inRun = l.fold, true
				continue
			}
			flush()
			out = append(out, requiredLits(s)...)
		}
		flush()
		return out
	}
	return nil
}

// bestLiteral picks the longest usable literal (case-insensitive ones must be ASCII).
func bestLiteral(ls []reqLit) *reqLit {
	var best *reqLit
	score := func(l *reqLit) int {
		n := 2 * len(l.s)
		if !l.fold {
			n++
		}
		return n
	}
	for i := range ls {
		l := &ls[i]
		if l.s == "" {
			continue
		}
		if l.fold {
			ascii := true
			for j := 0; j < len(l.s); j++ {
				if l.s[j] >= utf8.RuneSelf {
					ascii = false
					break
				}
			}
			if !ascii {
				continue
			}
		}
		if best == nil || score(l) > score(best) {
			best = l
		}
	}
	return best
}

// foldLit finds an ASCII literal case-insensitively, exactly as (?i) does: it scans for one
// rare byte of the literal (in both cases) and compares the text around it. Among ASCII
// letters only k and s have non-ASCII case variants (U+212A KELVIN SIGN, U+017F LATIN SMALL
// LETTER LONG S); the comparison accepts their UTF-8 forms too, so the anchor byte is never
// k or s.
type foldLit struct {
	lower  []byte
	anchor int
	lo, up byte
	// ksOnly: every character is k or s, so the anchor is one of them and occurrences
	// spelled with U+212A/U+017F are not found; exactFor then reports false for such text.
	ksOnly bool
}

func newFoldLit(s string) *foldLit {
	f := &foldLit{lower: []byte(strings.ToLower(s)), anchor: -1}
	bestRank := 1 << 30
	for i, c := range f.lower {
		if c == 'k' || c == 's' {
			continue
		}
		if r := byteRank(c); r < bestRank {
			bestRank, f.anchor = r, i
		}
	}
	if f.anchor < 0 {
		f.anchor, f.ksOnly = 0, true
	}
	c := f.lower[f.anchor]
	f.lo, f.up = c, c
	if 'a' <= c && c <= 'z' {
		f.up = c - 'a' + 'A'
	}
	return f
}

// exactFor reports whether the finder is exact for buf (see ksOnly).
func (f *foldLit) exactFor(buf []byte) bool {
	return !f.ksOnly || (!bytes.Contains(buf, kelvin) && !bytes.Contains(buf, longS))
}

var (
	kelvin = []byte("\u212A")
	longS  = []byte("\u017F")
)

// verify checks for an occurrence whose anchor character is at p and returns its bounds.
func (f *foldLit) verify(buf []byte, p int) (start, end int, ok bool) {
	pos := p
	for i := f.anchor - 1; i >= 0; i-- {
		c := f.lower[i]
		switch {
		case pos > 0 && lowerASCII(buf[pos-1]) == c:
			pos--
		case c == 'k' && pos >= 3 && buf[pos-3] == 0xE2 && buf[pos-2] == 0x84 && buf[pos-1] == 0xAA:
			pos -= 3
		case c == 's' && pos >= 2 && buf[pos-2] == 0xC5 && buf[pos-1] == 0xBF:
			pos -= 2
		default:
			return 0, 0, false
		}
	}
	start = pos
	pos = p + 1
	for i := f.anchor + 1; i < len(f.lower); i++ {
		c := f.lower[i]
		switch {
		case pos < len(buf) && lowerASCII(buf[pos]) == c:
			pos++
		case c == 'k' && pos+3 <= len(buf) && buf[pos] == 0xE2 && buf[pos+1] == 0x84 && buf[pos+2] == 0xAA:
			pos += 3
		case c == 's' && pos+2 <= len(buf) && buf[pos] == 0xC5 && buf[pos+1] == 0xBF:
			pos += 2
		default:
			return 0, 0, false
		}
	}
	return start, pos, true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// foldScan holds the scan state of one buffer (cached next positions of the anchor byte).
type foldScan struct {
	f              *foldLit
	nextLo, nextUp int
}

func (s *foldScan) reset(f *foldLit) { s.f, s.nextLo, s.nextUp = f, -2, -2 }

// index returns the start of the first occurrence whose anchor lies at or after from+anchor
// (from is a line start; occurrences never span lines), or -1.
func (s *foldScan) index(buf []byte, from int) int {
	f := s.f
	at := from
	for {
		if at >= len(buf) {
			return -1
		}
		if s.nextLo != -1 && s.nextLo < at {
			if i := bytes.IndexByte(buf[at:], f.lo); i >= 0 {
				s.nextLo = at + i
			} else {
				s.nextLo = -1
			}
		}
		p := s.nextLo
		if f.up != f.lo {
			if s.nextUp != -1 && s.nextUp < at {
				if i := bytes.IndexByte(buf[at:], f.up); i >= 0 {
					s.nextUp = at + i
				} else {
					s.nextUp = -1
				}
			}
			if p == -1 || (s.nextUp != -1 && s.nextUp < p) {
				p = s.nextUp
			}
		}
		if p < 0 {
			return -1
		}
		if start, _, ok := f.verify(buf, p); ok && start >= from {
			return start
		}
		at = p + 1
	}
}

// byteRank approximates how common a byte is in source code (lower is rarer).
func byteRank(c byte) int {
	const common = " \t\n\r_()[]{};:.,=\"'/*-+<>&|!#\\$@%^~`?"
	if i := strings.IndexByte(common, c); i >= 0 {
		return 200 + len(common) - i
	}
	if 'A' <= c && c <= 'Z' {
		c += 'a' - 'A'
	}
	const letters = "zqjxkvbwygpfmucdlhrsnioate" // rarest first, roughly
	if i := strings.IndexByte(letters, c); i >= 0 {
		return 100 + i
	}
	if '0' <= c && c <= '9' {
		return 90
	}
	return 50
}
