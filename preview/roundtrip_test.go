package preview

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// gnuPatch applies unified diff text to old with GNU patch, exactly (no fuzz, no CR stripping),
// and returns the result.
func gnuPatch(t *testing.T, old, unified string) string {
	t.Helper()
	bin, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("GNU patch not installed")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	if err := os.WriteFile(in, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--binary", "--force", "--fuzz=0", "--quiet", "--no-backup-if-mismatch",
		"--reject-file="+filepath.Join(dir, "rej"), "--output="+out, in)
	cmd.Stdin = strings.NewReader(unified)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("patch: %v\n%s\ndiff:\n%s", err, stderr.String(), unified)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

// applyLSP applies LSP text edits to text the way an editor does: line breaks are "\n", "\r\n"
// and "\r"; characters are UTF-16 code units. It fails the test on edits that overlap, are out
// of order, point past the end of a line or into a surrogate pair.
func applyLSP(t *testing.T, text string, edits []TextEdit) string {
	t.Helper()
	if !utf8.ValidString(text) {
		t.Fatalf("applyLSP needs valid UTF-8")
	}
	u := utf16.Encode([]rune(text))
	// starts[i] is the offset of line i; ends[i] the offset of its line break (or of the end).
	starts, ends := []int{0}, []int{}
	for i := 0; i < len(u); i++ {
		switch {
		case u[i] == '\r' && i+1 < len(u) && u[i+1] == '\n':
			ends = append(ends, i)
			i++
			starts = append(starts, i+1)
		case u[i] == '\r' || u[i] == '\n':
			ends = append(ends, i)
			starts = append(starts, i+1)
		}
	}
	ends = append(ends, len(u))
	offset := func(p Position) int {
		if int(p.Line) >= len(starts) {
			t.Fatalf("position %+v: text has %d lines", p, len(starts))
		}
		off := starts[p.Line] + int(p.Character)
		if off > ends[p.Line] {
			t.Fatalf("position %+v is past the end of its line", p)
		}
		if off < len(u) && utf16.IsSurrogate(rune(u[off])) && u[off] >= 0xDC00 {
			t.Fatalf("position %+v splits a surrogate pair", p)
		}
		return off
	}
	type span struct {
		from, to int
		text     []uint16
	}
	var spans []span
	for _, e := range edits {
		from, to := offset(e.Range.Start), offset(e.Range.End)
		if from > to {
			t.Fatalf("edit %+v: start after end", e)
		}
		if len(spans) > 0 && from <= spans[len(spans)-1].to {
			t.Fatalf("edit %+v overlaps, touches or precedes the previous one", e)
		}
		spans = append(spans, span{from, to, utf16.Encode([]rune(e.NewText))})
	}
	for i := len(spans) - 1; i >= 0; i-- {
		s := spans[i]
		u = slices.Concat(u[:s.from], s.text, u[s.to:])
	}
	return string(utf16.Decode(u))
}

// randomPair returns a random text and a random edit of it. Lines mix "\n" and "\r\n", a lone
// "\r", blank lines, multibyte and astral-plane characters, and either text may lack a final
// newline. Lines are drawn from a small pool so that repeats make alignment ambiguous.
func randomPair(rng *rand.Rand) (old, new string) {
	words := []string{"func", "x := 1", "}", "", "héllo", "日本語", "😀", "𝄞 clef", "a\rb", "return nil", "\t// é😀"}
	line := func() string {
		w := words[rng.IntN(len(words))]
		if rng.IntN(3) == 0 {
			w += " " + words[rng.IntN(len(words))]
		}
		if rng.IntN(4) == 0 {
			return w + "\r\n"
		}
		return w + "\n"
	}
	var a []string
	for range rng.IntN(40) {
		a = append(a, line())
	}
	b := slices.Clone(a)
	for range rng.IntN(6) {
		at := 0
		if len(b) > 0 {
			at = rng.IntN(len(b) + 1)
		}
		switch rng.IntN(5) {
		case 0: // insert
			var ins []string
			for range 1 + rng.IntN(4) {
				ins = append(ins, line())
			}
			b = slices.Insert(b, at, ins...)
		case 1: // delete
			if at < len(b) {
				b = slices.Delete(b, at, min(len(b), at+1+rng.IntN(3)))
			}
		case 2: // replace
			if at < len(b) {
				b[at] = line()
			}
		case 3: // change the terminator only
			if at < len(b) {
				if strings.HasSuffix(b[at], "\r\n") {
					b[at] = strings.TrimSuffix(b[at], "\r\n") + "\n"
				} else {
					b[at] = strings.TrimSuffix(b[at], "\n") + "\r\n"
				}
			}
		case 4: // replace everything from here on
			b = b[:at]
			for range rng.IntN(5) {
				b = append(b, line())
			}
		}
	}
	old, new = strings.Join(a, ""), strings.Join(b, "")
	cut := func(s string) string { // drop the final newline
		s = strings.TrimSuffix(s, "\n")
		if rng.IntN(2) == 0 {
			s = strings.TrimSuffix(s, "\r")
		}
		return s
	}
	if rng.IntN(3) == 0 {
		old = cut(old)
	}
	if rng.IntN(3) == 0 {
		new = cut(new)
	}
	return old, new
}

func TestRoundTripRandom(t *testing.T) {
	const cases = 300
	rng := rand.New(rand.NewPCG(2026, 4))
	var hunks, created, deleted int
	for i := range cases {
		old, new := randomPair(rng)
		var d *Diff
		switch {
		case old == "" && rng.IntN(2) == 0:
			d = ComputeFile("dir/file.txt", "", false, new)
			created++
		case new == "" && rng.IntN(2) == 0:
			d = Compute("dir/file.txt", old, new)
			d.Deleted = true
			deleted++
		default:
			d = Compute("dir/file.txt", old, new)
		}
		hunks += len(d.Hunks)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("case %d: old %q new %q: %s", i, old, new, fmt.Sprintf(format, args...))
		}
		checkHunks(t, d)

		if got, _, err := d.Apply(nil); err != nil || got != new {
			fail("Apply(nil) = %q, %v", got, err)
		}
		if got, _, err := d.Apply([]string{}); err != nil || got != old {
			fail("Apply([]) = %q, %v", got, err)
		}

		context := []int{0, 1, 3}[i%3]
		u := d.Unified(context)
		if (u == "") != (len(d.Hunks) == 0) {
			fail("Unified(%d) = %q for %d hunks", context, u, len(d.Hunks))
		}
		if u != "" {
			if got := gnuPatch(t, old, u); got != new {
				fail("patch with Unified(%d) gave %q\n%s", context, got, u)
			}
		}

		if got := applyLSP(t, old, d.TextEdits()); got != new {
			fail("TextEdits() applied: %q", got)
		}

		// A random subset: edits and Apply must agree.
		var some []string
		for _, h := range d.Hunks {
			if rng.IntN(2) == 0 {
				some = append(some, h.ID)
			}
		}
		if len(some) > 0 {
			want, o, err := d.Apply(some)
			if err != nil || !slices.Equal(o.Applied, some) {
				fail("Apply(%v) = %+v, %v", some, o, err)
			}
			if got := applyLSP(t, old, d.TextEdits(some...)); got != want {
				fail("TextEdits(%v) applied %q, Apply gave %q", some, got, want)
			}
		}

		// A long diff stays minimal here too.
		added, removed := d.Stats()
		if a, b := Lines(old), Lines(new); added+removed != len(a)+len(b)-2*lcsLen(a, b) {
			fail("%d changed lines, not minimal", added+removed)
		}
	}
	if hunks < cases || created == 0 || deleted == 0 {
		t.Fatalf("generator too weak: %d hunks, %d created, %d deleted in %d cases", hunks, created, deleted, cases)
	}
}

func TestUnifiedGolden(t *testing.T) {
	tests := []struct {
		name     string
		d        *Diff
		context  int
		want     string
		patchNew bool
	}{
		{
			name:    "context merges close changes",
			d:       Compute("src/main.go", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "1\nTWO\n3\n4\n5\n6\n7\n8\nNINE\n10\n"),
			context: 3,
			want: "--- a/src/main.go\n+++ b/src/main.go\n" +
				"@@ -1,10 +1,10 @@\n 1\n-2\n+TWO\n 3\n 4\n 5\n 6\n 7\n 8\n-9\n+NINE\n 10\n",
		},
		{
			name:    "context keeps far changes apart",
			d:       Compute("f", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "1\nTWO\n3\n4\n5\n6\n7\n8\nNINE\n10\n"),
			context: 1,
			want: "--- a/f\n+++ b/f\n" +
				"@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n" +
				"@@ -8,3 +8,3 @@\n 8\n-9\n+NINE\n 10\n",
		},
		{
			name:    "insertion without context",
			d:       Compute("f", "a\nb\n", "a\nx\nb\n"),
			context: 0,
			want:    "--- a/f\n+++ b/f\n@@ -1,0 +2,1 @@\n+x\n",
		},
		{
			name:    "no newline on both sides, context line",
			d:       Compute("f", "a\nb", "A\nb"),
			context: 3,
			want:    "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n",
		},
		{
			name:    "newline added at end",
			d:       Compute("f", "a\nb", "a\nb\n"),
			context: 3,
			want:    "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
		},
		{
			name:    "no newline on both sides, changed",
			d:       Compute("f", "a", "b"),
			context: 3,
			want:    "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n",
		},
		{
			name:    "created",
			d:       ComputeFile("new.txt", "", false, "x\r\ny"),
			context: 3,
			want:    "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+x\r\n+y\n\\ No newline at end of file\n",
		},
		{
			name: "deleted",
			d: func() *Diff {
				d := Compute("gone.txt", "x\ny\n", "")
				d.Deleted = true
				return d
			}(),
			context: 3,
			want:    "--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n",
		},
		{
			name:    "no changes",
			d:       Compute("f", "a\n", "a\n"),
			context: 3,
			want:    "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.d.Unified(tt.context)
			if got != tt.want {
				t.Fatalf("Unified(%d):\n got %q\nwant %q", tt.context, got, tt.want)
			}
			if got != "" {
				if p := gnuPatch(t, tt.d.Old, got); p != tt.d.New {
					t.Fatalf("patch gave %q, want %q", p, tt.d.New)
				}
			}
		})
	}
}

func TestTextEdits(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []TextEdit
	}{
		{"whole-line replace", "a\nb\nc\n", "a\nB\nc\n", []TextEdit{
			{Range: lspRange(1, 0, 2, 0), NewText: "B\n"},
		}},
		{"insertion", "a\nc\n", "a\nb1\nb2\nc\n", []TextEdit{
			{Range: lspRange(1, 0, 1, 0), NewText: "b1\nb2\n"},
		}},
		{"append after final newline", "a\n", "a\nb", []TextEdit{
			{Range: lspRange(1, 0, 1, 0), NewText: "b"},
		}},
		{"delete the last line without newline", "a\n😀é", "a\n", []TextEdit{
			// 😀 is two UTF-16 units, é one.
			{Range: lspRange(1, 0, 1, 3), NewText: ""},
		}},
		{"add a final newline", "x\n𝄞𝄞", "x\n𝄞𝄞\n", []TextEdit{
			{Range: lspRange(1, 0, 1, 4), NewText: "𝄞𝄞\n"},
		}},
		{"lone CR counts as a line break", "a\rb\nc\nd\n", "a\rb\nC\nd\n", []TextEdit{
			{Range: lspRange(2, 0, 3, 0), NewText: "C\n"},
		}},
		{"lone CR in a last line without newline", "a\nb\rcd", "a\nz", []TextEdit{
			{Range: lspRange(1, 0, 2, 2), NewText: "z"},
		}},
		{"CRLF", "a\r\nb\r\nc", "a\r\nc", []TextEdit{
			{Range: lspRange(1, 0, 2, 0), NewText: ""},
		}},
		{"into an empty file", "", "x\n", []TextEdit{
			{Range: lspRange(0, 0, 0, 0), NewText: "x\n"},
		}},
		{"two edits", "1\n2\n3\n", "0\n1\n3\n", []TextEdit{
			{Range: lspRange(0, 0, 0, 0), NewText: "0\n"},
			{Range: lspRange(1, 0, 2, 0), NewText: ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Compute("f", tt.old, tt.new)
			got := d.TextEdits()
			if !slices.Equal(got, tt.want) {
				t.Fatalf("TextEdits():\n got %+v\nwant %+v", got, tt.want)
			}
			if applied := applyLSP(t, tt.old, got); applied != tt.new {
				t.Fatalf("applied: %q, want %q", applied, tt.new)
			}
		})
	}
	// A hunk Compute cannot produce: an insertion after a last line without newline goes at the
	// end of the text, as Apply puts it.
	hand := &Diff{Path: "f", Old: "a\rb", New: "a\rb\nc", Hunks: []Hunk{
		{ID: "h1", OldStart: 2, NewStart: 2, NewLines: 2, Added: l("\n", "c")},
	}}
	if got, want := hand.TextEdits(), []TextEdit{{Range: lspRange(1, 1, 1, 1), NewText: "\nc"}}; !slices.Equal(got, want) {
		t.Fatalf("TextEdits(insert after no newline) = %+v, want %+v", got, want)
	}
	if got, _, err := hand.Apply(nil); err != nil || got != hand.New {
		t.Fatalf("Apply(insert after no newline) = %q, %v", got, err)
	}

	d := Compute("f", "1\n2\n3\n", "0\n1\n3\n")
	if got := d.TextEdits(d.Hunks[1].ID, "hunknown"); !slices.Equal(got, []TextEdit{{Range: lspRange(1, 0, 2, 0)}}) {
		t.Fatalf("TextEdits(second) = %+v", got)
	}
}

func lspRange(l1, c1, l2, c2 uint32) Range {
	return Range{Start: Position{Line: l1, Character: c1}, End: Position{Line: l2, Character: c2}}
}
