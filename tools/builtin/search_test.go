package builtin_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/search"
)

func TestGlobListsNewestFirstAndCaps(t *testing.T) {
	f := newFixture(t, withConfig(func(c *builtin.Config) { c.Limits.GlobResults = 2 }))
	base := time.Now().Add(-time.Hour)
	for i, name := range []string{"old.go", "pkg/mid.go", "pkg/deep/new.go", "notes.txt"} {
		p := f.write(name, "x")
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	r := f.mustOK("glob", map[string]any{"pattern": "**/*.go"})
	// The wording of the cap note is the search engine's; the order and the count are ours.
	if !strings.HasPrefix(r.Text(), "pkg/deep/new.go\npkg/mid.go\n(1 more file") || strings.Contains(r.Text(), "old.go") {
		t.Errorf("glob:\n%s", r.Text())
	}
	if !r.Meta.Truncated {
		t.Error("capped glob not marked truncated")
	}
	r = f.mustOK("glob", map[string]any{"pattern": "*.go", "path": "pkg"})
	if r.Text() != "pkg/mid.go\n" {
		t.Errorf("glob in pkg: %q", r.Text())
	}
	// An absolute pattern inside the directory is taken as relative to it.
	r = f.mustOK("glob", map[string]any{"pattern": filepath.Join(f.dir, "pkg") + "/*.go", "path": "pkg"})
	if r.Text() != "pkg/mid.go\n" {
		t.Errorf("absolute pattern: %q", r.Text())
	}
	wantType(t, f.call("glob", map[string]any{"pattern": "*.go", "path": "old.go"}), tools.InvalidArgs, "is a file, not a directory")
	wantType(t, f.call("glob", map[string]any{"pattern": "*.go", "path": "missing"}), tools.NotFound)
	wantType(t, f.call("glob", map[string]any{"pattern": "[", "path": "pkg"}), tools.InvalidArgs, "invalid glob pattern")
}

func TestLsTreeDepthAndCaps(t *testing.T) {
	f := newFixture(t)
	f.write("a/b/c/d/e/f/g.txt", "")
	f.write("top.txt", "")
	r := f.mustOK("ls", map[string]any{})
	want := filepath.Base(f.dir) + "/\n  a/\n    b/ (1 entry)\n  top.txt\n"
	if r.Text() != want {
		t.Errorf("ls\n%q\nwant\n%q", r.Text(), want)
	}
	r = f.mustOK("ls", map[string]any{"path": "a", "depth": 9})
	if !strings.Contains(r.Text(), "          f/ (1 entry)\n") || strings.Contains(r.Text(), "g.txt") ||
		!strings.Contains(r.Text(), "depth is capped at 5") {
		t.Errorf("deep ls:\n%s", r.Text())
	}
	wantType(t, f.call("ls", map[string]any{"path": "top.txt"}), tools.InvalidArgs, "top.txt is a file")
	wantType(t, f.call("ls", map[string]any{"depth": 0}), tools.InvalidArgs, "/depth")
}

// fakeOverlay is an editor with unsaved buffers.
type fakeOverlay map[string][]byte

func (o fakeOverlay) Open() []string {
	var out []string
	for k := range o {
		out = append(out, k)
	}
	return out
}
func (o fakeOverlay) Content(abs string) ([]byte, bool) { b, ok := o[abs]; return b, ok }

func engines(t *testing.T) []search.Engine {
	out := []search.Engine{search.EngineGo}
	if _, err := exec.LookPath("rg"); err == nil {
		out = append(out, search.EngineRipgrep)
	} else {
		t.Log("ripgrep is not installed: only the Go engine is tested")
	}
	return out
}

func TestGrepModesAndOptions(t *testing.T) {
	for _, eng := range engines(t) {
		t.Run(string(eng), func(t *testing.T) {
			f := newFixture(t, withConfig(func(c *builtin.Config) { c.Search.Engine = eng }))
			f.write("a.go", "package a\n\nfunc Alpha() {}\nfunc beta() {}\n// x.y(z)\n")
			f.write("b.go", "package b\nfunc Gamma() {}\n")
			f.write("b_test.go", "package b\nfunc TestGamma() {}\n")
			f.write("c.txt", "func in text\n")
			f.write("ignored/x.go", "func Ignored() {}\n")
			f.write(".gitignore", "ignored/\n")

			cases := []struct {
				args map[string]any
				want string
			}{
				{map[string]any{"pattern": `func [A-Z]\w*`}, "a.go:3:func Alpha() {}\nb.go:2:func Gamma() {}\nb_test.go:2:func TestGamma() {}\n"},
				{map[string]any{"pattern": "func", "glob": "*.go", "exclude": "*_test.go", "output_mode": "files_with_matches"}, "a.go\nb.go\n"},
				{map[string]any{"pattern": "func", "output_mode": "count", "path": "a.go"}, "a.go:2\n"},
				{map[string]any{"pattern": "ALPHA", "case_insensitive": true}, "a.go:3:func Alpha() {}\n"},
				{map[string]any{"pattern": "x.y(z)", "literal": true}, "a.go:5:// x.y(z)\n"},
				{map[string]any{"pattern": "beta", "context": 1}, "a.go-3-func Alpha() {}\na.go:4:func beta() {}\na.go-5-// x.y(z)\n"},
				{map[string]any{"pattern": "beta", "before": 1}, "a.go-3-func Alpha() {}\na.go:4:func beta() {}\n"},
				{map[string]any{"pattern": "nothing-matches-this"}, "No matches found.\n"},
				// Common argument names of other agents.
				{map[string]any{"pattern": "alpha", "-i": true, "include": "a.*", "output_mode": "files"}, "a.go\n"},
			}
			for _, c := range cases {
				r := f.mustOK("grep", c.args)
				if r.Text() != c.want {
					t.Errorf("grep %v\n%q\nwant\n%q", c.args, r.Text(), c.want)
				}
			}
			r := f.mustOK("grep", map[string]any{"pattern": "func", "head_limit": 1})
			if !strings.HasPrefix(r.Text(), "a.go:3:func Alpha() {}\n") || strings.Contains(r.Text(), "beta") ||
				!strings.Contains(r.Text(), "more matching lines not shown") || !r.Meta.Truncated {
				t.Errorf("head_limit:\n%s", r.Text())
			}
			wantType(t, f.call("grep", map[string]any{"pattern": "func ("}), tools.InvalidArgs)
			wantType(t, f.call("grep", map[string]any{"pattern": `(?=x)`}), tools.InvalidArgs)
			wantType(t, f.call("grep", map[string]any{"pattern": "x", "path": "missing"}), tools.NotFound)
			wantType(t, f.call("grep", map[string]any{"pattern": "x", "output_mode": "everything"}), tools.InvalidArgs, "/output_mode")
		})
	}
}

func TestGrepSeesUnsavedEditorContent(t *testing.T) {
	for _, eng := range engines(t) {
		t.Run(string(eng), func(t *testing.T) {
			ov := fakeOverlay{}
			f := newFixture(t, withConfig(func(c *builtin.Config) {
				c.Search.Engine = eng
				c.Search.Overlay = ov
			}))
			p := f.write("doc.go", "package doc\nfunc OnDisk() {}\n")
			ov[p] = []byte("package doc\nfunc InBuffer() {}\n")
			r := f.mustOK("grep", map[string]any{"pattern": "func"})
			if !strings.HasPrefix(r.Text(), "doc.go:2:func InBuffer() {}\n") || !strings.Contains(r.Text(), "unsaved") {
				t.Errorf("grep with overlay:\n%s", r.Text())
			}
		})
	}
}
