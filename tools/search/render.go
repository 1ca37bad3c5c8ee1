package search

import (
	"fmt"
	"strconv"
	"strings"
)

// Render returns the model-facing text of a grep result: "path:line:text" for matching lines,
// "path-line-text" for context lines, "--" between non-adjacent groups when context was asked,
// one path per line in files mode, "path:count" in count mode; then the caps and notes.
func (r *GrepResult) Render() string {
	var b strings.Builder
	var unsaved []string
	switch r.Mode {
	case ModeFiles:
		for _, f := range r.Files {
			b.WriteString(f.Path)
			b.WriteByte('\n')
		}
	case ModeCount:
		for _, f := range r.Files {
			b.WriteString(f.Path)
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(f.Count))
			b.WriteByte('\n')
		}
	default:
		first := true
		for _, f := range r.Files {
			prev := -1
			for _, l := range f.Lines {
				if r.Context && !first && l.Number != prev+1 {
					b.WriteString("--\n")
				}
				first = false
				prev = l.Number
				sep := byte('-')
				if l.Match {
					sep = ':'
				}
				b.WriteString(f.Path)
				b.WriteByte(sep)
				b.WriteString(strconv.Itoa(l.Number))
				b.WriteByte(sep)
				b.WriteString(l.Text)
				if l.Truncated > 0 {
					fmt.Fprintf(&b, " [+%d bytes]", l.Truncated)
				}
				b.WriteByte('\n')
			}
			if f.Omitted > 0 {
				fmt.Fprintf(&b, "%s: (%s in this file)\n", f.Path, plural(f.Omitted, "more matching line"))
			}
		}
	}
	for _, f := range r.Files {
		if f.Unsaved {
			unsaved = append(unsaved, f.Path)
		}
	}
	if len(r.Files) == 0 {
		b.WriteString("No matches found.\n")
	}
	switch {
	case r.Mode == ModeFiles && r.OmittedFiles > 0:
		fmt.Fprintf(&b, "(%s not shown; %s matched. Narrow the pattern or the path, or use include globs.)\n",
			plural(r.OmittedFiles, "more file"), plural(r.TotalFiles, "file"))
	case r.Mode != ModeFiles && r.OmittedMatches > 0:
		fmt.Fprintf(&b, "(%s not shown", plural(r.OmittedMatches, "more matching line"))
		if r.OmittedFiles > 0 {
			fmt.Fprintf(&b, ", in %s", plural(r.OmittedFiles, "more file"))
		}
		fmt.Fprintf(&b, "; %s in %s in total. Narrow the pattern or the path, or use include globs.)\n",
			plural(r.TotalMatches, "matching line"), plural(r.TotalFiles, "file"))
	}
	if len(unsaved) > 0 {
		fmt.Fprintf(&b, "Note: searched the unsaved editor content of %s.\n", strings.Join(unsaved, ", "))
	}
	if r.Withheld > 0 {
		names := strings.Join(r.WithheldSample, ", ")
		if r.Withheld > len(r.WithheldSample) {
			names += ", …"
		}
		links := ""
		if r.WithheldLinks > 0 {
			links = fmt.Sprintf(" (%s: %s content is also another file's, which may be a secret or outside the workspace)",
				plural(r.WithheldLinks, "hard link"), pick(r.WithheldLinks, "its", "their"))
		}
		fmt.Fprintf(&b, "(%s not searched because %s hold secrets%s: %s. To see one, read it or grep with its path; the user is asked first.)\n",
			plural(r.Withheld, "file"), mayHold(r.Withheld), links, names)
	}
	for _, n := range r.Notes {
		b.WriteString("Note: ")
		b.WriteString(n)
		b.WriteString(".\n")
	}
	return b.String()
}

// Text is Render.
func (r *GrepResult) Text() string { return r.Render() }

func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func mayHold(n int) string {
	if n == 1 {
		return "it may"
	}
	return "they may"
}

// plural formats "1 file" / "2 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
