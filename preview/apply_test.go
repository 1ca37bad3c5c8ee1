package preview

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// segment is a piece of a file: unchanged when old == new, otherwise one proposed change.
type segment struct{ old, new string }

// fourChanges describes a file as unchanged pieces and four changes: a replacement by more lines,
// a deletion, an insertion and a change of the last line, which has no newline in old.
var fourChanges = []segment{
	{"package main\n\nimport \"fmt\"\n", "package main\n\nimport \"fmt\"\n"},
	{"func a() {}\n", "func a() {\n\tfmt.Println(\"a\")\n}\n"},
	{"\n// b\n", "\n// b\n"},
	{"func b() {}\n// obsolete\n", ""},
	{"\nfunc c() {}\n", "\nfunc c() {}\n"},
	{"", "// inserted ✓ 😀\n"},
	{"\nfunc d() {}\n", "\nfunc d() {}\n"},
	{"// end", "// end\r\n"},
}

// TestApplyEverySubset applies each of the 16 subsets of a four-hunk change and compares with the
// text assembled from the pieces above.
func TestApplyEverySubset(t *testing.T) {
	var old, new strings.Builder
	for _, s := range fourChanges {
		old.WriteString(s.old)
		new.WriteString(s.new)
	}
	d := Compute("main.go", old.String(), new.String())
	if len(d.Hunks) != 4 {
		t.Fatalf("got %d hunks, want 4:\n%s", len(d.Hunks), d.Unified(0))
	}
	wantStarts := []int{4, 7, 11, 13}
	for i, h := range d.Hunks {
		if h.OldStart != wantStarts[i] {
			t.Fatalf("hunk %d starts at old line %d, want %d", i, h.OldStart, wantStarts[i])
		}
	}
	ids := []string{d.Hunks[0].ID, d.Hunks[1].ID, d.Hunks[2].ID, d.Hunks[3].ID}

	for mask := range 16 {
		accepted := []string{}
		var rejected []string
		var want strings.Builder
		k := 0 // index of the next change among the segments
		for _, s := range fourChanges {
			if s.old == s.new {
				want.WriteString(s.old)
				continue
			}
			if mask&(1<<k) != 0 {
				want.WriteString(s.new)
				accepted = append(accepted, ids[k])
			} else {
				want.WriteString(s.old)
				rejected = append(rejected, ids[k])
			}
			k++
		}
		// Pass the IDs in reverse order: the outcome lists them in file order anyway.
		reversed := slices.Clone(accepted)
		slices.Reverse(reversed)
		got, o, err := d.Apply(reversed)
		if err != nil {
			t.Fatalf("subset %04b: %v", mask, err)
		}
		if got != want.String() {
			t.Errorf("subset %04b:\n got %q\nwant %q", mask, got, want.String())
		}
		if !slices.Equal(o.Applied, nilIfEmpty(accepted)) || !slices.Equal(o.Rejected, rejected) {
			t.Errorf("subset %04b: outcome %+v, want applied %v rejected %v", mask, o, accepted, rejected)
		}
		if mask != 0 {
			if edited := applyLSP(t, old.String(), d.TextEdits(accepted...)); edited != want.String() {
				t.Errorf("subset %04b: TextEdits applied %q", mask, edited)
			}
		}
	}
}

func TestApplyDuplicateIDs(t *testing.T) {
	d := Compute("f", "a\nb\nc\n", "A\nb\nC\n")
	got, o, err := d.Apply([]string{d.Hunks[1].ID, d.Hunks[1].ID})
	if err != nil || got != "a\nb\nC\n" || !slices.Equal(o.Applied, []string{d.Hunks[1].ID}) {
		t.Fatalf("Apply(dup) = %q, %+v, %v", got, o, err)
	}
}

func TestDescribe(t *testing.T) {
	old := "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n"
	new := "l1\nA\nB\nC\nl3\nl4\nl6\nl7\nl8\nl9 but this line is rather long, longer than forty characters\nl10\nend\n"
	d := Compute("main.go", old, new)
	if len(d.Hunks) != 4 {
		t.Fatalf("got %d hunks, want 4:\n%s", len(d.Hunks), d.Unified(0))
	}
	h := func(i int) string { return d.Hunks[i].ID }
	tests := []struct {
		accepted []string
		want     string
	}{
		{nil, fmt.Sprintf("applied 4 of 4 hunks to main.go: %s (lines 2–4), %s (removed 1 line before line 7), "+
			"%s (line 10), %s (line 12) — the file now contains all proposed changes", h(0), h(1), h(2), h(3))},
		{[]string{}, fmt.Sprintf("applied 0 of 4 hunks to main.go; rejected: %s (line 2: -l2 / +A (+2 more lines)), "+
			"%s (line 5: -l5), %s (line 9: -l9 / +l9 but this line is rather long, longer…), %s (at end of file: +end) "+
			"— the file is unchanged", h(0), h(1), h(2), h(3))},
		// Applying the first hunk moves the later ones down by two lines.
		{[]string{h(0), h(3)}, fmt.Sprintf("applied 2 of 4 hunks to main.go: %s (lines 2–4), %s (line 13); "+
			"rejected: %s (line 7: -l5), %s (line 11: -l9 / +l9 but this line is rather long, longer…) "+
			"— the file now contains only the applied changes", h(0), h(3), h(1), h(2))},
		{[]string{h(1)}, fmt.Sprintf("applied 1 of 4 hunks to main.go: %s (removed 1 line before line 5); "+
			"rejected: %s (line 2: -l2 / +A (+2 more lines)), %s (line 8: -l9 / +l9 but this line is rather long, longer…), "+
			"%s (at end of file: +end) — the file now contains only the applied changes", h(1), h(0), h(2), h(3))},
	}
	for _, tt := range tests {
		_, o, err := d.Apply(tt.accepted)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.Describe(d); got != tt.want {
			t.Errorf("Describe after Apply(%v):\n got %s\nwant %s", tt.accepted, got, tt.want)
		}
	}
	created := ComputeFile("new.go", "", false, "package x\n")
	_, o, _ := created.Apply([]string{})
	if got, want := o.Describe(created), "applied 0 of 1 hunk to new.go; rejected: "+created.Hunks[0].ID+
		" (at end of file: +package x) — the file was not created"; got != want {
		t.Errorf("Describe(created, none):\n got %s\nwant %s", got, want)
	}
	deleted := Compute("old.go", "a\nb\n", "")
	deleted.Deleted = true
	_, o, _ = deleted.Apply(nil)
	if got, want := o.Describe(deleted), "applied 1 of 1 hunk to old.go: "+deleted.Hunks[0].ID+
		" (removed 2 lines at end of file) — the file was deleted"; got != want {
		t.Errorf("Describe(deleted, all):\n got %s\nwant %s", got, want)
	}
	if got := (Outcome{}).Describe(Compute("x.go", "a\n", "a\n")); got != "no changes to x.go" {
		t.Errorf("Describe(no hunks) = %q", got)
	}
}

func TestStatsAndSummary(t *testing.T) {
	d := Compute("main.go", "a\nb\nc\nd\n", "A\nB\nX\nc\n")
	if added, removed := d.Stats(); added != 3 || removed != 3 {
		t.Errorf("Stats() = +%d -%d, want +3 -3", added, removed)
	}
	if got, want := d.Summary(), "main.go: 2 hunks, +3 −3"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	if got, want := ComputeFile("n.txt", "", false, "x\ny").Summary(), "n.txt (new file): 1 hunk, +2 −0"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	del := Compute("o.txt", "x\n", "")
	del.Deleted = true
	if got, want := del.Summary(), "o.txt (deleted): 1 hunk, +0 −1"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	if got, want := Compute("same.txt", "x", "x").Summary(), "same.txt: no changes"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
}
