package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
)

func sumOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TurnFiles gives each file's pre-image and recognizes the turn's version; Settle records an
// undo, and once every file is back the turn counts as reverted.
func TestTurnFilesAndSettle(t *testing.T) {
	e := newCPEnv(t)
	e.put("a.txt", "one\n")
	e.begin("t1")
	e.write("a.txt", "one\ntwo\n")
	e.write("b.txt", "new\n")

	info, files, err := e.cp.TurnFiles("t1")
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != "t1" || len(files) != 2 || files[0].Rel != "a.txt" || files[1].Rel != "b.txt" {
		t.Fatalf("TurnFiles = %+v %+v", info, files)
	}
	a, b := files[0], files[1]
	if !a.PreExists || string(a.Pre) != "one\n" || b.PreExists || b.Pre != nil || a.Untouched() {
		t.Errorf("pre-images: a %+v, b %+v", a, b)
	}
	if ok, _ := a.AsLeft(true, sumOf("one\ntwo\n")); !ok {
		t.Error("a.txt as the turn left it is not recognized")
	}
	if ok, reason := a.AsLeft(true, sumOf("one\ntwo\nmine\n")); ok || reason != ReasonChanged {
		t.Errorf("a.txt changed since: %v %q", ok, reason)
	}
	if ok, reason := b.AsLeft(false, ""); ok || reason != ReasonChanged {
		t.Errorf("b.txt deleted since: %v %q", ok, reason)
	}
	if _, _, err := e.cp.TurnFiles("t9"); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("unknown turn: %v", err)
	}

	// Undo part of a.txt: the new state is what the turn left.
	e.put("a.txt", "one\ntwo (kept)\n")
	if err := e.cp.Settle("t1", e.abs("a.txt"), []string{"a.txt"}); err != nil {
		t.Fatal(err)
	}
	_, files, _ = e.cp.TurnFiles("t1")
	if ok, _ := files[0].AsLeft(true, sumOf("one\ntwo (kept)\n")); !ok {
		t.Error("after Settle, the file's new state is not the turn's")
	}
	// Undo both files: the turn is reverted, and still listed.
	e.put("a.txt", "one\n")
	if err := e.cp.Remove(e.abs("b.txt")); err != nil {
		t.Fatal(err)
	}
	e.wantAbsent("b.txt")
	for _, f := range []string{"a.txt", "b.txt"} {
		if err := e.cp.Settle("t1", e.abs(f), []string{f}); err != nil {
			t.Fatal(err)
		}
	}
	turns, err := e.cp.Turns()
	if err != nil || len(turns) != 1 || turns[0].Reverted == nil {
		t.Fatalf("Turns after undoing every file = %+v, %v", turns, err)
	}
	if _, err := e.cp.Revert("t1"); !errors.Is(err, ErrAlreadyReverted) {
		t.Errorf("Revert after undoing every file: %v", err)
	}
	_, files, _ = e.cp.TurnFiles("t1")
	if !files[0].Untouched() || !files[1].Untouched() {
		t.Errorf("undone files should have nothing to show: %+v", files)
	}
}
