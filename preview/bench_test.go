package preview

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scatteredEdits returns a file of n distinct lines and a copy with edits changes at distinct
// places: replacements, deletions and insertions of fresh lines. Because no line repeats and the
// inserted lines are new, the minimal diff changes exactly the lines touched, which is minimum.
func scatteredEdits(n, edits int, seed uint64) (old, new string, minimum int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	line := func(kind string, i int) string {
		return fmt.Sprintf("\t%s%05d := compute(%d, \"%x\") // %s\n", kind, i, i*7, i*2654435761, kind)
	}
	at := map[int]bool{}
	for len(at) < edits {
		at[rng.IntN(n/3)*3] = true // multiples of 3, so edits never touch each other
	}
	var ob, nb strings.Builder
	fresh := 0
	fill := func(k int) {
		for range k {
			nb.WriteString(line("added", fresh))
			fresh++
			minimum++
		}
	}
	for i := 0; i < n; i++ {
		l := line("value", i)
		ob.WriteString(l)
		if !at[i] {
			nb.WriteString(l)
			continue
		}
		switch rng.IntN(3) {
		case 0: // replace 1..2 lines by 1..3 fresh lines
			k := 1 + rng.IntN(2)
			for j := 1; j < k; j++ {
				i++
				ob.WriteString(line("value", i))
			}
			minimum += k
			fill(1 + rng.IntN(3))
		case 1: // delete 1..2 lines
			k := 1 + rng.IntN(2)
			for j := 1; j < k; j++ {
				i++
				ob.WriteString(line("value", i))
			}
			minimum += k
		case 2: // insert 1..3 fresh lines before this one
			fill(1 + rng.IntN(3))
			nb.WriteString(l)
		}
	}
	return ob.String(), nb.String(), minimum
}

func TestScatteredEditsMinimal(t *testing.T) {
	old, new, minimum := scatteredEdits(2000, 50, 1)
	if a, b := Lines(old), Lines(new); len(a)+len(b)-2*lcsLen(a, b) != minimum {
		t.Fatalf("generator: minimum %d, LCS says %d", minimum, len(a)+len(b)-2*lcsLen(a, b))
	}
	d := Compute("f", old, new)
	if added, removed := d.Stats(); added+removed != minimum {
		t.Fatalf("%d changed lines, minimum %d", added+removed, minimum)
	}
}

// BenchmarkDiff20k diffs a 20,000-line file with 200 scattered edits, with this package and with
// GNU diff, and reports the changed lines each found next to the minimum.
func BenchmarkDiff20k(b *testing.B) {
	old, new, minimum := scatteredEdits(20000, 200, 20000)

	b.Run("agentd", func(b *testing.B) {
		b.SetBytes(int64(len(old) + len(new)))
		var d *Diff
		for b.Loop() {
			d = Compute("bench.go", old, new)
		}
		added, removed := d.Stats()
		b.ReportMetric(float64(added+removed), "changed-lines")
		b.ReportMetric(float64(minimum), "min-lines")
		b.ReportMetric(float64(len(d.Hunks)), "hunks")
	})

	b.Run("gnu-diff", func(b *testing.B) {
		bin, err := exec.LookPath("diff")
		if err != nil {
			b.Skip("GNU diff not installed")
		}
		dir := b.TempDir()
		oldPath, newPath := filepath.Join(dir, "old"), filepath.Join(dir, "new")
		if err := os.WriteFile(oldPath, []byte(old), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(newPath, []byte(new), 0o644); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(old) + len(new)))
		var out []byte
		for b.Loop() {
			out, err = exec.Command(bin, oldPath, newPath).Output()
			var exit *exec.ExitError
			if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
				b.Fatalf("diff: %v", err)
			}
		}
		changed := 0
		for l := range bytes.Lines(out) {
			if bytes.HasPrefix(l, []byte("< ")) || bytes.HasPrefix(l, []byte("> ")) {
				changed++
			}
		}
		b.ReportMetric(float64(changed), "changed-lines")
		b.ReportMetric(float64(minimum), "min-lines")
	})
}
