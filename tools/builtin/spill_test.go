package builtin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/sandbox"
)

// emptyDir fails the test when dir holds anything.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("agentd wrote %s through a symbolic link", filepath.Join(dir, e.Name()))
	}
}

func TestBashSpillCreatesItsDirectory(t *testing.T) {
	spill := filepath.Join(t.TempDir(), "spill") // missing, as in a fresh session
	f := newFixture(t, withBash(func(b *builtin.BashConfig) {
		b.HeadBytes, b.TailBytes, b.SpillDir = 1000, 1000, spill
	}))
	r := f.mustOK("bash", bash("seq 1 20000"))
	if filepath.Dir(r.Meta.SpillPath) != spill {
		t.Fatalf("spill path %q, want a file in %s: %s", r.Meta.SpillPath, spill, r.Text())
	}
	b, err := os.ReadFile(r.Meta.SpillPath)
	if err != nil || !strings.HasSuffix(string(b), "\n20000\n") || r.Meta.OriginalSize != int64(len(b)) {
		t.Errorf("spill file: %d bytes (%v), output %d bytes", len(b), err, r.Meta.OriginalSize)
	}
	if fi, err := os.Stat(spill); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("spill dir: %v %v", fi, err)
	}
}

func TestBashSpillNeverFollowsALink(t *testing.T) {
	for _, c := range []struct{ name, target string }{
		{"dir", "outside"}, {"dangling", "outside/missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp, outside := t.TempDir(), t.TempDir()
			spill := filepath.Join(tmp, "spill")
			target := filepath.Join(outside, strings.TrimPrefix(c.target, "outside"))
			if err := os.Symlink(target, spill); err != nil {
				t.Fatal(err)
			}
			f := newFixture(t, withBash(func(b *builtin.BashConfig) {
				b.HeadBytes, b.TailBytes, b.SpillDir = 1000, 1000, spill
			}))
			r := f.mustOK("bash", bash("seq 1 20000"))
			if r.Meta.SpillPath != "" || !strings.Contains(r.Text(), "could not be saved") {
				t.Errorf("spilled to %q through a link: %s", r.Meta.SpillPath, r.Text())
			}
			emptyDir(t, outside)
		})
	}
}

// A sandboxed command plants the link itself, in its own TMPDIR, then prints a lot: the daemon
// (unsandboxed) must not write the spill through it.
func TestBashSpillIgnoresALinkPlantedByASandboxedCommand(t *testing.T) {
	sb := sandboxFor(t)
	tmp, outside := t.TempDir(), t.TempDir()
	spill := filepath.Join(tmp, "spill")
	f := newFixture(t, withBash(func(b *builtin.BashConfig) {
		b.Runner = nil
		b.Sandbox = sb
		b.Policy = sandbox.Policy{TmpDir: tmp}
		b.Grace = 300 * time.Millisecond
		b.HeadBytes, b.TailBytes, b.SpillDir = 1000, 1000, spill
	}))
	r := f.mustOK("bash", bash(fmt.Sprintf(`ln -s %s "$TMPDIR/spill" && seq 1 100000`, outside)))
	if fi, err := os.Lstat(spill); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the sandboxed command did not plant the link (%v, %v): %s", fi, err, r.Text())
	}
	wantType(t, r, tools.OK, "could not be saved")
	if r.Meta.SpillPath != "" {
		t.Errorf("spilled to %s", r.Meta.SpillPath)
	}
	emptyDir(t, outside)
}
