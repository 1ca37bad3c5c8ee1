package search

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func globPaths(t *testing.T, opts GlobOptions) []string {
	t.Helper()
	r, err := Glob(context.Background(), opts)
	if err != nil {
		t.Fatalf("%+v: %v", opts, err)
	}
	var out []string
	for _, f := range r.Files {
		out = append(out, f.Path)
	}
	return out
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func TestGlob(t *testing.T) {
	root := buildFixture(t)
	// Explicit modification times: newest first, ties by path.
	base := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for p, age := range map[string]int{"src/util/u.go": 0, "src/main.go": 5, "src/util/u_test.go": 5, "wl/a.go": 9, "wl/d/c.go": 1} {
		mt := base.Add(-time.Duration(age) * time.Hour)
		if err := os.Chtimes(filepath.Join(root, p), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	got := globPaths(t, GlobOptions{Root: root, Pattern: "**/*.go"})
	want := []string{"src/util/u.go", "wl/d/c.go", "src/main.go", "src/util/u_test.go", "wl/a.go"}
	if !slices.Equal(got, want) {
		t.Errorf("mtime order: %q, want %q", got, want)
	}
	cases := []struct {
		opts GlobOptions
		want []string
	}{
		{GlobOptions{Pattern: "*.log"}, nil},
		{GlobOptions{Pattern: "**/*.log"}, []string{"nested/n.log", "sub/keep.log"}},
		{GlobOptions{Pattern: "*.log", NoIgnore: true}, []string{"keep.log"}},
		{GlobOptions{Pattern: "**/*.log", NoIgnore: true}, []string{"keep.log", "nested/n.log", "sub/keep.log", "sub/other.log"}},
		{GlobOptions{Pattern: "*.txt", Path: "sub"}, []string{"sub/root-only.txt"}},
		{GlobOptions{Pattern: "**/*.txt", Path: "sub"}, []string{"sub/deeper/d.txt", "sub/root-only.txt"}},
		{GlobOptions{Pattern: "src/*.go"}, []string{"src/main.go"}},
		{GlobOptions{Pattern: "src/{main,util/u}.go"}, []string{"src/main.go", "src/util/u.go"}},
		{GlobOptions{Pattern: "src/*/*_test.go"}, []string{"src/util/u_test.go"}},
		{GlobOptions{Pattern: "*.env*"}, []string{".env.example"}}, // whitelisted by "!.env.example"
		{GlobOptions{Pattern: ".env*"}, []string{".env", ".env.example"}},
		{GlobOptions{Pattern: "**/.h*"}, []string{".hdir/.hh.txt", ".hidden.txt", "sub/.hfile"}},
		{GlobOptions{Pattern: ".hdir/*"}, []string{".hdir/.hh.txt", ".hdir/h.txt"}},
		{GlobOptions{Pattern: "*.txt", Path: ".hdir"}, []string{".hdir/.hh.txt", ".hdir/h.txt"}},
		{GlobOptions{Pattern: "**/ci.yml"}, nil},
		{GlobOptions{Pattern: "**/ci.yml", Hidden: true}, []string{".github/workflows/ci.yml"}},
		{GlobOptions{Pattern: "link*"}, nil},
		{GlobOptions{Pattern: "weird/st\\*r.txt"}, []string{"weird/st*r.txt"}},
		{GlobOptions{Pattern: "build/*"}, []string{"build/out.txt"}},
		{GlobOptions{Pattern: "nosuchdir/*.go"}, nil},
		{GlobOptions{Pattern: "**/HEAD", Hidden: true, NoIgnore: true}, nil},
		// The dialect (shared with grep's globs): classes, negated classes both ways, ?,
		// alternatives holding slashes, ** as a whole component only.
		{GlobOptions{Pattern: "src/[mu]*.go"}, []string{"src/main.go"}},
		{GlobOptions{Pattern: "src/[!m]*/*.go"}, []string{"src/util/u.go", "src/util/u_test.go"}},
		{GlobOptions{Pattern: "src/[^m]*/*.go"}, []string{"src/util/u.go", "src/util/u_test.go"}},
		{GlobOptions{Pattern: "src/ma?n.go"}, []string{"src/main.go"}},
		{GlobOptions{Pattern: "src/?.{b,c}"}, []string{"src/a.b", "src/b.c"}},
		{GlobOptions{Pattern: "{src,wl}/*.go"}, []string{"src/main.go", "wl/a.go"}},
		{GlobOptions{Pattern: "**/{u,c}.go"}, []string{"src/util/u.go", "wl/d/c.go"}},
		{GlobOptions{Pattern: "src/**"}, []string{"src/a.b", "src/b.c", "src/main.go", "src/util/u.go", "src/util/u_test.go"}},
		{GlobOptions{Pattern: "src**/*.go"}, []string{"src/main.go"}}, // ** inside a component is *
		{GlobOptions{Pattern: "src/*.GO"}, nil},                       // case-sensitive
	}
	for _, c := range cases {
		o := c.opts
		o.Root = root
		if got := sorted(globPaths(t, o)); !slices.Equal(got, sorted(c.want)) {
			t.Errorf("%+v: got %q, want %q", c.opts, got, c.want)
		}
	}
	r, err := Glob(context.Background(), GlobOptions{Root: root, Pattern: "**/*.go", MaxResults: 2})
	if err != nil {
		t.Fatal(err)
	}
	wantText := "src/util/u.go\nwl/d/c.go\n(3 more files not shown; 5 matching files in total. Use a more specific pattern or path.)\n"
	if r.Total != 5 || r.Omitted != 3 || r.Render() != wantText {
		t.Errorf("cap: %+v\n%s", r, r.Render())
	}
	r, err = Glob(context.Background(), GlobOptions{Root: root, Pattern: "*.nothing"})
	if err != nil || r.Render() != "No files match \"*.nothing\".\n" {
		t.Errorf("empty: %v %q", err, r.Render())
	}
	r, err = Glob(context.Background(), GlobOptions{Root: root, Pattern: "*.txt", Path: "build"})
	if err != nil || len(r.Files) != 1 || !strings.Contains(r.Render(), "Note: path build is ignored") {
		t.Errorf("ignored path: %v %q", err, r.Render())
	}
}

func buildSmallTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "proj")
	for p, c := range map[string]string{
		".git/HEAD": "x", ".gitignore": "ignored/\n*.tmp\n", ".github/ci.yml": "",
		"a/x.go": "", "a/y.go": "", "a/sub/z.go": "", "ignored/foo": "", "c.txt": "", "d.tmp": "", "e.txt": "",
	} {
		fp := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(fp), 0o755)
		os.WriteFile(fp, []byte(c), 0o644)
	}
	os.MkdirAll(filepath.Join(root, "b"), 0o755)
	os.Symlink("c.txt", filepath.Join(root, "link"))
	return root
}

func TestTree(t *testing.T) {
	root := buildSmallTree(t)
	render := func(o TreeOptions) string {
		t.Helper()
		o.Root = root
		r, err := Tree(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		return r.Render()
	}
	cases := []struct {
		opts TreeOptions
		want string
	}{
		{TreeOptions{Depth: 1}, `proj/
  .github/ (1 entry)
  a/ (3 entries)
  b/ (empty)
  .gitignore
  c.txt
  e.txt
  link -> c.txt
`},
		{TreeOptions{}, `proj/
  .github/
    ci.yml
  a/
    sub/ (1 entry)
    x.go
    y.go
  b/
  .gitignore
  c.txt
  e.txt
  link -> c.txt
`},
		{TreeOptions{Depth: 2, MaxPerDir: 2}, `proj/
  .github/
    ci.yml
  a/
    sub/ (1 entry)
    x.go
    … 1 more (1 file)
  … 5 more (1 dir, 4 files)
(6 entries not shown: at most 2 per directory and 400 in total. List a subdirectory to see more.)
`},
		{TreeOptions{Depth: 3, MaxEntries: 3}, `proj/
  .github/
    … 1 more (1 file)
  a/
    … 3 more (1 dir, 2 files)
  b/
  … 4 more (4 files)
(8 entries not shown: at most 50 per directory and 3 in total. List a subdirectory to see more.)
`},
		{TreeOptions{Depth: 1, SkipHidden: true, NoIgnore: true}, `proj/
  a/ (3 entries)
  b/ (empty)
  ignored/ (1 entry)
  c.txt
  d.tmp
  e.txt
  link -> c.txt
`},
		{TreeOptions{Path: "a", Depth: 5}, `a/
  sub/
    z.go
  x.go
  y.go
`},
		{TreeOptions{Path: "b"}, `b/
  (empty)
`},
		{TreeOptions{Path: "ignored"}, `ignored/
  foo
Note: path ignored is ignored (.gitignore or similar): ignore files were disregarded.
`},
	}
	for _, c := range cases {
		if got := render(c.opts); got != c.want {
			t.Errorf("%+v:\n%s\nwant:\n%s", c.opts, got, c.want)
		}
	}
}
