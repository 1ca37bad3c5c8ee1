package fsafe

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestNormalizeRestoreRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		content string
		ending  Ending
		bom     bool
		final   bool
		text    string
	}{
		{"", EndingNone, false, false, ""},
		{"one line", EndingNone, false, false, "one line"},
		{"a\nb\n", EndingLF, false, true, "a\nb\n"},
		{"a\nb", EndingLF, false, false, "a\nb"},
		{"a\r\nb\r\n", EndingCRLF, false, true, "a\nb\n"},
		{"a\r\nb", EndingCRLF, false, false, "a\nb"},
		{"\uFEFFa\r\nb\r\n", EndingCRLF, true, true, "a\nb\n"},
		{"\uFEFF", EndingNone, true, false, ""},
		{"\uFEFFx\n", EndingLF, true, true, "x\n"},
		{"a\r\nb\nc\r\n", EndingMixed, false, true, "a\nb\nc\n"},
		{"a\r\nb\nc", EndingMixed, false, false, "a\nb\nc"},
		{"a\r\r\nb\r\n", EndingCRLF, false, true, "a\r\nb\n"}, // a lone CR is content
		{"old\rmac\r", EndingNone, false, false, "old\rmac\r"},
		{"\r\n", EndingCRLF, false, true, "\n"},
		{"\n\r\n\n", EndingMixed, false, true, "\n\n\n"},
	} {
		text, f := Normalize(tc.content)
		if text != tc.text || f.Ending != tc.ending || f.BOM != tc.bom || f.FinalNewline != tc.final {
			t.Errorf("Normalize(%q) = %q, %v bom=%v final=%v; want %q, %v bom=%v final=%v",
				tc.content, text, f.Ending, f.BOM, f.FinalNewline, tc.text, tc.ending, tc.bom, tc.final)
		}
		if got := f.Restore(text); got != tc.content {
			t.Errorf("Restore(Normalize(%q)) = %q", tc.content, got)
		}
	}
}

func TestRestoreAfterEdits(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		edit          func(string) string
		want          string
	}{
		{"CRLF: added lines get CRLF", "a\r\nb\r\n", func(s string) string { return strings.Replace(s, "b\n", "B\nC\n", 1) }, "a\r\nB\r\nC\r\n"},
		{"BOM kept when the model drops nothing", "\uFEFFx\r\n", func(s string) string { return "y\n" }, "\uFEFFy\r\n"},
		{"no BOM is never added", "x\n", func(s string) string { return "y\n" }, "y\n"},
		{"final newline put back", "a\nb\n", func(s string) string { return "a\nb\nc" }, "a\nb\nc\n"},
		{"missing final newline kept missing", "a\nb", func(s string) string { return "a\nb\nc\n" }, "a\nb\nc"},
		{"CRLF without final newline", "a\r\nb", func(s string) string { return "a\nB\n" }, "a\r\nB"},
		{"empty stays empty", "a\n", func(s string) string { return "" }, ""},
		{"an empty original imposes nothing", "", func(s string) string { return "new\n" }, "new\n"},
		{"mixed: a changed line keeps the ending of the line it replaces",
			"l1\r\nl2\nl3\r\nl4\n", func(s string) string { return strings.Replace(s, "l2", "L2", 1) }, "l1\r\nL2\nl3\r\nl4\n"},
		{"mixed: unchanged lines keep their endings around an insertion",
			"l1\r\nl2\nl3\r\nl4\n", func(s string) string { return strings.Replace(s, "l3\n", "l3\nNEW\n", 1) }, "l1\r\nl2\nl3\r\nNEW\r\nl4\n"},
		{"mixed: deletion",
			"l1\r\nl2\nl3\r\nl4\n", func(s string) string { return strings.Replace(s, "l2\n", "", 1) }, "l1\r\nl3\r\nl4\n"},
		{"mixed: two separate changes",
			"a\nb\r\nc\nd\r\ne\nf\r\n", func(s string) string {
				return strings.NewReplacer("b\n", "B\n", "e\n", "E1\nE2\n").Replace(s)
			}, "a\nB\r\nc\nd\r\nE1\nE2\nf\r\n"},
		{"mixed: lines moved keep their own endings",
			"x\r\ny\nz\r\n", func(s string) string { return "y\nx\nz\n" }, "y\nx\r\nz\r\n"},
		{"mixed: last line without newline gains lines",
			"a\r\nb\nc", func(s string) string { return "a\nb\nc\nd" }, "a\r\nb\nc\nd"},
		{"mixed with BOM and no final newline",
			"\uFEFFa\r\nb\nc", func(s string) string { return strings.Replace(s, "b", "B", 1) }, "\uFEFFa\r\nB\nc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, f := Normalize(tc.content)
			if got := f.Restore(tc.edit(text)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	var zero Format
	if got := zero.Restore("a\nb"); got != "a\nb" {
		t.Errorf("zero Format changed the text: %q", got)
	}
}

// Random mixed files with random line edits: every line the edit kept keeps its ending, and the
// text is exactly the edited text once endings are normalized.
func TestRestoreMixedRandomEdits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 300; iter++ {
		n := 1 + r.IntN(40)
		type line struct {
			text string
			crlf bool
		}
		var orig []line
		for i := range n {
			orig = append(orig, line{fmt.Sprintf("orig-%d", i), r.IntN(2) == 0})
		}
		orig[0].crlf, orig[len(orig)-1].crlf = true, false // make sure it is mixed
		if n == 1 {
			orig = append(orig, line{"orig-last", true})
		}
		var b strings.Builder
		for _, l := range orig {
			b.WriteString(l.text)
			b.WriteString(map[bool]string{true: "\r\n", false: "\n"}[l.crlf])
		}
		text, f := Normalize(b.String())
		if f.Ending != EndingMixed {
			continue
		}
		// Edit: delete, replace or insert lines at random; remember which originals survive.
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		var out []string
		kept := map[string]bool{}
		for i, l := range lines {
			switch r.IntN(6) {
			case 0: // delete
			case 1: // replace
				out = append(out, fmt.Sprintf("new-%d-%d", iter, i))
			case 2: // insert before
				out = append(out, fmt.Sprintf("ins-%d-%d", iter, i), l)
				kept[l] = true
			default:
				out = append(out, l)
				kept[l] = true
			}
		}
		edited := strings.Join(out, "\n") + "\n"
		got := f.Restore(edited)
		if strings.ReplaceAll(got, "\r\n", "\n") != edited {
			t.Fatalf("content changed: %q -> %q", edited, got)
		}
		if !strings.HasSuffix(got, "\n") {
			t.Fatalf("final newline lost: %q", got)
		}
		for _, seg := range strings.SplitAfter(got, "\n") {
			if seg == "" {
				continue
			}
			txt := strings.TrimSuffix(strings.TrimSuffix(seg, "\n"), "\r")
			if !kept[txt] {
				continue
			}
			for _, o := range orig {
				if o.text == txt && o.crlf != strings.HasSuffix(seg, "\r\n") {
					t.Fatalf("iteration %d: kept line %q lost its ending (crlf=%v) in %q", iter, txt, o.crlf, got)
				}
			}
		}
	}
}

func TestRestoreMixedHugeChangeFallsBack(t *testing.T) {
	var b strings.Builder
	for i := range 5000 {
		b.WriteString(fmt.Sprintf("line %d", i))
		if i%2 == 0 {
			b.WriteString("\r\n")
		} else {
			b.WriteString("\n")
		}
	}
	text, f := Normalize(b.String())
	edited := strings.ReplaceAll(text, "line", "LINE") // every line changes: beyond the diff bound
	got := f.Restore(edited)
	if strings.ReplaceAll(got, "\r\n", "\n") != edited {
		t.Fatal("content changed")
	}
	// Paired in order: line i keeps line i's ending.
	if !strings.HasPrefix(got, "LINE 0\r\nLINE 1\nLINE 2\r\n") {
		t.Fatalf("got %q…", got[:40])
	}
}

func TestMyersFindsALongestCommonSubsequence(t *testing.T) {
	a := strings.Split("a b c a b b a", " ")
	b := strings.Split("c b a b a c", " ")
	pairs := myers(a, b, 100)
	if len(pairs) != 4 { // the LCS of ABCABBA and CBABAC has length 4
		t.Fatalf("pairs = %v", pairs)
	}
	for _, p := range pairs {
		if a[p[0]] != b[p[1]] {
			t.Fatalf("pair %v does not match", p)
		}
	}
	if myers(a, b, 2) != nil {
		t.Fatalf("the edit bound was ignored")
	}
}
