package fsafe

import (
	"strings"
)

// utf8BOM is the UTF-8 byte order mark.
const utf8BOM = "\uFEFF"

// Ending is a file's line-ending style.
type Ending int

const (
	// EndingNone: the text has no line break.
	EndingNone Ending = iota
	// EndingLF: every line break is "\n".
	EndingLF
	// EndingCRLF: every line break is "\r\n".
	EndingCRLF
	// EndingMixed: both occur.
	EndingMixed
)

func (e Ending) String() string {
	switch e {
	case EndingLF:
		return "lf"
	case EndingCRLF:
		return "crlf"
	case EndingMixed:
		return "mixed"
	}
	return "none"
}

// Format is the byte-level shape of a text file that editing must not change: its UTF-8 BOM,
// its line endings, whether it ends with a line break. Normalize captures it; Restore puts it
// back. The zero Format restores text unchanged.
type Format struct {
	BOM          bool
	Ending       Ending
	FinalNewline bool

	valid bool
	// empty: the original had no content, so no final-newline state to keep.
	empty bool
	// For EndingMixed: the original lines (normalized, without their endings), whether each
	// ended with "\r\n", and the majority style.
	lines    []string
	crlf     []bool
	majority bool // true: CRLF
}

// Normalize returns content in the form edits are matched against — no BOM, every "\r\n" turned
// into "\n" — and the Format to restore afterwards. A lone "\r" is content, not a line break.
func Normalize(content string) (string, Format) {
	f := Format{valid: true}
	if rest, ok := strings.CutPrefix(content, utf8BOM); ok {
		f.BOM, content = true, rest
	}
	crlf := strings.Count(content, "\r\n")
	lf := strings.Count(content, "\n") - crlf
	switch {
	case crlf > 0 && lf > 0:
		f.Ending = EndingMixed
	case crlf > 0:
		f.Ending = EndingCRLF
	case lf > 0:
		f.Ending = EndingLF
	}
	text := strings.ReplaceAll(content, "\r\n", "\n")
	f.FinalNewline = strings.HasSuffix(content, "\n")
	f.empty = content == ""
	if f.Ending == EndingMixed {
		f.majority = crlf > lf
		rest := content
		for rest != "" {
			i := strings.IndexByte(rest, '\n')
			if i < 0 {
				f.lines = append(f.lines, rest)
				f.crlf = append(f.crlf, false)
				break
			}
			line := rest[:i]
			isCRLF := strings.HasSuffix(line, "\r")
			f.lines = append(f.lines, strings.TrimSuffix(line, "\r"))
			f.crlf = append(f.crlf, isCRLF)
			rest = rest[i+1:]
		}
	}
	return text, f
}

// Restore turns normalized text (line breaks "\n"; convert any "\r\n" the model sent before
// calling) back into the file's format:
//
//   - the BOM is put back if the file had one;
//   - the final-newline state is the file's: one "\n" is added or removed at the end (an empty
//     text stays empty, and an empty original imposes nothing);
//   - CRLF files get "\r\n" for every "\n";
//   - mixed files keep each original line's ending where the line is unchanged: the new lines are
//     matched to the original ones by a longest-common-subsequence diff, matched lines keep
//     their ending; an unmatched line whose text was removed elsewhere (a moved line) keeps
//     that line's ending; a changed line takes the ending of the original line it replaces
//     (paired in order within a changed region); an added line takes the ending of the line
//     before it (the majority style at the very top). Beyond 1000 changed lines the diff gives
//     up and the whole changed region is paired in order.
func (f Format) Restore(text string) string {
	if !f.valid {
		return text
	}
	if text != "" && !f.empty {
		switch ends := strings.HasSuffix(text, "\n"); {
		case f.FinalNewline && !ends:
			text += "\n"
		case !f.FinalNewline && ends:
			text = text[:len(text)-1]
		}
	}
	switch f.Ending {
	case EndingCRLF:
		text = strings.ReplaceAll(text, "\n", "\r\n")
	case EndingMixed:
		text = f.restoreMixed(text)
	}
	if f.BOM {
		text = utf8BOM + text
	}
	return text
}

// restoreMixed gives each line of text (normalized, final-newline state already restored) an
// ending chosen from the original lines.
func (f Format) restoreMixed(text string) string {
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	last := len(lines) - 1 // lines[last] has no ending ("" when text ends with "\n")
	match := matchLines(f.lines, lines[:last+boolInt(lines[last] != "")])
	// Original lines the diff left unmatched, by content: a line that moved keeps its ending.
	used := make([]bool, len(f.lines))
	for _, j := range match {
		if j >= 0 {
			used[j] = true
		}
	}
	moved := make(map[string][]int)
	for j, l := range f.lines {
		if !used[j] && (j < len(f.lines)-1 || f.FinalNewline) {
			moved[l] = append(moved[l], j)
		}
	}
	var b strings.Builder
	b.Grow(len(text) + len(lines))
	prevOrig := -1  // original index of the last matched line
	sinceMatch := 0 // new lines since the last matched one
	prevCRLF := f.majority
	for i := 0; i < last; i++ {
		b.WriteString(lines[i])
		crlf := prevCRLF
		if i < len(match) && match[i] >= 0 {
			j := match[i]
			if j < len(f.lines)-1 || f.FinalNewline { // the original line had an ending
				crlf = f.crlf[j]
			}
			prevOrig, sinceMatch = j, 0
		} else {
			if js := moved[lines[i]]; len(js) > 0 {
				// The same text was removed elsewhere: the line moved.
				crlf = f.crlf[js[0]]
				moved[lines[i]] = js[1:]
			} else if j := prevOrig + 1 + sinceMatch; j < len(f.lines) && !matchedLater(match, i, j) &&
				(j < len(f.lines)-1 || f.FinalNewline) {
				// Paired with the original line at the same place in the changed region.
				crlf = f.crlf[j]
			}
			sinceMatch++
		}
		if crlf {
			b.WriteString("\r\n")
		} else {
			b.WriteString("\n")
		}
		prevCRLF = crlf
	}
	b.WriteString(lines[last])
	return b.String()
}

// matchedLater reports whether original line j is matched to a new line after i (so it is not
// part of the changed region at i).
func matchedLater(match []int, i, j int) bool {
	for _, m := range match[i+1:] {
		if m >= 0 {
			return m <= j
		}
	}
	return false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// maxDiffEdits bounds the work of matchLines (time O((n+m)·D), memory O(D²)).
const maxDiffEdits = 1000

// matchLines returns, for each line of b, the index of the line of a it is matched to in a
// longest common subsequence, or -1. Past maxDiffEdits edits it matches only the common prefix
// and suffix.
func matchLines(a, b []string) []int {
	match := make([]int, len(b))
	for i := range match {
		match[i] = -1
	}
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		match[pre] = pre
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		match[len(b)-1-suf] = len(a) - 1 - suf
		suf++
	}
	for _, pr := range myers(a[pre:len(a)-suf], b[pre:len(b)-suf], maxDiffEdits) {
		match[pre+pr[1]] = pre + pr[0]
	}
	return match
}

// myers returns the matched index pairs (ia, ib) of a shortest edit script between a and b
// (Myers' O(ND) algorithm), or nil when it needs more than maxD edits.
func myers(a, b []string, maxD int) [][2]int {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return nil
	}
	limit := min(n+m, maxD)
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int // trace[d][k+d] is the furthest x on diagonal k after d edits
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m, d)
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
	}
	return nil
}

// backtrack walks the trace back from (n, m) after d edits and collects the diagonal moves.
func backtrack(trace [][]int, x, y, d int) [][2]int {
	var pairs [][2]int
	for ; d > 0; d-- {
		prev := trace[d-1]
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		midX := prevX
		if prevK == k-1 {
			midX = prevX + 1
		}
		for x > midX {
			x--
			y--
			pairs = append(pairs, [2]int{x, y})
		}
		x, y = prevX, prevY
	}
	for x > 0 && y > 0 {
		x--
		y--
		pairs = append(pairs, [2]int{x, y})
	}
	return pairs
}
