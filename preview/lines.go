package preview

import "strings"

// Lines splits s into lines that keep their terminators: every line but the last ends in "\n"
// (so a "\r\n" line keeps its "\r"), and the last line has no terminator when s does not end in
// "\n". Joining the lines gives s back. Lines("") is nil.
//
// This is the notion of line used throughout the package. A lone "\r" is not a line break here;
// LSP positions, which do count it as one, are computed separately (see TextEdits).
func Lines(s string) []string {
	if s == "" {
		return nil
	}
	n := strings.Count(s, "\n")
	if s[len(s)-1] != '\n' {
		n++
	}
	out := make([]string, 0, n)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// hasTerminator reports whether line ends in "\n".
func hasTerminator(line string) bool {
	return line != "" && line[len(line)-1] == '\n'
}

// utf16Len is the number of UTF-16 code units of s. An invalid UTF-8 byte counts as one unit,
// the length of the U+FFFD an editor decodes it to.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// loneCRs counts the carriage returns in line that are not followed by "\n": each is a line break
// for LSP (and for editors) but not for Lines.
func loneCRs(line string) int {
	if strings.IndexByte(line, '\r') < 0 {
		return 0
	}
	n := 0
	for i := 0; i < len(line); i++ {
		if line[i] == '\r' && (i+1 == len(line) || line[i+1] != '\n') {
			n++
		}
	}
	return n
}

// lspEnd returns where the end of line falls for LSP, relative to the line's start: how many LSP
// line breaks (lone "\r") it contains and the UTF-16 column after the last of them. line must
// not contain "\n" (it is the last line of a text without a final newline).
func lspEnd(line string) (breaks, col int) {
	start := 0
	for i := 0; i < len(line); i++ {
		if line[i] == '\r' {
			breaks++
			start = i + 1
		}
	}
	return breaks, utf16Len(line[start:])
}
