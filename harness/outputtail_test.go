package harness

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// The kept output of a running call is bounded: its last MaxOutputTail bytes, after a line
// that says how many earlier bytes are not shown, cut at a character boundary.
func TestOutputTailIsBounded(t *testing.T) {
	var o outputTail
	if o.text() != "" {
		t.Fatalf("empty tail = %q", o.text())
	}
	// Two-byte characters and one odd byte at the end: the cut falls inside a character.
	chunk := strings.Repeat("é", 500)
	total := 0
	for total < 5*MaxOutputTail {
		o.add(chunk)
		total += len(chunk)
	}
	o.add("z")
	total++
	got := o.text()
	head, body, ok := strings.Cut(got, "\n")
	var cut int
	if _, err := fmt.Sscanf(head, "[… %d earlier bytes of output not shown …]", &cut); !ok || err != nil {
		t.Fatalf("the tail does not start with a note of what was cut (%v): %.80q", err, got)
	}
	if !utf8.ValidString(body) || !strings.HasSuffix(body, "éz") {
		t.Errorf("the kept output is not whole characters ending the output: …%q", body[max(0, len(body)-10):])
	}
	if len(body) > MaxOutputTail || len(body) < MaxOutputTail-1 {
		t.Errorf("kept %d bytes, want the last %d (less a cut character)", len(body), MaxOutputTail)
	}
	if cut+len(body) != total {
		t.Errorf("the note says %d bytes cut and %d are kept, of %d", cut, len(body), total)
	}
	if len(o.buf) > 2*MaxOutputTail {
		t.Errorf("the tail holds %d bytes, more than twice its cap", len(o.buf))
	}
	var short outputTail
	short.add("one\n")
	short.add("two\n")
	if got := short.text(); got != "one\ntwo\n" {
		t.Errorf("a short output = %q, want it whole with no note", got)
	}
}
