package preview

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// DefaultTimeout is how long Compute searches for a minimal diff. Past it the search settles for
// a correct diff that may change more lines than necessary.
const DefaultTimeout = time.Second

// Differ computes diffs with a time budget. The zero value is ready to use.
type Differ struct {
	// Timeout bounds the search for a minimal diff (the work after it is linear). Zero means
	// DefaultTimeout; a negative value means no limit.
	Timeout time.Duration
}

// Compute returns the minimal line diff from old to new for the file at path, with
// Differ{}.Compute. Created and Deleted are left false: see ComputeFile.
func Compute(path, old, new string) *Diff {
	return Differ{}.Compute(path, old, new)
}

// ComputeFile is Compute for a file that may not exist yet: when oldExists is false, Created is
// set and old is ignored (treated as ""). For a change that deletes the file, call Compute with
// new == "" and set Deleted on the result.
func ComputeFile(path string, old string, oldExists bool, new string) *Diff {
	return Differ{}.ComputeFile(path, old, oldExists, new)
}

// ComputeFile is like the package function ComputeFile, with df's time budget.
func (df Differ) ComputeFile(path string, old string, oldExists bool, new string) *Diff {
	if !oldExists {
		old = ""
	}
	d := df.Compute(path, old, new)
	d.Created = !oldExists
	return d
}

// Compute returns the line diff from old to new (see Lines for what a line is: a line whose
// terminator changed is a changed line). Each hunk is a maximal run of removed and added lines
// with no unchanged line inside. The number of changed lines is minimal unless df.Timeout ran
// out (or the texts share more than a million distinct lines); the diff is correct either way.
func (df Differ) Compute(path, old, new string) *Diff {
	d := &Diff{Path: path, Old: old, New: new}
	if old == new {
		return d
	}
	a, b := Lines(old), Lines(new)
	for _, c := range slideDown(a, b, df.changes(a, b)) {
		d.Hunks = append(d.Hunks, Hunk{
			OldStart: c.a + 1, OldLines: c.na,
			NewStart: c.b + 1, NewLines: c.nb,
			Removed: part(a, c.a, c.na),
			Added:   part(b, c.b, c.nb),
		})
	}
	assignIDs(d.Hunks)
	return d
}

// slideDown moves every pure insertion and pure deletion as far down as it can go, as git diff
// shows them. Where the inserted lines repeat the lines around them the place of an insertion is
// a choice: trimming the common suffix put it as high as possible, so an inserted function after
// another one started with the other's closing "}" and ended before the real one (which then read
// as part of the insertion). One slide moves the group down by a line when its first line equals
// the unchanged line after it; a group stops before it would touch the next change. Replacements
// stay where they are (git does not move them either).
func slideDown(a, b []string, cs []change) []change {
	for i := range cs {
		c := &cs[i]
		if c.na > 0 && c.nb > 0 {
			continue
		}
		nextA := len(a) // where the next change starts on the old side
		if i+1 < len(cs) {
			nextA = cs[i+1].a
		}
		for {
			after := nextA - (c.a + c.na) // unchanged lines between this change and the next
			if after == 0 || (after == 1 && i+1 < len(cs)) {
				break
			}
			if c.nb > 0 { // an insertion: b[c.b] moves below the line that follows it
				if b[c.b] != b[c.b+c.nb] {
					break
				}
			} else if a[c.a] != a[c.a+c.na] { // a deletion, likewise on the old side
				break
			}
			c.a++
			c.b++
		}
	}
	return cs
}

// part returns lines[i:i+n], nil when n is 0, with no room to append into lines.
func part(lines []string, i, n int) []string {
	if n == 0 {
		return nil
	}
	return lines[i : i+n : i+n]
}

// change is a run of changed lines: a[a:a+na] is replaced by b[b:b+nb] (0-based).
type change struct{ a, na, b, nb int }

// maxTokens is how many distinct lines the rune encoding can tell apart: the valid code points
// except the surrogates.
const maxTokens = utf8.MaxRune + 1 - (0xE000 - 0xD800)

// changes returns the changed runs between a and b in order.
//
// The common prefix and suffix are trimmed; the middle lines become runes (one rune per line) and
// go to diff-match-patch's Myers bisection with a deadline. DiffTimeout stays 0 so that the
// library skips its "half match" shortcut, which can return non-minimal diffs; the deadline is
// passed explicitly. Lines found on one side only cannot match anything, so all of them share one
// rune per side: only lines present on both sides need distinct runes.
func (df Differ) changes(a, b []string) []change {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	am, bm := a[p:len(a)-s], b[p:len(b)-s]
	whole := []change{{a: p, na: len(am), b: p, nb: len(bm)}}
	if len(am) == 0 && len(bm) == 0 {
		return nil
	}
	if len(am) == 0 || len(bm) == 0 || len(am)+len(bm) == 2 {
		// Nothing to align; a 1×1 middle differs (the prefix would have taken it), and it is
		// also the one size DiffBisect cannot take.
		return whole
	}

	ra, rb, ok := tokenize(am, bm)
	if !ok {
		return whole // more distinct shared lines than runes: correct, not minimal
	}
	timeout := df.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0
	diffs := dmp.DiffBisect(string(ra), string(rb), deadline)

	var out []change
	i, j := 0, 0 // positions in am, bm
	cur := change{a: -1}
	flush := func() {
		if cur.a >= 0 {
			out = append(out, change{a: p + cur.a, na: cur.na, b: p + cur.b, nb: cur.nb})
			cur = change{a: -1}
		}
	}
	for _, x := range diffs {
		n := utf8.RuneCountInString(x.Text) // one rune per line
		switch {
		case n == 0:
		case x.Type == diffmatchpatch.DiffEqual:
			flush()
			i += n
			j += n
		default:
			if cur.a < 0 {
				cur = change{a: i, b: j}
			}
			if x.Type == diffmatchpatch.DiffDelete {
				cur.na += n
				i += n
			} else {
				cur.nb += n
				j += n
			}
		}
	}
	flush()
	if i != len(am) || j != len(bm) {
		// The script does not cover both texts; never seen, but a whole replacement is correct.
		return whole
	}
	return out
}

// tokenize encodes each line of am and bm as one rune such that two lines get the same rune
// exactly when they are equal or both absent from the other side. ok is false when there are
// more distinct shared lines than runes.
func tokenize(am, bm []string) (ra, rb []rune, ok bool) {
	const onlyA, onlyB = 0, 1
	ids := make(map[string]int32, len(am))
	ida := make([]int32, len(am))
	for k, l := range am {
		id, seen := ids[l]
		if !seen {
			id = int32(len(ids))
			ids[l] = id
		}
		ida[k] = id
	}
	// code[id] is the rune of line id: 0 until it is seen in bm.
	code := make([]rune, len(ids))
	next := 2
	rb = make([]rune, len(bm))
	for k, l := range bm {
		id, seen := ids[l]
		if !seen {
			rb[k] = onlyB
			continue
		}
		if code[id] == 0 {
			if next >= maxTokens {
				return nil, nil, false
			}
			r := rune(next)
			if r >= 0xD800 {
				r += 0xE000 - 0xD800 // skip the surrogates: they do not survive string(runes)
			}
			code[id] = r
			next++
		}
		rb[k] = code[id]
	}
	ra = make([]rune, len(am))
	for k, id := range ida {
		if c := code[id]; c != 0 {
			ra[k] = c
		} else {
			ra[k] = onlyA
		}
	}
	return ra, rb, true
}

// assignIDs gives each hunk an ID derived from its OldStart and its lines: "h" and 8 hex digits
// of a SHA-256, lengthened in the unlikely case that an earlier hunk of the same diff has it.
func assignIDs(hs []Hunk) {
	seen := make(map[string]bool, len(hs))
	for i := range hs {
		sum := hunkHash(&hs[i])
		digits := hex.EncodeToString(sum[:])
		id := ""
		for n := 8; n <= len(digits); n += 4 {
			if c := "h" + digits[:n]; !seen[c] {
				id = c
				break
			}
		}
		if id == "" {
			id = "h" + digits + "-" + strconv.Itoa(i) // a SHA-256 collision: still unique
		}
		seen[id] = true
		hs[i].ID = id
	}
}

func hunkHash(h *Hunk) [sha256.Size]byte {
	hash := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	num := func(n int) { hash.Write(binary.AppendUvarint(buf[:0], uint64(n))) }
	num(h.OldStart)
	for _, side := range [][]string{h.Removed, h.Added} {
		num(len(side))
		for _, l := range side {
			num(len(l))
			io.WriteString(hash, l)
		}
	}
	var sum [sha256.Size]byte
	hash.Sum(sum[:0])
	return sum
}
