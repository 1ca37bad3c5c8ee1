package preview

import "strings"

// TextEdits returns LSP text edits against Old that apply the hunks with the given IDs (all hunks
// when none is given; unknown IDs are ignored, Apply reports them). The edits are sorted and do
// not overlap or touch; applied together they give the same text as Apply.
//
// Each hunk is one whole-line edit: {line,0}–{line+removed,0} replaced by the added lines. When
// the hunk removes the last line of an Old without a final newline, the edit ends at the end of
// that line instead (there is no line after it). Columns are UTF-16 code units, and line numbers
// count a lone "\r" as a line break, as LSP does.
//
// An insertion after a last line without newline cannot come out of Compute (that line would
// have to be unchanged, hence the last line of New too); for a hand-built hunk it is placed at
// the end of the text, like Apply, so the added text should then start with "\n".
func (d *Diff) TextEdits(ids ...string) []TextEdit {
	old := Lines(d.Old)
	// Cursor over old: lone CRs in old[:next], for line numbers that only grow.
	next, lone := 0, 0
	lspLine := func(i int) uint32 {
		for ; next < i; next++ {
			lone += loneCRs(old[next])
		}
		return uint32(i + lone)
	}
	noFinalNewline := len(old) > 0 && !hasTerminator(old[len(old)-1])

	var want map[string]bool
	if len(ids) > 0 {
		want = make(map[string]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
	}
	var edits []TextEdit
	for _, h := range d.Hunks {
		if want != nil && !want[h.ID] {
			continue
		}
		s, e := h.OldStart-1, h.OldStart-1+h.OldLines
		var r Range
		if noFinalNewline && e == len(old) {
			// The edit reaches the end of a text that has no final newline.
			last := len(old) - 1
			if s < e {
				r.Start = Position{Line: lspLine(s)}
			}
			breaks, col := lspEnd(old[last])
			r.End = Position{Line: lspLine(last) + uint32(breaks), Character: uint32(col)}
			if s == e {
				r.Start = r.End
			}
		} else {
			r.Start = Position{Line: lspLine(s)}
			r.End = Position{Line: lspLine(e)}
		}
		edits = append(edits, TextEdit{Range: r, NewText: strings.Join(h.Added, "")})
	}
	return edits
}
