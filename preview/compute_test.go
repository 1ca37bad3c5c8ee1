package preview

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// withoutIDs returns a copy of hs with the IDs cleared, for comparing hunks built by hand.
func withoutIDs(hs []Hunk) []Hunk {
	out := make([]Hunk, len(hs))
	for i, h := range hs {
		h.ID = ""
		out[i] = h
	}
	return out
}

func l(s ...string) []string { return s }

func TestComputeEdgeCases(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []Hunk
	}{
		{"both empty", "", "", nil},
		{"identical", "a\nb\n", "a\nb\n", nil},
		{"identical without final newline", "a\nb", "a\nb", nil},
		{"empty to text", "", "a\nb\n", []Hunk{
			{OldStart: 1, OldLines: 0, NewStart: 1, NewLines: 2, Added: l("a\n", "b\n")},
		}},
		{"text to empty", "a\nb\n", "", []Hunk{
			{OldStart: 1, OldLines: 2, NewStart: 1, NewLines: 0, Removed: l("a\n", "b\n")},
		}},
		{"empty to text without newline", "", "x", []Hunk{
			{OldStart: 1, NewStart: 1, NewLines: 1, Added: l("x")},
		}},
		{"text without newline to empty", "x", "", []Hunk{
			{OldStart: 1, OldLines: 1, NewStart: 1, Removed: l("x")},
		}},
		{"final newline added", "a\nb", "a\nb\n", []Hunk{
			{OldStart: 2, OldLines: 1, NewStart: 2, NewLines: 1, Removed: l("b"), Added: l("b\n")},
		}},
		{"final newline removed", "a\nb\n", "a\nb", []Hunk{
			{OldStart: 2, OldLines: 1, NewStart: 2, NewLines: 1, Removed: l("b\n"), Added: l("b")},
		}},
		{"no final newline on either side", "a\nb", "a\nc", []Hunk{
			{OldStart: 2, OldLines: 1, NewStart: 2, NewLines: 1, Removed: l("b"), Added: l("c")},
		}},
		{"append after a last line without newline", "a", "a\nb", []Hunk{
			{OldStart: 1, OldLines: 1, NewStart: 1, NewLines: 2, Removed: l("a"), Added: l("a\n", "b")},
		}},
		{"CRLF", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n", []Hunk{
			{OldStart: 2, OldLines: 1, NewStart: 2, NewLines: 1, Removed: l("b\r\n"), Added: l("B\r\n")},
		}},
		{"LF to CRLF on one line only", "a\nb\nc\n", "a\nb\r\nc\n", []Hunk{
			{OldStart: 2, OldLines: 1, NewStart: 2, NewLines: 1, Removed: l("b\n"), Added: l("b\r\n")},
		}},
		{"mixed endings kept", "a\r\nb\nc\r\nd\n", "a\r\nb\nX\r\nd\n", []Hunk{
			{OldStart: 3, OldLines: 1, NewStart: 3, NewLines: 1, Removed: l("c\r\n"), Added: l("X\r\n")},
		}},
		{"CRLF file without final newline", "a\r\nb", "a\r\nb\r\n", []Hunk{
			{OldStart: 2, OldLines: 1, NewStart: 2, NewLines: 1, Removed: l("b"), Added: l("b\r\n")},
		}},
		{"lone CR is not a line break", "a\rb\nc\n", "a\rB\nc\n", []Hunk{
			{OldStart: 1, OldLines: 1, NewStart: 1, NewLines: 1, Removed: l("a\rb\n"), Added: l("a\rB\n")},
		}},
		{"unicode", "héllo\n😀 smile\n日本\n", "héllo\n😃 smile\n日本\n", []Hunk{
			{OldStart: 2, OldLines: 1, NewStart: 2, NewLines: 1, Removed: l("😀 smile\n"), Added: l("😃 smile\n")},
		}},
		{"insertion in the middle", "a\nc\n", "a\nb\nc\n", []Hunk{
			{OldStart: 2, OldLines: 0, NewStart: 2, NewLines: 1, Added: l("b\n")},
		}},
		{"deletion at the top", "a\nb\nc\n", "b\nc\n", []Hunk{
			{OldStart: 1, OldLines: 1, NewStart: 1, NewLines: 0, Removed: l("a\n")},
		}},
		{"append at the end", "a\n", "a\nb\n", []Hunk{
			{OldStart: 2, OldLines: 0, NewStart: 2, NewLines: 1, Added: l("b\n")},
		}},
		{"blank lines", "\n", "\n\n", []Hunk{
			{OldStart: 2, OldLines: 0, NewStart: 2, NewLines: 1, Added: l("\n")},
		}},
		{"two hunks, context not merged", "a\nb\nc\nd\ne\n", "A\nb\nc\nd\nE\n", []Hunk{
			{OldStart: 1, OldLines: 1, NewStart: 1, NewLines: 1, Removed: l("a\n"), Added: l("A\n")},
			{OldStart: 5, OldLines: 1, NewStart: 5, NewLines: 1, Removed: l("e\n"), Added: l("E\n")},
		}},
		{"replace by more lines then delete", "1\n2\n3\n4\n5\n", "1\nx\ny\nz\n3\n5\n", []Hunk{
			{OldStart: 2, OldLines: 1, NewStart: 2, NewLines: 3, Removed: l("2\n"), Added: l("x\n", "y\n", "z\n")},
			{OldStart: 4, OldLines: 1, NewStart: 6, NewLines: 0, Removed: l("4\n")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Compute("f.txt", tt.old, tt.new)
			if got := withoutIDs(d.Hunks); !reflect.DeepEqual(got, withoutIDs(tt.want)) {
				t.Fatalf("Compute(%q, %q) hunks:\n got %+v\nwant %+v", tt.old, tt.new, got, tt.want)
			}
			if d.Path != "f.txt" || d.Old != tt.old || d.New != tt.new || d.Created || d.Deleted {
				t.Errorf("Compute fields: %+v", d)
			}
			for _, h := range d.Hunks {
				if !strings.HasPrefix(h.ID, "h") || len(h.ID) != 9 {
					t.Errorf("hunk ID %q: want h + 8 hex digits", h.ID)
				}
			}
		})
	}
}

func TestComputeFile(t *testing.T) {
	d := ComputeFile("new.go", "ignored", false, "package x\n")
	want := &Diff{Path: "new.go", Old: "", New: "package x\n", Created: true, Hunks: []Hunk{
		{OldStart: 1, NewStart: 1, NewLines: 1, Added: l("package x\n")},
	}}
	d.Hunks = withoutIDs(d.Hunks)
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("ComputeFile(new) = %+v\nwant %+v", d, want)
	}

	d = ComputeFile("old.go", "a\n", true, "b\n")
	if d.Created || d.Old != "a\n" || len(d.Hunks) != 1 {
		t.Fatalf("ComputeFile(existing) = %+v", d)
	}
}

func TestLines(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", l("a")},
		{"\n", l("\n")},
		{"a\nb", l("a\n", "b")},
		{"a\r\nb\r\n", l("a\r\n", "b\r\n")},
		{"a\rb\n\n", l("a\rb\n", "\n")},
	}
	for _, tt := range tests {
		if got := Lines(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Lines(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestMinimalKnown diffs texts of distinct lines where new deletes, inserts and replaces known
// lines: since no line is repeated and inserted lines are fresh, the minimal diff changes exactly
// those lines.
func TestMinimalKnown(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var old, new strings.Builder
	removed, added := 0, 0
	fresh := 0
	for i := range 3000 {
		line := fmt.Sprintf("line %d of the original\n", i)
		old.WriteString(line)
		switch rng.IntN(40) {
		case 0: // delete
			removed++
		case 1: // replace by 1..3 fresh lines
			removed++
			for range 1 + rng.IntN(3) {
				fmt.Fprintf(&new, "fresh %d\n", fresh)
				fresh++
				added++
			}
		case 2: // insert before
			fmt.Fprintf(&new, "fresh %d\n", fresh)
			fresh++
			added++
			new.WriteString(line)
		default:
			new.WriteString(line)
		}
	}
	d := Compute("f", old.String(), new.String())
	gotAdded, gotRemoved := d.Stats()
	if gotAdded != added || gotRemoved != removed {
		t.Fatalf("Stats() = +%d -%d, want the minimal +%d -%d", gotAdded, gotRemoved, added, removed)
	}
	if got, _, _ := d.Apply(nil); got != new.String() {
		t.Fatal("Apply(nil) != new")
	}
}

// lcsLen is the textbook dynamic program for the longest common subsequence of two line lists.
func lcsLen(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// TestMinimalAgainstLCS compares the number of changed lines with len(a)+len(b)-2*LCS on small
// random texts drawn from very few distinct lines, where many alignments compete.
func TestMinimalAgainstLCS(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	pool := l("a\n", "b\n", "c\n", "}\n", "\n", "a\r\n")
	gen := func() string {
		var sb strings.Builder
		for range rng.IntN(60) {
			sb.WriteString(pool[rng.IntN(len(pool))])
		}
		return sb.String()
	}
	// Diff-match-patch's "half match" shortcut gives a non-minimal diff of these (one line per
	// letter); Compute must not take it.
	perLine := func(s string) string { return strings.Join(strings.Split(s, ""), "\n") + "\n" }
	fixed := [][2]string{
		{perLine("cccccbc"), perLine("adacccccd")},
		{perLine("aadbcdcdcabadcbcaa"), perLine("cdccdbdcc")},
		{perLine("acbcdbcdaaaabdd"), perLine("cdbcbcbdabbbacbccca")},
	}
	for i := range 300 + len(fixed) {
		old, new := gen(), gen()
		if i >= 300 {
			old, new = fixed[i-300][0], fixed[i-300][1]
		}
		d := Compute("f", old, new)
		added, removed := d.Stats()
		a, b := Lines(old), Lines(new)
		if want := len(a) + len(b) - 2*lcsLen(a, b); added+removed != want {
			t.Fatalf("case %d: %d changed lines, minimal is %d\nold %q\nnew %q", i, added+removed, want, old, new)
		}
		checkHunks(t, d)
	}
}

// TestDeadline gives the search almost no time on inputs that need a long one: it must stop early
// and the diff must still be correct.
func TestDeadline(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func() string {
		var sb strings.Builder
		for range 60000 {
			sb.WriteString([]string{"x\n", "y\n", "z\n", "w\n"}[rng.IntN(4)])
		}
		return sb.String()
	}
	old, new := gen(), gen()
	start := time.Now()
	d := Differ{Timeout: time.Millisecond}.Compute("f", old, new)
	elapsed := time.Since(start)
	if got, _, err := d.Apply(nil); err != nil || got != new {
		t.Fatalf("Apply(nil) after the deadline: err %v, equal %v", err, got == new)
	}
	checkHunks(t, d)
	// Without the deadline this takes about 10 s (more under -race); with it, a few
	// linear passes.
	if elapsed > 5*time.Second {
		t.Errorf("Compute with a 1ms timeout took %v", elapsed)
	}
}

// checkHunks checks the invariants of d's hunks against its texts: in order, separated by at
// least one unchanged line, with Removed and Added equal to the lines at OldStart and NewStart,
// and unique IDs.
func checkHunks(t *testing.T, d *Diff) {
	t.Helper()
	a, b := Lines(d.Old), Lines(d.New)
	ids := map[string]bool{}
	prevOld, prevNew := -1, -1 // 0-based end of the previous hunk
	for i, h := range d.Hunks {
		if ids[h.ID] {
			t.Fatalf("hunk %d: duplicate ID %s", i, h.ID)
		}
		ids[h.ID] = true
		if h.OldLines == 0 && h.NewLines == 0 {
			t.Fatalf("hunk %d is empty", i)
		}
		s, ns := h.OldStart-1, h.NewStart-1
		if prevOld >= 0 && (s <= prevOld || ns <= prevNew || s-prevOld != ns-prevNew) {
			t.Fatalf("hunk %d at old %d new %d does not follow the previous one (ends %d, %d) after equal lines", i, h.OldStart, h.NewStart, prevOld, prevNew)
		}
		if len(h.Removed) != h.OldLines || len(h.Added) != h.NewLines {
			t.Fatalf("hunk %d: line counts %d/%d, slices %d/%d", i, h.OldLines, h.NewLines, len(h.Removed), len(h.Added))
		}
		if !reflect.DeepEqual(h.Removed, nilIfEmpty(a[s:s+h.OldLines])) || !reflect.DeepEqual(h.Added, nilIfEmpty(b[ns:ns+h.NewLines])) {
			t.Fatalf("hunk %d: lines differ from the texts", i)
		}
		prevOld, prevNew = s+h.OldLines, ns+h.NewLines
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestStableIDs(t *testing.T) {
	var old, new strings.Builder
	for i := range 200 {
		old.WriteString("same\n")
		if i%2 == 0 {
			new.WriteString("same\n")
		} else {
			new.WriteString("changed\n") // 100 hunks with identical content
		}
	}
	d1 := Compute("f", old.String(), new.String())
	d2 := Compute("f", old.String(), new.String())
	if len(d1.Hunks) != 100 {
		t.Fatalf("got %d hunks, want 100", len(d1.Hunks))
	}
	ids := map[string]bool{}
	for i := range d1.Hunks {
		if d1.Hunks[i].ID != d2.Hunks[i].ID {
			t.Fatalf("hunk %d: ID %s then %s", i, d1.Hunks[i].ID, d2.Hunks[i].ID)
		}
		if ids[d1.Hunks[i].ID] {
			t.Fatalf("hunk %d: duplicate ID %s", i, d1.Hunks[i].ID)
		}
		ids[d1.Hunks[i].ID] = true
	}

	// The ID depends on the hunk's position and lines, not on the rest of the file.
	base := Compute("f", "a\nb\nc\n", "a\nB\nc\n").Hunks[0].ID
	if got := Compute("f", "a\nb\nc\nd\n", "a\nB\nc\nD\n").Hunks[0].ID; got != base {
		t.Fatalf("same hunk after an edit further down: ID %s, want %s", got, base)
	}
	if got := Compute("f", "z\na\nb\nc\n", "z\na\nB\nc\n").Hunks[0].ID; got == base {
		t.Fatalf("same content at another line: same ID %s", got)
	}
}

// TestIDCollision feeds assignIDs hunks that hash alike, which Compute never produces, to check
// that IDs stay unique anyway.
func TestIDCollision(t *testing.T) {
	h := Hunk{OldStart: 3, OldLines: 1, NewStart: 3, NewLines: 1, Removed: l("a\n"), Added: l("b\n")}
	hs := []Hunk{h, h, h}
	assignIDs(hs)
	if hs[0].ID == hs[1].ID || hs[1].ID == hs[2].ID || hs[0].ID == hs[2].ID {
		t.Fatalf("IDs not unique: %s %s %s", hs[0].ID, hs[1].ID, hs[2].ID)
	}
	if !strings.HasPrefix(hs[1].ID, hs[0].ID) {
		t.Errorf("second ID %s does not lengthen %s", hs[1].ID, hs[0].ID)
	}
}

func TestApplyUnknownID(t *testing.T) {
	d := Compute("f.go", "a\nb\n", "A\nb\n")
	content, o, err := d.Apply([]string{d.Hunks[0].ID, "hdeadbeef"})
	if !errors.Is(err, ErrUnknownHunk) {
		t.Fatalf("Apply(unknown) error = %v, want ErrUnknownHunk", err)
	}
	if !strings.Contains(err.Error(), `"hdeadbeef"`) {
		t.Errorf("error %q does not name the ID", err)
	}
	if content != "" || o.Applied != nil || o.Rejected != nil {
		t.Errorf("Apply(unknown) = %q, %+v; want nothing", content, o)
	}
}

// TestHunksAlignLikeGit: where an insertion or a deletion could sit in several places (the lines
// around it repeat its own), it is where `git diff` puts it — an inserted function after another
// one starts with its own first line, not with the other's closing brace (which then read as an
// unchanged line ending the insertion). Checked against git itself, -U0, hunk by hunk.
func TestHunksAlignLikeGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is needed (apt-get install git)")
	}
	fn := func(name, body string) string { return "func " + name + "() {\n\t" + body + "\n}\n" }
	cases := []struct{ name, old, new string }{
		{"a function inserted after another, an earlier line changed",
			fn("f", "x") + "\n" + fn("h", "w") + "\n" + fn("k", "v"),
			fn("f", "X") + "\n" + fn("h", "w") + "\n" + fn("g", "y") + "\n" + fn("k", "v")},
		{"a function deleted between two others, an earlier line changed",
			fn("f", "x") + "\n" + fn("h", "w") + "\n" + fn("g", "y") + "\n" + fn("k", "v"),
			fn("f", "X") + "\n" + fn("h", "w") + "\n" + fn("k", "v")},
		{"functions without blank lines between them",
			fn("f", "x") + fn("h", "w") + fn("k", "v"),
			fn("f", "X") + fn("h", "w") + fn("g", "y") + fn("k", "v")},
		{"appended at the end",
			fn("f", "x") + "\n" + fn("h", "w"),
			fn("f", "X") + "\n" + fn("h", "w") + "\n" + fn("g", "y")},
		{"a replacement next to repeated lines", fn("f", "x") + "\n" + fn("h", "w"), fn("f", "X") + "}\n\n" + fn("g", "y") + "\n" + fn("h", "w")},
	}
	dir := t.TempDir()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			if err := os.WriteFile(a, []byte(tc.old), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(b, []byte(tc.new), 0o644); err != nil {
				t.Fatal(err)
			}
			out, _ := exec.Command(git, "diff", "--no-index", "--no-color", "-U0", a, b).Output()
			var want []string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "@@") {
					want = append(want, line[:strings.LastIndex(line, "@@")+2])
				}
			}
			var got []string
			for _, h := range Compute("x", tc.old, tc.new).Hunks {
				got = append(got, fmt.Sprintf("@@ -%s +%s @@", gitSpan(h.OldStart, h.OldLines), gitSpan(h.NewStart, h.NewLines)))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("hunks %q, git diff -U0 says %q", got, want)
			}
		})
	}
}

// gitSpan is a hunk range as git's -U0 header writes it.
func gitSpan(start, n int) string {
	switch {
	case n == 0:
		return fmt.Sprintf("%d,0", start-1)
	case n == 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
