package preview

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrUnknownHunk is wrapped by Apply's error when an accepted ID names no hunk of the diff.
var ErrUnknownHunk = errors.New("unknown hunk")

// Apply returns the content that results from applying exactly the accepted hunks to Old: all of
// them when accepted is nil, none when it is empty but not nil. Duplicate IDs count once. An ID
// that names no hunk is an error wrapping ErrUnknownHunk, and nothing is applied.
func (d *Diff) Apply(accepted []string) (string, Outcome, error) {
	take := make([]bool, len(d.Hunks))
	if accepted == nil {
		for i := range take {
			take[i] = true
		}
	} else {
		index := make(map[string]int, len(d.Hunks))
		for i, h := range d.Hunks {
			index[h.ID] = i
		}
		for _, id := range accepted {
			i, ok := index[id]
			if !ok {
				return "", Outcome{}, fmt.Errorf("preview: %s: %w %q", d.Path, ErrUnknownHunk, id)
			}
			take[i] = true
		}
	}

	old := Lines(d.Old)
	var sb strings.Builder
	sb.Grow(max(len(d.Old), len(d.New)))
	var o Outcome
	pos := 0
	for i, h := range d.Hunks {
		s, e := h.OldStart-1, h.OldStart-1+h.OldLines
		if s < pos || e > len(old) {
			return "", Outcome{}, fmt.Errorf("preview: %s: hunk %s (old lines %d+%d) does not fit the old text", d.Path, h.ID, h.OldStart, h.OldLines)
		}
		writeLines(&sb, old[pos:s])
		if take[i] {
			writeLines(&sb, h.Added)
			o.Applied = append(o.Applied, h.ID)
		} else {
			writeLines(&sb, old[s:e])
			o.Rejected = append(o.Rejected, h.ID)
		}
		pos = e
	}
	writeLines(&sb, old[pos:])
	return sb.String(), o, nil
}

func writeLines(sb *strings.Builder, lines []string) {
	for _, l := range lines {
		sb.WriteString(l)
	}
}

// Describe tells, in a few words a model can act on, what applying o did to the file of d: how
// many hunks were applied, each applied hunk with where its lines now are, each rejected hunk with
// where it would have gone and the start of its removed and added text. Line numbers are 1-based
// and refer to the file as it is after the application. A hunk not listed in o.Applied counts as
// rejected. For a Created diff of which nothing was applied it says the file was not created, and
// for a Deleted diff applied whole that the file was deleted: the caller acts accordingly.
//
// Example: "applied 2 of 3 hunks to main.go: h1a2b3c4d (lines 10–12), h5e6f7a8b (line 20);
// rejected: hcd34ef56 (line 40: -old / +new) — the file now contains only the applied changes".
func (o Outcome) Describe(d *Diff) string {
	if len(d.Hunks) == 0 {
		return "no changes to " + d.Path
	}
	applied := make(map[string]bool, len(o.Applied))
	for _, id := range o.Applied {
		applied[id] = true
	}
	total := len(Lines(d.Old)) // lines in the resulting file
	for _, h := range d.Hunks {
		if applied[h.ID] {
			total += h.NewLines - h.OldLines
		}
	}

	var app, rej []string
	delta := 0 // lines added minus removed by the applied hunks so far
	for _, h := range d.Hunks {
		at := h.OldStart + delta
		if applied[h.ID] {
			where := span(at, h.NewLines, total)
			if h.NewLines == 0 {
				where = fmt.Sprintf("removed %s %s", count(h.OldLines, "line"), where)
			}
			app = append(app, fmt.Sprintf("%s (%s)", h.ID, where))
			delta += h.NewLines - h.OldLines
		} else {
			rej = append(rej, fmt.Sprintf("%s (%s: %s)", h.ID, span(at, h.OldLines, total), snippet(h)))
		}
	}

	var sb strings.Builder
	fmt.Fprintf(&sb, "applied %d of %s to %s", len(app), count(len(d.Hunks), "hunk"), d.Path)
	if len(app) > 0 {
		sb.WriteString(": " + strings.Join(app, ", "))
	}
	if len(rej) > 0 {
		sb.WriteString("; rejected: " + strings.Join(rej, ", "))
	}
	switch {
	case len(rej) == 0 && d.Deleted:
		sb.WriteString(" — the file was deleted")
	case len(rej) == 0:
		sb.WriteString(" — the file now contains all proposed changes")
	case len(app) == 0 && d.Created:
		sb.WriteString(" — the file was not created")
	case len(app) == 0:
		sb.WriteString(" — the file is unchanged")
	default:
		sb.WriteString(" — the file now contains only the applied changes")
	}
	return sb.String()
}

// span names n lines starting at line at of a file of total lines; for n == 0, the place before
// line at.
func span(at, n, total int) string {
	switch {
	case n == 1:
		return fmt.Sprintf("line %d", at)
	case n > 1:
		return fmt.Sprintf("lines %d–%d", at, at+n-1)
	case at > total:
		return "at end of file"
	default:
		return fmt.Sprintf("before line %d", at)
	}
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// snippet shows the start of a hunk: "-first removed line / +first added line".
func snippet(h Hunk) string {
	var parts []string
	if len(h.Removed) > 0 {
		parts = append(parts, "-"+excerpt(h.Removed))
	}
	if len(h.Added) > 0 {
		parts = append(parts, "+"+excerpt(h.Added))
	}
	return strings.Join(parts, " / ")
}

// excerpt is the first of lines, trimmed and cut to 40 characters, with how many lines follow.
func excerpt(lines []string) string {
	const maxRunes = 40
	s := strings.TrimSpace(lines[0])
	if s == "" {
		s = "(blank line)"
	}
	if utf8.RuneCountInString(s) > maxRunes {
		s = strings.TrimRight(string([]rune(s)[:maxRunes]), " \t") + "…"
	}
	if len(lines) > 1 {
		s += fmt.Sprintf(" (+%s)", count(len(lines)-1, "more line"))
	}
	return s
}

// Stats returns how many lines the diff adds and removes.
func (d *Diff) Stats() (added, removed int) {
	for _, h := range d.Hunks {
		added += h.NewLines
		removed += h.OldLines
	}
	return added, removed
}

// Summary is a one-line description such as "main.go: 2 hunks, +3 −1",
// "main.go (new file): 1 hunk, +10 −0" or "main.go: no changes".
func (d *Diff) Summary() string {
	name := d.Path
	switch {
	case d.Created:
		name += " (new file)"
	case d.Deleted:
		name += " (deleted)"
	}
	if len(d.Hunks) == 0 {
		return name + ": no changes"
	}
	added, removed := d.Stats()
	return fmt.Sprintf("%s: %s, +%d −%d", name, count(len(d.Hunks), "hunk"), added, removed)
}
