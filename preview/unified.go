package preview

import (
	"strings"

	sgdiff "github.com/sourcegraph/go-diff/diff"
)

// Unified returns the diff as unified diff text with context lines of context around each change
// (negative means 0): "--- a/<path>" and "+++ b/<path>" headers, "/dev/null" for the missing side
// of a created or deleted file, and "\ No newline at end of file" markers. Changes whose context
// would touch or overlap share one @@ hunk, as diff -u does. It returns "" when there are no
// hunks. GNU patch applies it to Old and gives New byte for byte (use --binary when lines end in
// "\r\n", so that patch does not strip the carriage returns).
func (d *Diff) Unified(context int) string {
	if len(d.Hunks) == 0 {
		return ""
	}
	context = max(context, 0)
	fd := &sgdiff.FileDiff{OrigName: "a/" + d.Path, NewName: "b/" + d.Path}
	if d.Created {
		fd.OrigName = "/dev/null"
	}
	if d.Deleted {
		fd.NewName = "/dev/null"
	}

	old := Lines(d.Old)
	size := 0
	for i := 0; i < len(d.Hunks); {
		// Group the hunks separated by at most 2*context unchanged lines.
		j := i + 1
		for j < len(d.Hunks) && d.Hunks[j].OldStart-(d.Hunks[j-1].OldStart+d.Hunks[j-1].OldLines) <= 2*context {
			j++
		}
		h := unifiedHunk(old, d.Hunks[i:j], context)
		size += len(h.Body) + 64
		fd.Hunks = append(fd.Hunks, h)
		i = j
	}

	var sb strings.Builder
	sb.Grow(size + len(fd.OrigName) + len(fd.NewName) + 8)
	_ = sgdiff.WriteFileDiff(&sb, fd) // writing to a strings.Builder cannot fail
	return sb.String()
}

// unifiedHunk builds one unified hunk from consecutive hunks of a diff of old, with context
// unchanged lines before and after.
func unifiedHunk(old []string, hs []Hunk, context int) *sgdiff.Hunk {
	first, last := hs[0], hs[len(hs)-1]
	start := max(first.OldStart-1-context, 0)                   // 0-based, first line shown
	end := min(last.OldStart-1+last.OldLines+context, len(old)) // 0-based, after the last line shown
	newStart := first.NewStart - 1 - (first.OldStart - 1 - start)

	out := &sgdiff.Hunk{OrigLines: int32(end - start)}
	newLines := end - start
	var body []byte
	line := func(prefix byte, l string) {
		body = append(append(body, prefix), l...)
		if !hasTerminator(l) && prefix == '-' {
			// The old file's last line, followed by '+' lines or nothing: the printer puts the
			// marker here. A ' ' or '+' line without terminator ends the body, and the printer
			// adds the marker after it.
			body = append(body, '\n')
			out.OrigNoNewlineAt = int32(len(body))
		}
	}
	pos := start
	for _, h := range hs {
		for _, l := range old[pos : h.OldStart-1] {
			line(' ', l)
		}
		for _, l := range old[h.OldStart-1 : h.OldStart-1+h.OldLines] {
			line('-', l)
		}
		for _, l := range h.Added {
			line('+', l)
		}
		pos = h.OldStart - 1 + h.OldLines
		newLines += h.NewLines - h.OldLines
	}
	for _, l := range old[pos:end] {
		line(' ', l)
	}
	out.Body = body
	out.NewLines = int32(newLines)
	// A range of 0 lines starts at the line before it (0 for the top of the file).
	out.OrigStartLine = int32(start)
	if out.OrigLines > 0 {
		out.OrigStartLine++
	}
	out.NewStartLine = int32(newStart)
	if out.NewLines > 0 {
		out.NewStartLine++
	}
	return out
}
