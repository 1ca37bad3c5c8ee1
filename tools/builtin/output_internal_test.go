package builtin

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/tools"
)

func TestANSIStripperHandlesSequencesSplitAcrossChunks(t *testing.T) {
	in := "\x1b[1;31mred\x1b[0m|\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\|\x1b]0;title\x07|\x1bPq#0\x1b\\|\x1b(Bcharset|\x1b7saved\x1b8|tab\there\r\n|é"
	want := "red|link|||charset|saved|tab\there\r\n|é"
	for size := 1; size <= len(in); size++ {
		var s ansiStripper
		var out []byte
		for i := 0; i < len(in); i += size {
			out = s.strip(out, []byte(in[i:min(i+size, len(in))]))
		}
		if string(out) != want {
			t.Fatalf("chunks of %d: %q, want %q", size, out, want)
		}
	}
}

func TestANSIStripperGivesUpOnARunawayString(t *testing.T) {
	var s ansiStripper
	in := "\x1b]" + strings.Repeat("x", maxEscString+10) + "\nvisible\n"
	out := string(s.strip(nil, []byte(in)))
	if !strings.HasSuffix(out, "\nvisible\n") {
		t.Errorf("an unterminated OSC swallowed the output: %q", out[max(0, len(out)-40):])
	}
	// A CSI broken by a control byte keeps the byte.
	s = ansiStripper{}
	if out := string(s.strip(nil, []byte("a\x1b[12\nb"))); out != "a\nb" {
		t.Errorf("broken CSI: %q", out)
	}
}

func TestRingKeepsTheLastBytes(t *testing.T) {
	r := ring{buf: make([]byte, 5)}
	var all []byte
	for _, w := range []string{"ab", "cde", "f", "ghijkl", "m", "", "nopqrstuvwxyz", "12"} {
		r.write([]byte(w))
		all = append(all, w...)
		want := all[max(0, len(all)-5):]
		if got := r.bytes(); !bytes.Equal(got, want) {
			t.Fatalf("after %q: %q, want %q", w, got, want)
		}
	}
}

func TestCaptureCutsOnRuneBoundaries(t *testing.T) {
	for head := 1; head < 8; head++ {
		for tail := 1; tail < 8; tail++ {
			c := newCapture(head, tail, "", 0, nil)
			out := strings.Repeat("€", 10) // 3 bytes each
			for i := 0; i < len(out); i += 2 {
				c.write([]byte(out[i:min(i+2, len(out))]))
			}
			text := c.text()
			if !utf8.ValidString(text) || strings.ContainsRune(text, utf8.RuneError) {
				t.Fatalf("head %d tail %d: %q", head, tail, text)
			}
			h, rest, ok := strings.Cut(text, "\n[… ")
			if !ok {
				t.Fatalf("no omission marker: %q", text)
			}
			if len(h) != head/3*3 {
				t.Errorf("head %d: kept %q", head, h)
			}
			_, tl, _ := strings.Cut(rest, "…]\n")
			if len(tl) != tail/3*3 || c.total != 30 {
				t.Errorf("tail %d: kept %q", tail, tl)
			}
		}
	}
}

func TestProgressHoldsBackAnIncompleteRune(t *testing.T) {
	var mu sync.Mutex
	var got []string
	ctx := tools.WithProgress(context.Background(), func(p tools.Progress) {
		mu.Lock()
		got = append(got, p.Text)
		mu.Unlock()
	})
	p := startProgress(ctx, time.Hour)
	p.add([]byte("a\xe2\x82"))
	p.flush(false)
	p.add([]byte("\xac b"))
	p.close()
	if strings.Join(got, "|") != "a|€ b" {
		t.Errorf("updates %q", got)
	}
}

func TestProgressKeepsOnlyTheLatestOutputBetweenUpdates(t *testing.T) {
	var got []string
	ctx := tools.WithProgress(context.Background(), func(p tools.Progress) { got = append(got, p.Text) })
	p := startProgress(ctx, time.Hour)
	p.add(bytes.Repeat([]byte("x"), maxPending+10))
	p.add([]byte("end"))
	p.close()
	if len(got) != 1 || !strings.HasPrefix(got[0], "[… 13 bytes …]\n") || !strings.HasSuffix(got[0], "end") {
		t.Errorf("updates %q", got)
	}
}

func TestRenamerNeverOverwrites(t *testing.T) {
	r := renamer{"file_path": "path"}
	got := r.apply(map[string]any{"file_path": "a", "path": "b"})
	if got["path"] != "b" || got["file_path"] != "a" {
		t.Errorf("%v", got)
	}
	got = r.apply(map[string]any{"file_path": "a"})
	if got["path"] != "a" || len(got) != 1 {
		t.Errorf("%v", got)
	}
}

func TestBestWindowIsCheapOnLargeFiles(t *testing.T) {
	var b strings.Builder
	for i := range 200000 {
		b.WriteString("some line of code number ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteByte('\n')
	}
	b.WriteString("\tfunc target() {\n")
	text := b.String()
	start := time.Now()
	hint := nearMiss(text, "func  target() {")
	if !strings.Contains(hint, "line 200001") || !strings.Contains(hint, "whitespace") {
		t.Errorf("hint %q", hint)
	}
	t.Logf("near-miss search over 200k lines took %v", time.Since(start))
}
