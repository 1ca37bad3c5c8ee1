package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
)

// countingOverlay has no open documents and counts the lookups of each path: every stamp of a
// file (each time a change is planned, and the commit's re-check) asks it once.
type countingOverlay struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *countingOverlay) Document(abs string) (fsafe.Document, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[abs]++
	return fsafe.Document{}, false
}

func (o *countingOverlay) count(abs string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[abs]
}

// An edit is planned once before the gate (Validate's plan serves the Preview), once after it
// (the binding check next to the write), and the commit re-checks the file once.
func TestEditIsPlannedOnceBeforeTheGate(t *testing.T) {
	ov := &countingOverlay{n: map[string]int{}}
	f := newFixture(t, func(c *fixtureConfig) { c.fsOpts.Overlay = ov })
	abs := f.write("a.go", "package a\n\nvar x = 1\n")
	f.read("a.go")
	before := ov.count(abs)
	atGate := -1
	gate := func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		atGate = ov.count(abs) - before
		return agent.GateDecision{Allow: true}, nil
	}
	r := f.run(gate, "edit", edit("a.go", "x = 1", "x = 2"))
	wantType(t, r, tools.OK)
	if atGate != 1 {
		t.Errorf("the edit's file was stamped %d times before the gate, want 1 (validation and preview share one plan)", atGate)
	}
	if n := ov.count(abs) - before; n != 3 {
		t.Errorf("the edit's file was stamped %d times in all, want 3 (before the gate, the binding check, the commit)", n)
	}
}

// What the harness asks of a previewed call's permission — the policy, the checkpoints — names
// the file the preview was computed for, even when the path resolves elsewhere by then; and a
// change that would now land elsewhere writes nothing (stale), so checkpoints always cover the
// file that is written.
func TestPermissionNamesThePreviewedFile(t *testing.T) {
	f := newFixture(t)
	f.write("d/f.go", "package d\n\nvar x = 1\n")
	f.write("e/f.go", "package d\n\nvar x = 1\n")
	f.read("d/f.go")
	f.read("e/f.go")
	previewed := filepath.Join(f.dir, "d", "f.go")
	var atGate, afterSwap []string
	gate := func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		pm := req.Tool.(tools.PermissionMetadata)
		atGate = pm.Permission(req.Call).Paths
		// While the user decides, d becomes a link to e.
		if err := os.Rename(filepath.Join(f.dir, "d"), filepath.Join(f.dir, "d-old")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("e", filepath.Join(f.dir, "d")); err != nil {
			t.Fatal(err)
		}
		afterSwap = pm.Permission(req.Call).Paths
		return agent.GateDecision{Allow: true}, nil
	}
	r := f.run(gate, "edit", edit("d/f.go", "x = 1", "x = 2"))
	if !slices.Equal(atGate, []string{previewed}) || !slices.Equal(afterSwap, []string{previewed}) {
		t.Errorf("permission paths: %v at the gate, %v after the swap; want [%s] both times", atGate, afterSwap, previewed)
	}
	wantType(t, r, tools.Stale)
	if got := f.content("e/f.go"); got != "package d\n\nvar x = 1\n" {
		t.Errorf("e/f.go was written although its change was never previewed: %q", got)
	}
}
