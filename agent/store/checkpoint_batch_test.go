package store

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/agentd/agentd/tools"
)

// TestChangeRecorderKeepsAChangeSet: a command's change set (created, modified, deleted files,
// thousands of them) is recorded through the recorder every call gets, with one manifest save
// for the batch, and the turn's revert restores all of it.
func TestChangeRecorderKeepsAChangeSet(t *testing.T) {
	e := newCPEnv(t)
	e.put("mod.txt", "old\n")
	e.put("gone.txt", "bye\n")
	if err := e.cp.Begin("t1"); err != nil {
		t.Fatal(err)
	}
	var rec tools.ChangeRecorder
	mw := e.cp.Middleware()(func(ctx context.Context, _ tools.Tool, _ *tools.Call) (tools.Output, error) {
		rec = tools.ChangeRecorderFrom(ctx)
		return tools.Output{}, nil
	})
	mw(t.Context(), nil, &tools.Call{})
	if rec == nil {
		t.Fatal("the middleware gives no recorder")
	}
	paths := []string{e.abs("mod.txt"), e.abs("gone.txt")}
	for i := range 300 {
		paths = append(paths, e.abs(fmt.Sprintf("new/%04d.txt", i)))
	}
	saves := manifestSaves.Load()
	if err := rec.BeforeChange(paths); err != nil {
		t.Fatal(err)
	}
	if n := manifestSaves.Load() - saves; n != 1 {
		t.Errorf("%d manifest saves for one change set, want 1", n)
	}
	e.put("mod.txt", "new\n")
	os.Remove(e.abs("gone.txt"))
	for _, p := range paths[2:] {
		if err := os.MkdirAll(e.abs("new"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p, []byte("x"), 0o644)
	}
	rec.AfterChange(paths)
	res, err := e.cp.Revert("t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Restored) != len(paths) || !slices.Contains(res.Restored, "gone.txt") {
		t.Errorf("restored %d files, want %d; skipped %v", len(res.Restored), len(paths), res.Skipped)
	}
	if b, _ := os.ReadFile(e.abs("mod.txt")); string(b) != "old\n" {
		t.Errorf("mod.txt = %q", b)
	}
	if _, err := os.Stat(e.abs("new/0000.txt")); !os.IsNotExist(err) {
		t.Errorf("a created file survived the revert: %v", err)
	}
}
