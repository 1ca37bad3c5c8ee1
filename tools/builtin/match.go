package builtin

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentd/agentd/tools"
)

// EditOp is one replacement: old_string, which must occur exactly once in the file (or any
// number of times with replace_all), becomes new_string. Its fields mean what edit's own fields of
// the same names mean, which the schema describes once (the definition is sent with every
// request).
type EditOp struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

// applyEdits applies ops in order to the normalized text (line breaks "\n"): each is matched
// against the text as the previous ones left it. It returns the new text and how many
// replacements each op made. Any failure leaves nothing applied: the caller writes only the
// final text.
func applyEdits(text, path string, ops []EditOp) (string, []int, error) {
	counts := make([]int, len(ops))
	for i, op := range ops {
		prefix := ""
		if len(ops) > 1 {
			prefix = fmt.Sprintf("edit %d of %d: ", i+1, len(ops))
		}
		fail := func(format string, args ...any) error {
			msg := prefix + fmt.Sprintf(format, args...)
			if i > 0 {
				msg += " (Edits apply in order: this one was matched against the file as the earlier edits left it.)"
			}
			return tools.Errorf(tools.InvalidArgs, "%s Nothing was changed.", msg)
		}
		old, repl := lf(op.OldString), lf(op.NewString)
		if old == "" {
			return "", nil, fail("old_string is empty. Copy the exact text to replace from the file (to create a new file, use write).")
		}
		if old == repl {
			return "", nil, fail("old_string and new_string are identical, so this edit would change nothing.")
		}
		at := indexAll(text, old)
		switch {
		case len(at) == 0:
			return "", nil, fail("old_string was not found in %s.%s", path, nearMiss(text, old))
		case len(at) > 1 && !op.ReplaceAll:
			return "", nil, fail("old_string occurs %d times in %s, at lines %s. Include more of the surrounding lines in old_string so that it matches exactly one place, or set replace_all to true to replace every occurrence.",
				len(at), path, lineList(text, at))
		}
		text = strings.ReplaceAll(text, old, repl)
		counts[i] = len(at)
	}
	return text, counts, nil
}

// indexAll returns the byte offsets of the non-overlapping occurrences of sub in s.
func indexAll(s, sub string) []int {
	var at []int
	for off := 0; ; {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			return at
		}
		at = append(at, off+i)
		off += i + len(sub)
	}
}

// lineList names the 1-based lines of the offsets (sorted), at most 20 of them.
func lineList(text string, offsets []int) string {
	var parts []string
	line, pos := 1, 0
	for i, off := range offsets {
		if i == 20 {
			parts = append(parts, fmt.Sprintf("and %d more", len(offsets)-i))
			break
		}
		line += strings.Count(text[pos:off], "\n")
		pos = off
		parts = append(parts, strconv.Itoa(line))
	}
	return strings.Join(parts, ", ")
}

// readPrefix matches a line number and tab as read prints them.
var readPrefix = regexp.MustCompile(`^\s*\d+\t`)

// nearMiss explains a failed match: read's line numbers copied into old_string, or the region of
// the file closest to old_string, with its line numbers. Lines are compared without their white
// space and blank lines are skipped on both sides, so an old_string that differs only in
// indentation or a missing blank line is found, and named as such; otherwise the closest region
// is shown with how similar it is.
func nearMiss(text, old string) string {
	oldLines := trimBlankLines(strings.Split(old, "\n"))
	if len(oldLines) == 0 {
		return " old_string holds only blank lines; include the text around the place to change."
	}
	numbered := true
	for _, l := range oldLines {
		if !readPrefix.MatchString(l) && strings.TrimSpace(l) != "" {
			numbered = false
			break
		}
	}
	if numbered {
		return " old_string seems to include the line numbers and tabs that read prints before each line; leave them out and copy only the text after the tab."
	}
	want := nonBlank(oldLines)
	lines := strings.Split(text, "\n")
	var at []int // the file's non-blank lines, by index
	var have []string
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			at = append(at, i)
			have = append(have, l)
		}
	}
	if len(have) == 0 {
		return " The file is empty (or only blank lines): read it again to see its current content."
	}
	if len(want) > len(have) {
		return " old_string has more lines than the file; read the file again to see its current content."
	}
	start, score := bestWindow(have, want)
	if start < 0 {
		return " Read the file again to see its current content."
	}
	from, to := at[start], at[start+len(want)-1] // the region, blank lines within it included
	window := lines[from : to+1]
	var what string
	switch {
	case squash(strings.Join(window, "\n")) != squash(strings.Join(oldLines, "\n")):
		what = fmt.Sprintf("about %d%% similar", int(score*100))
	case len(window) != len(oldLines):
		what = "it differs only in blank lines and white space: old_string must have the same blank lines"
	default:
		what = "it differs only in whitespace or indentation"
	}
	lead := "The most similar text"
	if score < 0.6 {
		lead = "Nothing closely similar was found; the closest text"
	}
	var b strings.Builder
	fmt.Fprintf(&b, " %s is at %s (%s):\n", lead, lineSpan(from+1, len(window)), what)
	for i, l := range window {
		if i == 10 {
			fmt.Fprintf(&b, "   ... (%d more lines)\n", len(window)-i)
			break
		}
		fmt.Fprintf(&b, "%6d\t%s\n", from+1+i, cutRunes(l, 200))
	}
	b.WriteString("Copy old_string exactly from the file (without the line numbers), with the same spaces, tabs, blank lines and characters.")
	return b.String()
}

// nonBlank returns the lines that are not blank.
func nonBlank(ls []string) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func lineSpan(from, n int) string {
	if n == 1 {
		return fmt.Sprintf("line %d", from)
	}
	return fmt.Sprintf("lines %d–%d", from, from+n-1)
}

func trimBlankLines(ls []string) []string {
	for len(ls) > 0 && strings.TrimSpace(ls[0]) == "" {
		ls = ls[1:]
	}
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// squash removes all whitespace, so that texts differing only in indentation compare equal.
func squash(s string) string {
	return strings.Join(strings.Fields(s), "")
}

// Candidate windows scored in full by bestWindow, chosen by how well their first and last lines
// match.
const nearCandidates = 20

// bestWindow finds the run of len(want) lines of lines most similar to want. It is cheap: every
// line is compared with want's first and last lines only, and the best candidates are scored
// line by line. It returns the start index and the score in [0, 1], or -1.
func bestWindow(lines, want []string) (int, float64) {
	k := len(want)
	n := len(lines) - k + 1
	if n <= 0 {
		return -1, 0
	}
	first, last := newBigrams(want[0]), newBigrams(want[k-1])
	type cand struct {
		start int
		score float64
	}
	byFirst := make([]cand, 0, n)
	byLast := make([]cand, 0, n)
	for i := range n {
		byFirst = append(byFirst, cand{i, first.similarity(lines[i])})
		if k > 1 {
			byLast = append(byLast, cand{i, last.similarity(lines[i+k-1])})
		}
	}
	top := func(cs []cand) []cand {
		sort.SliceStable(cs, func(a, b int) bool { return cs[a].score > cs[b].score })
		return cs[:min(len(cs), nearCandidates)]
	}
	wantGrams := make([]*bigrams, k)
	for j, w := range want {
		wantGrams[j] = newBigrams(w)
	}
	best, bestScore := -1, 0.0
	seen := map[int]bool{}
	for _, c := range append(top(byFirst), top(byLast)...) {
		if seen[c.start] {
			continue
		}
		seen[c.start] = true
		sum := 0.0
		for j := range k {
			sum += wantGrams[j].similarity(lines[c.start+j])
		}
		if s := sum / float64(k); s > bestScore {
			best, bestScore = c.start, s
		}
	}
	return best, bestScore
}

// bigrams is the sorted multiset of adjacent character pairs of a line, whitespace left out,
// for a Dice similarity.
type bigrams struct {
	squashed string
	grams    []uint64
	scratch  []uint64
}

func newBigrams(s string) *bigrams {
	return &bigrams{squashed: squash(s), grams: gramsOf(s, nil)}
}

// gramsOf appends the sorted bigrams of s (whitespace skipped) to buf[:0].
func gramsOf(s string, buf []uint64) []uint64 {
	buf = buf[:0]
	var prev rune = -1
	for _, r := range s {
		if unicode.IsSpace(r) {
			continue
		}
		if prev >= 0 {
			buf = append(buf, uint64(prev)<<32|uint64(r))
		}
		prev = r
	}
	slices.Sort(buf)
	return buf
}

// similarity is the Dice coefficient of b's and s's bigrams: 1 for lines equal but for
// whitespace, 0 for lines with no pair in common.
func (b *bigrams) similarity(s string) float64 {
	b.scratch = gramsOf(s, b.scratch)
	other := b.scratch
	if len(b.grams) == 0 || len(other) == 0 {
		if squash(s) == b.squashed {
			return 1
		}
		return 0
	}
	common := 0
	for i, j := 0, 0; i < len(b.grams) && j < len(other); {
		switch {
		case b.grams[i] == other[j]:
			common++
			i++
			j++
		case b.grams[i] < other[j]:
			i++
		default:
			j++
		}
	}
	return 2 * float64(common) / float64(len(b.grams)+len(other))
}
