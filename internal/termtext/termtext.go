// Package termtext prints text agentd did not write — the model's commands, diffs, paths,
// replies, tool results, MCP server and tool names — on a terminal without letting it drive the
// terminal. Every control character in such text is shown as an escape (`\x1b`, `\r`, `\u202e`),
// never written raw, so a command cannot move the cursor, erase a line, retitle the window, write
// the clipboard (OSC 52) or reorder what the user reads (bidi overrides) above an approval prompt.
//
// A Writer is the only way the command line prints: it has no Write method, so raw bytes cannot
// reach it. Its format strings are agentd's own; every argument is escaped except Styled values,
// which only Paint makes (agentd's colours around escaped text).
package termtext

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every character that a terminal would act on made visible: C0 controls
// other than '\n' and '\t' (which lay text out) as `\xNN` (`\r` for a carriage return not
// followed by '\n': "\r\n" is kept as "\n"), DEL, C1 controls (U+0080–U+009F, which some
// terminals read as CSI and OSC), Unicode bidirectional controls and invalid UTF-8 bytes. A
// backslash is kept as it is: the text is for reading, not for parsing back.
func Escape(s string) string { return escape(s, true) }

// Line is Escape for text shown on one line: '\n' and '\t' are made visible too.
func Line(s string) string { return escape(s, false) }

func escape(s string, layout bool) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafe(r, n, layout) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\r' && layout && strings.HasPrefix(s[i+1:], "\n"):
			// "\r\n": the line break of a CRLF text, shown as a line break.
		case !unsafe(r, n, layout):
			b.WriteString(s[i : i+n])
		case r == utf8.RuneError:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// unsafe reports whether the rune r (n bytes long) must not reach a terminal raw.
func unsafe(r rune, n int, layout bool) bool {
	switch {
	case r == utf8.RuneError && n <= 1:
		return true // an invalid byte (a lone 0x9b is CSI to an 8-bit terminal)
	case r == '\n' || r == '\t':
		return !layout
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	}
	return bidi(r)
}

// bidi reports the Unicode bidirectional formatting characters (the "Trojan Source" set): they
// reorder what is displayed without changing what is run.
func bidi(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Styled is text agentd formats itself: a Paint result, printed as it is.
type Styled string

// Writer prints to a terminal (or a pipe or file: the rule is the same), escaping everything it
// did not style itself.
type Writer struct {
	w     io.Writer
	color bool
	// cr is set when the last text printed ended in '\r': it is "\r\n" if the next text starts
	// with '\n' (a reply streamed in pieces), else shown as `\r`.
	cr bool
}

// New returns a Writer on w; color says whether Paint emits colours (SGR sequences).
func New(w io.Writer, color bool) *Writer { return &Writer{w: w, color: color} }

// Color reports whether Paint emits colours.
func (w *Writer) Color() bool { return w.color }

// Paint returns s escaped, in the SGR style code ("1;33", "32") when colours are on.
func (w *Writer) Paint(code, s string) Styled {
	if !w.color {
		return Styled(Escape(s))
	}
	return Styled("\x1b[" + code + "m" + Escape(s) + "\x1b[0m")
}

// Printf formats like fmt.Printf. format is agentd's own; each argument is escaped (see Escape)
// unless it is Styled, a number or a bool.
func (w *Writer) Printf(format string, args ...any) {
	w.write(fmt.Sprintf(format, safeArgs(args)...))
}

// Println prints like fmt.Println, escaping its arguments as Printf does.
func (w *Writer) Println(args ...any) { w.write(fmt.Sprintln(safeArgs(args)...)) }

// Print prints like fmt.Print, escaping its arguments as Printf does.
func (w *Writer) Print(args ...any) { w.write(fmt.Sprint(safeArgs(args)...)) }

// Stream prints a piece of a text that arrives in pieces (a streamed reply): like Print, and a
// '\r' that ends the piece waits for the next one, so that a "\r\n" cut in two is a line break.
func (w *Writer) Stream(s string) {
	s, cr := strings.CutSuffix(s, "\r")
	w.write(Escape(s))
	w.cr = cr
}

// write writes s, whose every part is already escaped or agentd's own, minding a '\r' that a
// previous piece of text left pending.
func (w *Writer) write(s string) {
	if w.cr {
		w.cr = false
		if !strings.HasPrefix(s, "\n") {
			s = `\r` + s
		}
	}
	if s == "" {
		return
	}
	io.WriteString(w.w, s)
}

// safeArgs replaces every argument that is not Styled, a number or a bool by its escaped text.
// fmt's verbs then format that text: %q quotes it, %s prints it.
func safeArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case Styled:
			out[i] = string(v)
		case nil:
			out[i] = a
		case string:
			out[i] = Escape(v)
		case error:
			out[i] = Escape(v.Error())
		case fmt.Stringer:
			out[i] = Escape(v.String())
		default:
			switch reflect.TypeOf(a).Kind() {
			case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
				reflect.Float32, reflect.Float64:
				out[i] = a
			default:
				out[i] = Escape(fmt.Sprint(a))
			}
		}
	}
	return out
}
