package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func requireRg(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("!!!!!!!! SKIPPING THE RIPGREP SIDE: rg is not installed (apt-get install ripgrep); " +
			"the rg engine and its parity with the Go engine are NOT tested !!!!!!!!")
	}
}

// comparable strips the fields that legitimately differ between engines.
func comparable(r *GrepResult) GrepResult {
	c := *r
	c.Engine = ""
	return c
}

func runBoth(t *testing.T, opts GrepOptions) (rg, gor *GrepResult) {
	t.Helper()
	ctx := context.Background()
	o := opts
	o.Engine = EngineRipgrep
	rg, err1 := Grep(ctx, o)
	o.Engine = EngineGo
	gor, err2 := Grep(ctx, o)
	if (err1 == nil) != (err2 == nil) {
		t.Fatalf("errors differ: rg=%v go=%v", err1, err2)
	}
	if err1 != nil {
		t.Fatalf("grep failed: %v", err1)
	}
	if rg.Engine != "rg" || gor.Engine != "go" {
		t.Fatalf("engines: %q %q", rg.Engine, gor.Engine)
	}
	return rg, gor
}

func diffResults(a, b *GrepResult) string {
	ja, _ := json.MarshalIndent(comparable(a), "", " ")
	jb, _ := json.MarshalIndent(comparable(b), "", " ")
	la, lb := strings.Split(string(ja), "\n"), strings.Split(string(jb), "\n")
	var out strings.Builder
	for i := 0; i < max(len(la), len(lb)); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			fmt.Fprintf(&out, "line %d:\n  rg: %s\n  go: %s\n", i, x, y)
			if out.Len() > 3000 {
				break
			}
		}
	}
	return out.String()
}

func TestParityMatrix(t *testing.T) {
	requireRg(t)
	root := buildFixture(t)
	type pat struct {
		name                  string
		p                     string
		literal, icase, smart bool
		full                  bool // run the whole option list (else a few options)
	}
	pats := []pat{
		{"literal", "hello", true, false, false, true},
		{"literal-icase", "HELLO", true, true, false, true},
		{"smart-lower", "hello", false, false, true, false},
		{"smart-upper", "Hello", false, false, true, true},
		{"regex", `h[a-z]+o\b`, false, false, false, true},
		{"anchors", `^(foo|line \d+ needle)$`, false, false, false, false},
		{"crlf-dollar", `hello$`, false, false, false, true},
		{"word", `\w+ing`, false, false, false, false},
		{"unicode-dot", `h.llo w.rld`, false, false, false, false},
		{"kelvin", `(?i)kelvin k here`, false, false, false, false},
		{"sigma", `(?i)σίσυφος`, false, false, false, false},
		{"long-s", `(?i)strasse`, false, false, false, false},
		{"literal-meta", "a.b", true, false, false, false},
		{"needle", "needle", false, false, false, true},
		{"empty-match", `x*`, false, false, false, false},
		{"class-neg", `[^a-z ]ello`, false, false, false, false},
		{"alt", `colon|bracket|star`, false, false, false, false},
	}
	few := map[string]bool{"default": true, "count": true, "context-cap": true, "hidden-noignore": true, "cols": true}
	type opt struct {
		name string
		f    func(*GrepOptions)
	}
	opts := []opt{
		{"default", func(*GrepOptions) {}},
		{"uncapped", func(o *GrepOptions) { o.MaxResults, o.MaxColumns = -1, -1 }},
		{"hidden", func(o *GrepOptions) { o.Hidden = true }},
		{"noignore", func(o *GrepOptions) { o.NoIgnore = true }},
		{"hidden-noignore", func(o *GrepOptions) { o.Hidden, o.NoIgnore = true, true }},
		{"files", func(o *GrepOptions) { o.Mode = ModeFiles }},
		{"count", func(o *GrepOptions) { o.Mode = ModeCount }},
		{"context", func(o *GrepOptions) { o.Before, o.After = 2, 1 }},
		{"context-cap", func(o *GrepOptions) { o.Before, o.After, o.MaxResults = 1, 3, 7 }},
		{"cap", func(o *GrepOptions) { o.MaxResults = 5 }},
		{"cap-files", func(o *GrepOptions) { o.MaxResults = 3; o.Mode = ModeFiles }},
		{"cols", func(o *GrepOptions) { o.MaxColumns = 20 }},
		{"include-txt", func(o *GrepOptions) { o.Include = []string{"*.txt"} }},
		{"include-log", func(o *GrepOptions) { o.Include = []string{"*.log"} }},
		{"include-sub", func(o *GrepOptions) { o.Include = []string{"sub/**"} }},
		{"include-go-brace", func(o *GrepOptions) { o.Include = []string{"**/*.{go,md}"} }},
		{"exclude", func(o *GrepOptions) { o.Exclude = []string{"*.txt", "src/"} }},
		{"include-neg", func(o *GrepOptions) { o.Include = []string{"*.txt", "!a.txt"} }},
		{"include-dot", func(o *GrepOptions) { o.Include = []string{".env*", "*.yml"} }},
		{"include-class", func(o *GrepOptions) { o.Include = []string{"[!a-c]*.txt"} }},
		{"include-dirname", func(o *GrepOptions) { o.Include = []string{"sub"} }},
		{"include-deeper", func(o *GrepOptions) { o.Include = []string{"**/deeper/**", "/a.txt"} }},
		{"include-hidden-dir", func(o *GrepOptions) { o.Include = []string{".hdir/**"} }},
		{"include-star", func(o *GrepOptions) { o.Include = []string{"*"} }},
		{"include-exclude-dir", func(o *GrepOptions) { o.Include = []string{"*.txt"}; o.Exclude = []string{"sub/", "**/gen"} }},
		{"path-sub", func(o *GrepOptions) { o.Paths = []string{"sub"} }},
		{"path-overlap", func(o *GrepOptions) { o.Paths = []string{"sub/deeper", "sub", "weird/st*r.txt"} }},
		{"path-file", func(o *GrepOptions) { o.Paths = []string{"sub/keep.log"} }},
		{"path-multi", func(o *GrepOptions) { o.Paths = []string{"src/util", "docs", "a.txt"} }},
		{"path-hidden", func(o *GrepOptions) { o.Paths = []string{".hdir"} }},
		{"path-ignored", func(o *GrepOptions) { o.Paths = []string{"build"} }},
		{"path-ignored-file", func(o *GrepOptions) { o.Paths = []string{"keep.log"} }},
		{"path-nested", func(o *GrepOptions) { o.Paths = []string{"nested"}; o.Include = []string{"*.txt", "*.log"} }},
		{"maxsize", func(o *GrepOptions) { o.MaxFileSize = 20 }},
	}
	n := 0
	for _, p := range pats {
		for _, o := range opts {
			if !p.full && !few[o.name] {
				continue
			}
			name := p.name + "/" + o.name
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				g := GrepOptions{Root: root, Pattern: p.p, Literal: p.literal, IgnoreCase: p.icase, SmartCase: p.smart, MaxResults: 500, MaxColumns: 200}
				o.f(&g)
				rg, gor := runBoth(t, g)
				if !reflect.DeepEqual(comparable(rg), comparable(gor)) {
					t.Errorf("engines differ for %+v:\n%s", g, diffResults(rg, gor))
				}
				if rg.Render() != gor.Render() {
					t.Errorf("renders differ")
				}
			})
			n++
		}
	}
	t.Logf("%d combinations compared", n)
}

// TestParityExpectedFiles pins the visited set itself, so that both engines cannot agree on a
// wrong answer.
func TestParityExpectedFiles(t *testing.T) {
	root := buildFixture(t)
	engines := []Engine{EngineGo}
	if _, err := exec.LookPath("rg"); err == nil {
		engines = append(engines, EngineRipgrep)
	} else {
		t.Log("!!!!!!!! rg not installed: only the Go engine is checked here !!!!!!!!")
	}
	cases := []struct {
		name string
		opts GrepOptions
		want []string
	}{
		{"default", GrepOptions{}, []string{
			".env.example", "a.txt", "b.skip", "badutf/b.txt", "big.txt", "crlf.txt", "crlfdir/b.y", "deep/keep.txt", "docs/private.md", "docs/public.md",
			"gen/c.txt", "long.txt", "nested/n.log", "nonl.txt", "latin1.txt", "prec/y.txt",
			"src/a.b", "src/b.c", "src/main.go", "src/util/u.go", "src/util/u_test.go",
			"sub/deeper/d.txt", "sub/keep.log", "sub/root-only.txt", "sub2/build", "tempA.txt",
			"unicode/ünï.txt", "weird/br[ack]et.txt", "weird/co:lon.txt", "weird/st*r.txt",
			"wl/a.go", "wl/d/c.go", "wt/wt-kept.txt",
		}},
		{"hidden", GrepOptions{Hidden: true}, []string{
			".env", ".env.example", ".github/workflows/ci.yml", ".hdir/.hh.txt", ".hdir/h.txt", ".hidden.txt",
			"a.txt", "b.skip", "badutf/b.txt", "big.txt", "crlf.txt", "crlfdir/b.y", "deep/keep.txt", "docs/private.md", "docs/public.md",
			"gen/c.txt", "long.txt", "nested/n.log", "nonl.txt", "latin1.txt", "prec/y.txt",
			"src/a.b", "src/b.c", "src/main.go", "src/util/u.go", "src/util/u_test.go",
			"sub/.hfile", "sub/deeper/d.txt", "sub/keep.log", "sub/root-only.txt", "sub2/build", "tempA.txt",
			"unicode/ünï.txt", "weird/br[ack]et.txt", "weird/co:lon.txt", "weird/st*r.txt",
			"wl/a.go", "wl/d/c.go", "wt/wt-kept.txt",
		}},
	}
	for _, c := range cases {
		for _, e := range engines {
			t.Run(c.name+"/"+string(e), func(t *testing.T) {
				o := c.opts
				o.Root, o.Pattern, o.Literal, o.IgnoreCase, o.Mode, o.MaxResults, o.Engine = root, "hello", true, true, ModeFiles, -1, e
				res, err := Grep(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, f := range res.Files {
					got = append(got, f.Path)
				}
				want := slices.Clone(c.want)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("files:\n got %q\nwant %q", got, want)
				}
			})
		}
	}
}
