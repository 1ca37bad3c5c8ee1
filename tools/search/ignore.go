package search

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds the ignore machinery shared by both grep engines, glob and tree.
//
// Pattern lines (from .gitignore, .ignore, .rgignore, .git/info/exclude and from -g style
// include/exclude globs) are read the way ripgrep 13's `ignore` crate reads them (comments,
// trailing whitespace, `\!`/`\#` escapes, `!` negation, leading `/` anchoring, trailing `/` for
// directories only, an implicit `**/` for patterns without a slash, `/**` meaning "everything
// inside", `{a,b}` alternation). Each path component is then matched by path.Match (one
// pattern per glob segment, every literal escaped); this file adds the structure around it: `**`
// with backtracking, and exact-path semantics (a pattern matches a path, never "a path because
// of one of its parents": parents are pruned by the walk itself). The same compiled globs serve
// Glob's patterns (without the ignore-file line syntax): agentd has one glob dialect.

type matchResult int8

const (
	matchNone matchResult = iota
	matchIgnore
	matchWhitelist
)

// relPath is a slash path split into components without allocating: pre holds the directory
// components, last the final one.
type relPath struct {
	pre  []string
	last string
}

func (p relPath) n() int { return len(p.pre) + 1 }

func (p relPath) at(i int) string {
	if i < len(p.pre) {
		return p.pre[i]
	}
	return p.last
}

// from returns the path relative to the directory of depth d (d <= len(pre)).
func (p relPath) from(d int) relPath { return relPath{pre: p.pre[d:], last: p.last} }

// globSeg is one path component of a compiled glob.
type globSeg struct {
	recursive bool // "**": zero or more components
	kind      segKind
	lit       string // the literal part for segLit, segSuffix, segPrefix, segContains
	pat       string // a path.Match pattern, for segPattern
}

// segKind selects how a component is compared. The shapes `name`, `*suffix`, `prefix*`,
// `*infix*` and `*` are compared directly (they are exactly what path.Match would decide,
// without its cost); everything else goes through path.Match.
type segKind uint8

const (
	segPattern segKind = iota
	segLit
	segSuffix
	segPrefix
	segContains
	segAny
)

func (s *globSeg) match(comp string) bool {
	switch s.kind {
	case segLit:
		return s.lit == comp
	case segSuffix:
		return strings.HasSuffix(comp, s.lit)
	case segPrefix:
		return strings.HasPrefix(comp, s.lit)
	case segContains:
		return strings.Contains(comp, s.lit)
	case segAny:
		return true
	}
	ok, _ := path.Match(s.pat, comp) // the pattern was checked when compiled
	return ok
}

// globPat is one brace alternative of a rule.
type globPat struct {
	segs []globSeg
	// base is set when the pattern is `**/<one segment>`: only the last component is compared.
	base *globSeg
}

func (g *globPat) match(p relPath) bool {
	if g.base != nil {
		return g.base.match(p.last)
	}
	return matchSegs(g.segs, p, 0)
}

func matchSegs(segs []globSeg, p relPath, i int) bool {
	n := p.n()
	for len(segs) > 0 {
		s := &segs[0]
		if s.recursive {
			rest := segs[1:]
			for len(rest) > 0 && rest[0].recursive {
				rest = rest[1:]
			}
			if len(rest) == 0 {
				return true
			}
			for j := i; j < n; j++ {
				if matchSegs(rest, p, j) {
					return true
				}
			}
			return false
		}
		if i >= n || !s.match(p.at(i)) {
			return false
		}
		segs = segs[1:]
		i++
	}
	return i == n
}

// rule is one pattern line.
type rule struct {
	alts    []globPat
	negated bool // the line started with "!"
	dirOnly bool // the line ended with "/"
	line    string
}

func (r *rule) match(p relPath) bool {
	for i := range r.alts {
		if r.alts[i].match(p) {
			return true
		}
	}
	return false
}

// ruleSet is the compiled content of one ignore file (or the list of -g globs).
type ruleSet struct {
	rules []rule
	plain int // rules without "!" (for -g globs: the includes)
}

// match returns the result of the last matching rule: matchIgnore for a plain rule,
// matchWhitelist for a "!" rule (ignore-file sense). A directory-only rule is skipped for files.
func (rs *ruleSet) match(p relPath, isDir bool) matchResult {
	for i := len(rs.rules) - 1; i >= 0; i-- {
		r := &rs.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		if r.match(p) {
			if r.negated {
				return matchWhitelist
			}
			return matchIgnore
		}
	}
	return matchNone
}

// parseIgnoreFile compiles the lines of an ignore file. Lines that do not compile are skipped,
// like ripgrep does; reading stops at the first line that is not valid UTF-8 (ripgrep reads
// lines as Rust strings and gives up on the file there).
func parseIgnoreFile(data []byte) *ruleSet {
	rs := &ruleSet{}
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if !utf8.Valid(line) {
			break
		}
		r, ok, err := compileRule(string(line))
		if err != nil || !ok {
			continue
		}
		rs.add(r)
	}
	if len(rs.rules) == 0 {
		return nil
	}
	return rs
}

func (rs *ruleSet) add(r rule) {
	rs.rules = append(rs.rules, r)
	if !r.negated {
		rs.plain++
	}
}

// compileRule compiles one gitignore-style line. ok is false for blank lines and comments.
func compileRule(line string) (r rule, ok bool, err error) {
	orig := line
	if strings.HasPrefix(line, "#") {
		return r, false, nil
	}
	if !strings.HasSuffix(line, `\ `) {
		line = strings.TrimRightFunc(line, unicode.IsSpace)
	}
	if line == "" {
		return r, false, nil
	}
	absolute := false
	if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	} else {
		if strings.HasPrefix(line, "!") {
			r.negated = true
			line = line[1:]
		}
		if strings.HasPrefix(line, "/") {
			line = line[1:]
			absolute = true
		}
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = line[:len(line)-1]
	}
	if line == "" {
		return r, false, nil
	}
	if !absolute && !strings.Contains(line, "/") && !strings.HasPrefix(line, "**/") && line != "**" {
		line = "**/" + line
	}
	if strings.HasSuffix(line, "/**") {
		line += "/*"
	}
	alts, err := expandBraces(line)
	if err != nil {
		return r, false, err
	}
	for _, a := range alts {
		g, err := compileGlob(a)
		if err != nil {
			return r, false, err
		}
		r.alts = append(r.alts, g)
	}
	r.line = orig
	return r, true, nil
}

func compileGlob(s string) (globPat, error) {
	var g globPat
	for _, part := range strings.Split(s, "/") {
		seg, err := compileSeg(part)
		if err != nil {
			return g, err
		}
		g.segs = append(g.segs, seg)
	}
	if len(g.segs) == 2 && g.segs[0].recursive && !g.segs[1].recursive {
		g.base = &g.segs[1]
	}
	return g, nil
}

var (
	errUnclosedClass  = errors.New("unclosed character class; missing ']'")
	errDanglingEscape = errors.New("dangling '\\'")
	errNestedAlt      = errors.New("nested alternate groups are not allowed")
	errUnclosedAlt    = errors.New("unclosed alternate group; missing '}'")
)

// compileSeg translates one glob component (globset syntax: `*`, `?`, `[...]` with `!` or `^`
// negation and no escapes inside classes, `\` escapes elsewhere) into a path.Match pattern.
// Every literal character that is not a letter or digit is escaped.
func compileSeg(part string) (globSeg, error) {
	if part == "**" {
		return globSeg{recursive: true}, nil
	}
	var b, lit strings.Builder
	isLit := true
	// shape records the structure of simple segments: 'L' for a literal run, '*' for a star;
	// anything else ('?', a class) makes the segment a path.Match pattern.
	var shape []byte
	var runs []string
	addLit := func(c rune) {
		if len(shape) == 0 || shape[len(shape)-1] != 'L' {
			shape = append(shape, 'L')
			runs = append(runs, "")
		}
		runs[len(runs)-1] += string(c)
	}
	complexSeg := false
	rs := []rune(part)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch c {
		case '\\':
			if i+1 >= len(rs) {
				return globSeg{}, errDanglingEscape
			}
			i++
			writeEscaped(&b, rs[i])
			lit.WriteRune(rs[i])
			addLit(rs[i])
		case '*':
			isLit = false
			for i+1 < len(rs) && rs[i+1] == '*' {
				i++
			}
			b.WriteByte('*')
			shape = append(shape, '*')
			runs = append(runs, "")
		case '?':
			isLit, complexSeg = false, true
			b.WriteByte('?')
		case '[':
			isLit, complexSeg = false, true
			j := i + 1
			neg := false
			if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
				neg = true
				j++
			}
			type rng struct{ lo, hi rune }
			var ranges []rng
			first, inRange, closed := true, false, false
			for ; j < len(rs); j++ {
				d := rs[j]
				switch {
				case d == ']' && !first:
					closed = true
				case d == '-' && !first && !inRange:
					inRange = true
				case inRange:
					if d < ranges[len(ranges)-1].lo {
						return globSeg{}, fmt.Errorf("invalid range %c-%c", ranges[len(ranges)-1].lo, d)
					}
					ranges[len(ranges)-1].hi = d
					inRange = false
				default:
					ranges = append(ranges, rng{d, d})
				}
				first = false
				if closed {
					break
				}
			}
			if !closed {
				return globSeg{}, errUnclosedClass
			}
			if inRange {
				ranges = append(ranges, rng{'-', '-'})
			}
			i = j
			b.WriteByte('[')
			if neg {
				b.WriteByte('^')
			}
			for _, r := range ranges {
				b.WriteByte('\\')
				b.WriteRune(r.lo)
				if r.hi != r.lo {
					b.WriteString(`-\`)
					b.WriteRune(r.hi)
				}
			}
			b.WriteByte(']')
		default:
			writeEscaped(&b, c)
			lit.WriteRune(c)
			addLit(c)
		}
	}
	if isLit {
		return globSeg{kind: segLit, lit: lit.String()}, nil
	}
	pat := b.String()
	if _, err := path.Match(pat, ""); err != nil {
		return globSeg{}, fmt.Errorf("bad glob component %q", part)
	}
	seg := globSeg{pat: pat}
	if !complexSeg {
		switch string(shape) {
		case "*":
			seg.kind = segAny
		case "*L":
			seg.kind, seg.lit = segSuffix, runs[1]
		case "L*":
			seg.kind, seg.lit = segPrefix, runs[0]
		case "*L*":
			seg.kind, seg.lit = segContains, runs[1]
		}
	}
	return seg, nil
}

func writeEscaped(b *strings.Builder, c rune) {
	if c < utf8.RuneSelf && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
		b.WriteByte('\\')
	}
	b.WriteRune(c)
}

// expandBraces expands `{a,b}` groups (no nesting, like globset) into separate globs.
func expandBraces(s string) ([]string, error) {
	out := []string{""}
	rs := []rune(s)
	var cur []string // alternatives of the open group
	var alt strings.Builder
	inGroup := false
	appendAll := func(str string) {
		for i := range out {
			out[i] += str
		}
	}
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		var tok string
		switch c {
		case '\\':
			if i+1 >= len(rs) {
				return nil, errDanglingEscape
			}
			tok = string(rs[i : i+2])
			i++
		case '[':
			// copy the class verbatim: braces and commas inside are literal
			j := i + 1
			if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
				j++
			}
			if j < len(rs) && rs[j] == ']' {
				j++
			}
			for j < len(rs) && rs[j] != ']' {
				j++
			}
			if j >= len(rs) {
				return nil, errUnclosedClass
			}
			tok = string(rs[i : j+1])
			i = j
		case '{':
			if inGroup {
				return nil, errNestedAlt
			}
			inGroup = true
			cur = cur[:0]
			alt.Reset()
			continue
		case ',':
			if inGroup {
				cur = append(cur, alt.String())
				alt.Reset()
				continue
			}
			tok = ","
		case '}':
			if inGroup {
				cur = append(cur, alt.String())
				inGroup = false
				var next []string
				for _, o := range out {
					for _, a := range cur {
						next = append(next, o+a)
					}
				}
				if len(next) > 4096 {
					return nil, errors.New("too many brace alternatives")
				}
				out = next
				continue
			}
			tok = "}"
		default:
			tok = string(c)
		}
		if inGroup {
			alt.WriteString(tok)
		} else {
			appendAll(tok)
		}
	}
	if inGroup {
		return nil, errUnclosedAlt
	}
	return out, nil
}

// escapeGlobLiteral returns an override glob (rg -g syntax) matching exactly the Root-relative
// path rel, anchored at the root.
func escapeGlobLiteral(rel string) string {
	var b strings.Builder
	b.WriteByte('/')
	for _, c := range rel {
		switch c {
		case '\\', '*', '?', '[', ']', '{', '}', ',', '!', '#', ' ', '\t':
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Ignore-file kinds, in ripgrep's order of precedence: a match in a .rgignore (at any depth)
// beats one in a .ignore, which beats .gitignore, which beats .git/info/exclude.
const (
	kindRgignore = iota
	kindIgnore
	kindGitignore
	kindExclude
	numKinds
)

var ignoreFileNames = [...]string{kindRgignore: ".rgignore", kindIgnore: ".ignore", kindGitignore: ".gitignore"}

// level is the ignore state of one directory: the rules of its own ignore files plus a link to
// the nearest ancestor that has any. Levels are immutable once built and shared between
// goroutines.
type level struct {
	parent *level
	depth  int  // number of components of the directory, relative to Root
	hasGit bool // the directory contains a .git entry (a repository root)
	sets   [numKinds]*ruleSet
}

// ignoreDecision returns the ignore decision for path p (relative to Root) whose parent directory
// has ignore state lv, following ripgrep: per kind, the deepest directory with a matching rule
// decides; .gitignore and exclude rules above the nearest repository root are not consulted.
func ignoreDecision(lv *level, p relPath, isDir bool) matchResult {
	for kind := 0; kind < numKinds; kind++ {
		git := kind >= kindGitignore
		for l := lv; l != nil; l = l.parent {
			if rs := l.sets[kind]; rs != nil {
				if m := rs.match(p.from(l.depth), isDir); m != matchNone {
					return m
				}
			}
			if git && l.hasGit {
				break
			}
		}
	}
	return matchNone
}

// newLevel reads the ignore files of directory abs (depth components below Root). names tells
// which ignore files exist and gitPresent whether a .git entry exists (from the directory
// listing). It returns parent itself when the directory adds nothing.
func newLevel(parent *level, root, abs string, depth int, has [numKinds]bool, gitPresent bool) *level {
	lv := &level{parent: parent, depth: depth}
	any := false
	for kind := kindRgignore; kind <= kindGitignore; kind++ {
		if !has[kind] {
			continue
		}
		if data, err := os.ReadFile(filepath.Join(abs, ignoreFileNames[kind])); err == nil {
			if rs := parseIgnoreFile(data); rs != nil {
				lv.sets[kind] = rs
				any = true
			}
		}
	}
	if gitPresent {
		gitPath := filepath.Join(abs, ".git")
		fi, err := os.Stat(gitPath) // follows a symlinked .git, like ripgrep
		if err == nil {
			lv.hasGit = true
			any = true
			if ex := excludeFile(root, gitPath, fi); ex != "" {
				if data, err := os.ReadFile(ex); err == nil {
					lv.sets[kindExclude] = parseIgnoreFile(data)
				}
			}
		}
	}
	if !any {
		return parent
	}
	return lv
}

// excludeFile returns the path of the info/exclude file of the repository whose .git entry is
// gitPath: .git/info/exclude for a directory; for a .git file ("gitdir: X", worktrees), the
// commondir named in X/commondir, as ripgrep resolves it (a relative X is taken relative to
// the directory ripgrep runs in, which is Root).
func excludeFile(root, gitPath string, fi os.FileInfo) string {
	if fi.IsDir() {
		return filepath.Join(gitPath, "info", "exclude")
	}
	first := func(name string) (string, bool) {
		f, err := os.Open(name)
		if err != nil {
			return "", false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	line, ok := first(gitPath)
	if !ok || !strings.HasPrefix(line, "gitdir: ") {
		return ""
	}
	gitDir := line[len("gitdir: "):]
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(root, gitDir)
	}
	common, ok := first(filepath.Join(gitDir, "commondir"))
	if !ok {
		return ""
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitDir, common)
	}
	return filepath.Join(common, "info", "exclude")
}

// filter decides which walked entries are visited, exactly as ripgrep 13 does with
// `--no-require-git --no-ignore-parent --no-ignore-global` (see doc.go).
type filter struct {
	overrides *ruleSet // -g globs, matched relative to Root; nil when none
	noIgnore  bool
	hidden    bool // include hidden entries
}

// accept reports whether the entry p (relative to Root) in a directory with ignore state lv is
// visited (a directory: descended into; a file: searched/listed).
func (f *filter) accept(lv *level, p relPath, isDir bool) bool {
	name := p.last
	if name == ".git" {
		return false
	}
	if f.overrides != nil {
		// Override globs: a plain glob includes (and then beats ignore files and the hidden
		// rule), a "!" glob excludes; with at least one plain glob, files that match none are
		// excluded. Directories that match nothing fall through.
		switch f.overrides.match(p, isDir) {
		case matchIgnore:
			return true
		case matchWhitelist:
			return false
		default:
			if !isDir && f.overrides.plain > 0 {
				return false
			}
		}
	}
	if !f.noIgnore {
		switch ignoreDecision(lv, p, isDir) {
		case matchIgnore:
			return false
		case matchWhitelist:
			return true
		}
	}
	if !f.hidden && strings.HasPrefix(name, ".") {
		return false
	}
	return true
}

// compileOverrides compiles -g style globs (include, "!" exclude); errors are InvalidArgs.
func compileOverrides(globs []string) (*ruleSet, error) {
	if len(globs) == 0 {
		return nil, nil
	}
	rs := &ruleSet{}
	for _, g := range globs {
		r, ok, err := compileRule(g)
		if err != nil {
			return nil, invalidArgs("invalid glob %q: %v", g, err)
		}
		if !ok {
			if strings.TrimSpace(g) == "" || strings.TrimSpace(g) == "!" {
				return nil, invalidArgs("empty glob")
			}
			// "#..." is a comment for ripgrep: it matches nothing.
			continue
		}
		rs.add(r)
	}
	if len(rs.rules) == 0 {
		return nil, nil
	}
	return rs, nil
}
