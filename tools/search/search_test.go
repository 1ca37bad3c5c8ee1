package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/tools"
)

func enginesForTest(t *testing.T) []Engine {
	t.Helper()
	if _, err := exec.LookPath("rg"); err != nil {
		t.Log("!!!!!!!! rg is not installed: only the Go engine is tested here !!!!!!!!")
		return []Engine{EngineGo}
	}
	return []Engine{EngineRipgrep, EngineGo}
}

func wantType(t *testing.T, err error, typ tools.ResultType) {
	t.Helper()
	var te *tools.Error
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T) is not a *tools.Error", err, err)
	}
	if te.Type != typ {
		t.Fatalf("error type %s, want %s (%v)", te.Type, typ, err)
	}
	if te.Message == "" {
		t.Fatal("empty message")
	}
}

func TestInvalidRegex(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
	cases := map[string]string{
		"(foo":            "missing closing )",
		"[a":              "missing closing ]",
		"a{1001}":         "invalid repeat count",
		"*a":              "missing argument",
		"[a[bc]]":         "nested character classes",
		"[a-z&&[^aeiou]]": "set operations",
		"[a-z&&aeiou]":    "set operations",
		"[a~~b]":          "set operations",
		"(?x) a b":        "invalid or unsupported Perl syntax",
		`\<foo\>`:         "word boundaries",
		"a\nb":            "line break",
		"":                "empty",
		`[\n]`:            "line break",
		`\x{0A}`:          "line break",
	}
	for _, e := range enginesForTest(t) {
		for pat, want := range cases {
			_, err := Grep(context.Background(), GrepOptions{Root: root, Pattern: pat, Engine: e})
			if err == nil {
				t.Errorf("%s: %q: no error", e, pat)
				continue
			}
			wantType(t, err, tools.InvalidArgs)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q: error %q does not mention %q", e, pat, err, want)
			}
		}
		// The same texts are fine as literals (except a line break and the empty string).
		for _, pat := range []string{"(foo", "[a[bc]]", `\<foo\>`} {
			if _, err := Grep(context.Background(), GrepOptions{Root: root, Pattern: pat, Literal: true, Engine: e}); err != nil {
				t.Errorf("%s: literal %q: %v", e, pat, err)
			}
		}
	}
}

func TestInvalidArguments(t *testing.T) {
	root := buildFixture(t)
	ctx := context.Background()
	for _, g := range []string{"[abc", "{a,{b}}", `a\`, "{a,b", "[z-a]"} {
		_, err := Grep(ctx, GrepOptions{Root: root, Pattern: "x", Include: []string{g}})
		wantType(t, err, tools.InvalidArgs)
		_, err = Grep(ctx, GrepOptions{Root: root, Pattern: "x", Exclude: []string{g}})
		wantType(t, err, tools.InvalidArgs)
	}
	_, err := Grep(ctx, GrepOptions{Root: root, Pattern: "x", Paths: []string{"../etc"}})
	wantType(t, err, tools.InvalidArgs)
	_, err = Grep(ctx, GrepOptions{Root: root, Pattern: "x", Paths: []string{"nope"}})
	wantType(t, err, tools.NotFound)
	_, err = Grep(ctx, GrepOptions{Root: root, Pattern: "x", Paths: []string{"linkdir"}})
	wantType(t, err, tools.InvalidArgs)
	if !strings.Contains(err.Error(), `"sub"`) {
		t.Errorf("symlink error should name the target: %v", err)
	}
	_, err = Grep(ctx, GrepOptions{Root: root, Pattern: "x", Paths: []string{".git"}})
	wantType(t, err, tools.InvalidArgs)
	_, err = Grep(ctx, GrepOptions{Root: "relative", Pattern: "x"})
	wantType(t, err, tools.InvalidArgs)
	_, err = Grep(ctx, GrepOptions{Root: root, Pattern: "x", Mode: "lines"})
	wantType(t, err, tools.InvalidArgs)
	_, err = Grep(ctx, GrepOptions{Root: root, Pattern: "x", Engine: "grep"})
	wantType(t, err, tools.InvalidArgs)
	_, err = Grep(ctx, GrepOptions{Root: root, Pattern: "x", Before: -1})
	wantType(t, err, tools.InvalidArgs)
	for _, p := range []string{"[abc", "/etc/*", "../*.go", "a/{b", "src/./x", "{a,{b,c}}", `a\`, "[z-a]"} {
		_, err := Glob(ctx, GlobOptions{Root: root, Pattern: p})
		wantType(t, err, tools.InvalidArgs)
	}
	_, err = Glob(ctx, GlobOptions{Root: root, Pattern: "*", Path: "a.txt"})
	wantType(t, err, tools.InvalidArgs)
	_, err = Tree(ctx, TreeOptions{Root: root, Path: "missing"})
	wantType(t, err, tools.NotFound)
}

func TestSmartCase(t *testing.T) {
	cases := []struct {
		p       string
		literal bool
		upper   bool
	}{
		{"hello", false, false},
		{"Hello", false, true},
		{`\Whello\S\D\B`, false, false},
		{`\p{Lu}x`, false, false},
		{`\pLx`, false, false},
		{`\x41b`, false, false},
		{`(?P<Name>x)`, false, false},
		{`(?U)x`, false, false},
		{`[A-Z]`, false, true},
		{`\QA\E`, false, true},
		{"ÉTÉ", false, true},
		{`\W`, true, true},
	}
	for _, c := range cases {
		if got := hasUppercaseLiteral(c.p, c.literal); got != c.upper {
			t.Errorf("%q: got %v", c.p, got)
		}
	}
	root := buildFixture(t)
	for _, e := range enginesForTest(t) {
		r, err := Grep(context.Background(), GrepOptions{Root: root, Pattern: "hello world", SmartCase: true, Engine: e, Paths: []string{"a.txt"}})
		if err != nil || r.TotalMatches != 2 {
			t.Fatalf("%s smart lower: %v %+v", e, err, r)
		}
		r, err = Grep(context.Background(), GrepOptions{Root: root, Pattern: "Hello World", SmartCase: true, Engine: e, Paths: []string{"a.txt"}})
		if err != nil || r.TotalMatches != 1 {
			t.Fatalf("%s smart upper: %v %+v", e, err, r)
		}
	}
}

func TestFoldLiteral(t *testing.T) {
	// Non-ASCII case variants of k and s are found by the case-insensitive prefilter.
	texts := []string{"xx KELVIN xx", "xx kelvin xx", "xx \u212Aelvin xx", "ſtraſſe", "STRASSE", "nothing", "kkk", "\u212A\u212A\u212A"}
	for _, lit := range []string{"kelvin", "strasse", "kkk", "k"} {
		m, err := compileMatcher(lit, true, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if m.fold == nil {
			t.Fatalf("%q: no fold prefilter", lit)
		}
		for _, txt := range texts {
			buf := []byte(txt + "\n")
			var sc foldScan
			sc.reset(m.fold)
			want := m.re.Match(buf)
			got := m.fold.exactFor(buf) && sc.index(buf, 0) >= 0
			if !m.fold.exactFor(buf) {
				got = want // the engine falls back to the regex
			}
			if got != want {
				t.Errorf("%q in %q: prefilter %v, regex %v", lit, txt, got, want)
			}
		}
	}
}

func TestRustSerialization(t *testing.T) {
	cases := map[string]string{
		`\w+Error\(`: `(?:[0-9A-Z_a-z])+Error\x{28}`,
		`^a.b$`:      `(?m:^)a[^\n](?:)b(?m:$)`,
		`\bx\B`:      `(?-u:\b)x(?-u:\B)`,
		`(?i)k`:      `(?i:K)`,
		`a\sb`:       `a[\x{9}\x{C}-\x{D}\x{20}]b`,
		`x{2,3}?`:    `xx(?:x)??`,
		`[^a]`:       `[\x{0}-\x{9}\x{B}-\x{60}b-\x{10FFFF}]`,
		`(?s).`:      `[^\n]`,
		`a|b+`:       `(?:a|(?:b)+)`,
	}
	for in, want := range cases {
		m, err := compileMatcher(in, false, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ReplaceAll(m.rust, "(?:)", "") != strings.ReplaceAll(want, "(?:)", "") {
			t.Errorf("%q -> %q, want %q", in, m.rust, want)
		}
	}
}

func TestCaps(t *testing.T) {
	root := buildFixture(t)
	for _, e := range enginesForTest(t) {
		ctx := context.Background()
		all, err := Grep(ctx, GrepOptions{Root: root, Pattern: "hello", Engine: e, MaxResults: -1})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Grep(ctx, GrepOptions{Root: root, Pattern: "hello", Engine: e, MaxResults: 5})
		if err != nil {
			t.Fatal(err)
		}
		shown := 0
		for _, f := range r.Files {
			for _, l := range f.Lines {
				if l.Match {
					shown++
				}
			}
		}
		if shown != 5 || r.TotalMatches != all.TotalMatches || r.OmittedMatches != all.TotalMatches-5 {
			t.Errorf("%s: shown %d, total %d/%d, omitted %d", e, shown, r.TotalMatches, all.TotalMatches, r.OmittedMatches)
		}
		// The shown lines are the first five of the uncapped result.
		var first []string
		for _, f := range all.Files {
			for _, l := range f.Lines {
				first = append(first, fmt.Sprintf("%s:%d", f.Path, l.Number))
			}
		}
		var got []string
		for _, f := range r.Files {
			for _, l := range f.Lines {
				got = append(got, fmt.Sprintf("%s:%d", f.Path, l.Number))
			}
		}
		if !slices.Equal(got, first[:5]) {
			t.Errorf("%s: capped lines %v, want %v", e, got, first[:5])
		}
		text := r.Render()
		wantFooter := fmt.Sprintf("(%d more matching lines not shown, in %d more files; %d matching lines in %d files in total.",
			r.OmittedMatches, r.OmittedFiles, r.TotalMatches, r.TotalFiles)
		if !strings.Contains(text, wantFooter) {
			t.Errorf("%s: render:\n%s", e, text)
		}
		// The file at the boundary says how many of its lines are cut.
		cum := 0
		for _, f := range all.Files {
			cum += f.Count
			if cum >= 5 {
				if cum > 5 && !strings.Contains(text, fmt.Sprintf("%s: (%s in this file)", f.Path, plural(cum-5, "more matching line"))) {
					t.Errorf("%s: boundary file %s not noted:\n%s", e, f.Path, text)
				}
				break
			}
		}
		// Files mode.
		r, err = Grep(ctx, GrepOptions{Root: root, Pattern: "hello", Engine: e, MaxResults: 3, Mode: ModeFiles})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Files) != 3 || r.OmittedFiles != all.TotalFiles-3 || !strings.Contains(r.Render(), fmt.Sprintf("(%d more files not shown; %d files matched.", all.TotalFiles-3, all.TotalFiles)) {
			t.Errorf("%s: files cap: %+v\n%s", e, r, r.Render())
		}
		// Count mode.
		r, err = Grep(ctx, GrepOptions{Root: root, Pattern: "hello", Engine: e, MaxResults: 2, Mode: ModeCount})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Files) != 2 || r.Render() != fmt.Sprintf(".env.example:1\na.txt:2\n(%d more matching lines not shown, in %d more files; %d matching lines in %d files in total. Narrow the pattern or the path, or use include globs.)\n",
			all.TotalMatches-3, all.TotalFiles-2, all.TotalMatches, all.TotalFiles) {
			t.Errorf("%s: count render:\n%s", e, r.Render())
		}
		// Columns: a window around the match with the cut noted.
		r, err = Grep(ctx, GrepOptions{Root: root, Pattern: "hello", Engine: e, MaxColumns: 40, Paths: []string{"long.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		want := "long.txt:1:…" + strings.Repeat("x", 10) + "hello" + strings.Repeat("y", 25) + "… [+1965 bytes]\nlong.txt:2:short hello\n"
		if r.Render() != want {
			t.Errorf("%s: columns:\n%q\nwant\n%q", e, r.Render(), want)
		}
	}
}

func TestContextRender(t *testing.T) {
	root := buildFixture(t)
	for _, e := range enginesForTest(t) {
		r, err := Grep(context.Background(), GrepOptions{Root: root, Pattern: "needle", Engine: e, Before: 1, After: 1, Paths: []string{"ctx.txt", "a.txt"}, Include: []string{"ctx.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		want := `ctx.txt-4-line 4
ctx.txt:5:line 5 needle
ctx.txt-6-line 6
ctx.txt:7:line 7 needle
ctx.txt-8-line 8
--
ctx.txt-14-line 14
ctx.txt:15:line 15 needle
ctx.txt:16:line 16 needle
ctx.txt-17-line 17
--
ctx.txt-29-line 29
ctx.txt:30:line 30 needle
ctx.txt-31-line 31
--
ctx.txt-39-line 39
ctx.txt:40:line 40 needle
Note: path a.txt is excluded by the include/exclude globs.
`
		if got := r.Render(); got != want {
			t.Errorf("%s:\n%s", e, got)
		}
	}
}

type memOverlay map[string]string

func (m memOverlay) Open() []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func (m memOverlay) Content(abs string) ([]byte, bool) {
	s, ok := m[abs]
	return []byte(s), ok
}

func TestOverlay(t *testing.T) {
	root := buildFixture(t)
	ov := memOverlay{
		filepath.Join(root, "a.txt"):          "unsaved needle here\nhello from the buffer\n",
		filepath.Join(root, "new/unsaved.go"): "package x // needle in a new file\n",
		filepath.Join(root, "build/out.txt"):  "needle in an ignored file\n",
		filepath.Join(root, ".hidden.txt"):    "needle in a hidden file\n",
		filepath.Join(root, "bin2.txt"):       "needle\x00binary buffer\n",
		filepath.Join(root, "linkdir"):        "needle in a path that is a symlink on disk\n",
		"/elsewhere/x.txt":                    "needle outside the root\n",
	}
	for _, e := range enginesForTest(t) {
		r, err := Grep(context.Background(), GrepOptions{Root: root, Pattern: "needle|hello world", Engine: e, Overlay: ov, Mode: ModeContent, Exclude: []string{"big.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range r.Files {
			for _, l := range f.Lines {
				got = append(got, fmt.Sprintf("%s:%d:%v:%s", f.Path, l.Number, f.Unsaved, l.Text))
			}
		}
		want := []string{
			"a.txt:1:true:unsaved needle here",
			"ctx.txt:5:false:line 5 needle", "ctx.txt:7:false:line 7 needle", "ctx.txt:15:false:line 15 needle",
			"ctx.txt:16:false:line 16 needle", "ctx.txt:30:false:line 30 needle", "ctx.txt:40:false:line 40 needle",
			"new/unsaved.go:1:true:package x // needle in a new file",
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: got\n%s", e, strings.Join(got, "\n"))
		}
		if !strings.Contains(r.Render(), "Note: searched the unsaved editor content of a.txt, new/unsaved.go.") {
			t.Errorf("%s: render:\n%s", e, r.Render())
		}
		// A document that exists only in the editor can be named as the path.
		r, err = Grep(context.Background(), GrepOptions{Root: root, Pattern: "needle", Engine: e, Overlay: ov, Paths: []string{"new/unsaved.go"}})
		if err != nil || r.TotalMatches != 1 || !r.Files[0].Unsaved {
			t.Errorf("%s: unsaved path: %v %+v", e, err, r)
		}
		// Out of scope: the buffer is not searched.
		r, err = Grep(context.Background(), GrepOptions{Root: root, Pattern: "needle", Engine: e, Overlay: ov, Paths: []string{"sub"}})
		if err != nil || r.TotalFiles != 0 {
			t.Errorf("%s: scope: %v %+v", e, err, r)
		}
		// Hidden on: the hidden buffer is searched instead of the disk file.
		r, err = Grep(context.Background(), GrepOptions{Root: root, Pattern: "needle|hidden", Engine: e, Overlay: ov, Hidden: true, Paths: []string{".hidden.txt"}})
		if err != nil || r.TotalMatches != 1 || r.Files[0].Lines[0].Text != "needle in a hidden file" {
			t.Errorf("%s: hidden buffer: %v %+v", e, err, r)
		}
	}
}

// writeFakeRg writes an executable that stands in for ripgrep.
func writeFakeRg(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-rg")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCancellation(t *testing.T) {
	root := buildFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, e := range []Engine{EngineGo, EngineRipgrep, EngineAuto} {
		_, err := Grep(ctx, GrepOptions{Root: root, Pattern: "hello", Engine: e, RgPath: writeFakeRg(t, "exec sleep 30")})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v", e, err)
		}
	}
	// A ripgrep that hangs is killed when the deadline passes.
	slow := writeFakeRg(t, "echo '{\"type\":\"begin\",\"data\":{\"path\":{\"text\":\"./a.txt\"}}}'\nexec sleep 30")
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Grep(ctx, GrepOptions{Root: root, Pattern: "hello", Engine: EngineRipgrep, RgPath: slow})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow rg: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("slow rg was not killed: %v", d)
	}
	// The Go engine stops mid-walk: cancel from the overlay hook, after validation.
	big := t.TempDir()
	for i := 0; i < 200; i++ {
		d := filepath.Join(big, fmt.Sprintf("d%03d", i))
		os.MkdirAll(d, 0o755)
		for j := 0; j < 20; j++ {
			os.WriteFile(filepath.Join(d, fmt.Sprintf("f%02d.txt", j)), []byte("hello\n"), 0o644)
		}
	}
	ctx, cancel = context.WithCancel(context.Background())
	_, err = Grep(ctx, GrepOptions{Root: big, Pattern: "hello", Engine: EngineGo, Overlay: cancelOverlay(cancel)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("go engine: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	_, err = Glob(ctx, GlobOptions{Root: big, Pattern: "**/*.txt"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err = Glob(ctx, GlobOptions{Root: big, Pattern: "**/*.txt"}); !errors.Is(err, context.Canceled) {
		t.Errorf("glob: %v", err)
	}
	if _, err = Tree(ctx, TreeOptions{Root: big}); !errors.Is(err, context.Canceled) {
		t.Errorf("tree: %v", err)
	}
}

type cancelOverlay context.CancelFunc

func (c cancelOverlay) Open() []string                { c(); return nil }
func (c cancelOverlay) Content(string) ([]byte, bool) { return nil, false }

func TestRgFailureFallback(t *testing.T) {
	root := buildFixture(t)
	broken := writeFakeRg(t, "echo 'rg: something went wrong' >&2\nexit 2")
	r, err := Grep(context.Background(), GrepOptions{Root: root, Pattern: "hello", Engine: EngineAuto, RgPath: broken, Paths: []string{"a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Engine != "go" || r.TotalMatches != 2 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "something went wrong") {
		t.Errorf("fallback: %+v", r)
	}
	_, err = Grep(context.Background(), GrepOptions{Root: root, Pattern: "hello", Engine: EngineRipgrep, RgPath: broken})
	if err == nil || !strings.Contains(err.Error(), "something went wrong") {
		t.Errorf("forced rg: %v", err)
	}
	_, err = Grep(context.Background(), GrepOptions{Root: root, Pattern: "hello", Engine: EngineRipgrep, RgPath: "no-such-rg-binary"})
	if err == nil {
		t.Error("missing rg: no error")
	}
	r, err = Grep(context.Background(), GrepOptions{Root: root, Pattern: "hello", RgPath: "no-such-rg-binary", Paths: []string{"a.txt"}})
	if err != nil || r.Engine != "go" {
		t.Errorf("auto without rg: %v %+v", err, r)
	}
}

func TestTargetNotes(t *testing.T) {
	root := buildFixture(t)
	for _, e := range enginesForTest(t) {
		r, err := Grep(context.Background(), GrepOptions{Root: root, Pattern: "hello", Engine: e, Paths: []string{"build"}})
		if err != nil || r.TotalMatches != 1 || !strings.Contains(r.Render(), "Note: path build is ignored") {
			t.Errorf("%s: %v\n%s", e, err, r.Render())
		}
		r, err = Grep(context.Background(), GrepOptions{Root: root, Pattern: "hello", Engine: e, Paths: []string{".hdir"}})
		if err != nil || r.TotalMatches != 2 || !strings.Contains(r.Render(), "Note: path .hdir is hidden") {
			t.Errorf("%s: %v\n%s", e, err, r.Render())
		}
		r, err = Grep(context.Background(), GrepOptions{Root: root, Pattern: "nothing matches this", Engine: e})
		if err != nil || r.Render() != "No matches found.\n" {
			t.Errorf("%s: %v\n%q", e, err, r.Render())
		}
	}
}

func TestIgnoreRules(t *testing.T) {
	type c struct {
		path  string
		dir   bool
		match bool
	}
	cases := map[string][]c{
		"foo":         {{"foo", false, true}, {"a/foo", false, true}, {"a/foo/b", false, false}, {"foox", false, false}},
		"/foo":        {{"foo", false, true}, {"a/foo", false, false}},
		"foo/":        {{"foo", true, true}, {"foo", false, false}, {"a/foo", true, true}},
		"a/b":         {{"a/b", false, true}, {"x/a/b", false, false}},
		"a/**/b":      {{"a/b", false, true}, {"a/x/y/b", false, true}, {"a/x/b/c", false, false}},
		"**/a/b":      {{"a/b", false, true}, {"a/x/a/b", false, true}, {"x/a/b", false, true}, {"a/x/b", false, false}},
		"a/**":        {{"a", true, false}, {"a/x", false, true}, {"a/x/y", false, true}},
		"*.{go,md}":   {{"x.go", false, true}, {"d/x.md", false, true}, {"x.txt", false, false}},
		"[!a-c]*":     {{"d", false, true}, {"b", false, false}},
		"[^a-c]*":     {{"d", false, true}, {"b", false, false}},
		"[]x]":        {{"]", false, true}, {"x", false, true}, {"y", false, false}},
		`\#x`:         {{"#x", false, true}},
		`\!x`:         {{"!x", false, true}},
		`a\ `:         {{"a ", false, true}, {"a", false, false}},
		"a   ":        {{"a", false, true}},
		"foo**bar":    {{"fooXbar", false, true}, {"foo/bar", false, false}},
		"*":           {{"x", false, true}, {".x", false, true}, {"d/x", false, true}},
		"**":          {{"x", false, true}, {"d/x", false, true}},
		"st*r.txt":    {{"st*r.txt", false, true}, {"stXr.txt", false, true}},
		`br\[ack]et`:  {{"br[ack]et", false, true}, {"brack]et", false, false}},
		"éé/*.txt":    {{"éé/x.txt", false, true}},
		"dir/sub/":    {{"dir/sub", true, true}, {"dir/sub", false, false}},
		"!neg":        {{"neg", false, true}},
		"a?c":         {{"abc", false, true}, {"a/c", false, false}},
		"x/**/y/**/z": {{"x/y/z", false, true}, {"x/1/y/2/3/z", false, true}, {"x/1/z", false, false}},
		"**/src2/gen": {{"src2/x/src2/gen", true, true}},
	}
	for line, cs := range cases {
		r, ok, err := compileRule(line)
		if err != nil || !ok {
			t.Errorf("%q: %v %v", line, ok, err)
			continue
		}
		rs := &ruleSet{}
		rs.add(r)
		for _, k := range cs {
			comps := strings.Split(k.path, "/")
			p := relPath{pre: comps[:len(comps)-1], last: comps[len(comps)-1]}
			if got := rs.match(p, k.dir) != matchNone; got != k.match {
				t.Errorf("%q vs %q (dir %v): got %v", line, k.path, k.dir, got)
			}
		}
	}
	for _, line := range []string{"", "   ", "# comment", "!", "/"} {
		if _, ok, _ := compileRule(line); ok {
			t.Errorf("%q should be skipped", line)
		}
	}
	for _, line := range []string{"[abc", "a{b,{c}}", `x\`, "[z-a]", "{a", "trailing\\  "} {
		if _, _, err := compileRule(line); err == nil {
			t.Errorf("%q should not compile", line)
		}
	}
}

// TestGitCheckIgnore cross-checks the ignore decisions with git itself on the fixture paths
// that do not involve ripgrep-only features (.ignore, .rgignore, braces).
func TestGitCheckIgnore(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+root, "XDG_CONFIG_HOME="+root)
		out, _ := cmd.Output()
		return string(out)
	}
	run("init", "-q", ".")
	files := map[string]string{
		".gitignore":        "*.log\nbuild/\n/root-only.txt\n**/gen/*.tmp\ndeep/**\n!deep/keep.txt\n[Tt]emp[0-9].txt\n!important.log\ndocs/private/\n*\n!*/\n!*.go\n!*.txt\n!*.log\n!.gitignore\n",
		"sub/.gitignore":    "!keep.log\nlocal-*.txt\n*.go\n!main.go\n",
		".git/info/exclude": "excluded.txt\n",
		"a.txt":             "", "root-only.txt": "", "sub/root-only.txt": "", "x.log": "", "important.log": "",
		"sub/keep.log": "", "sub/local-a.txt": "", "sub/main.go": "", "sub/other.go": "", "build/x.txt": "",
		"sub/build/y.txt": "", "gen/a.tmp": "", "x/gen/b.tmp": "", "deep/keep.txt": "", "deep/a/b.txt": "",
		"temp1.txt": "", "tempA.txt": "", "docs/private/p.txt": "", "docs/public.txt": "", "excluded.txt": "",
		"other.bin": "", "d/e/f.go": "", "d/e/f.bin": "",
	}
	for p, c := range files {
		fp := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(fp), 0o755)
		os.WriteFile(fp, []byte(c), 0o644)
	}
	// git's view: files it would add.
	gitFiles := strings.Fields(run("ls-files", "--others", "--exclude-standard"))
	slices.Sort(gitFiles)
	var ours []string
	w := &walker{root: root, filter: &filter{hidden: true}}
	s := &scope{root: root, filter: *w.filter}
	ch := make(chan string, 1000)
	w.visit = func(_ int, abs, rel string) { ch <- rel }
	if err := w.run(context.Background(), s, []target{{abs: root, isDir: true}}); err != nil {
		t.Fatal(err)
	}
	close(ch)
	for p := range ch {
		ours = append(ours, p)
	}
	slices.Sort(ours)
	if len(gitFiles) == 0 {
		t.Skip("git ls-files printed nothing")
	}
	if !slices.Equal(ours, gitFiles) {
		t.Errorf("walk:\n %q\ngit:\n %q", ours, gitFiles)
	}
}

// TestSegmentShortcuts checks that the direct comparisons used for simple glob components
// agree with the path.Match pattern they stand for.
func TestSegmentShortcuts(t *testing.T) {
	names := []string{"", "a", "ab", "abc", ".log", "x.log", "x.log.gz", "log", "logx", "xlogx", "a*b", "*", "é.log", "README"}
	for _, pat := range []string{"*.log", "log*", "*log*", "*", "a*b", "x.log", `\*`, "*\\*", "README", "*é*"} {
		seg, err := compileSeg(pat)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := compileSeg(pat)
		if err != nil {
			t.Fatal(err)
		}
		if ref.kind != segLit {
			ref.kind = segPattern
		}
		for _, n := range names {
			if n == "" {
				continue
			}
			if seg.match(n) != ref.match(n) {
				t.Errorf("%q vs %q: shortcut %v, path.Match %v (kind %d)", pat, n, seg.match(n), ref.match(n), seg.kind)
			}
		}
	}
}

// TestAutoBudget: with EngineAuto a pattern that floods ripgrep's JSON output is handed to the
// Go engine, with the same result.
func TestAutoBudget(t *testing.T) {
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("!!!!!!!! rg is not installed: the rg budget is NOT tested !!!!!!!!")
	}
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "many.txt"), []byte(strings.Repeat("match me\n", autoRgBudget+10)), 0o644)
	os.WriteFile(filepath.Join(root, "few.txt"), []byte("match me once\n"), 0o644)
	auto, err := Grep(context.Background(), GrepOptions{Root: root, Pattern: "match"})
	if err != nil {
		t.Fatal(err)
	}
	forced, err := Grep(context.Background(), GrepOptions{Root: root, Pattern: "match", Engine: EngineRipgrep})
	if err != nil {
		t.Fatal(err)
	}
	if auto.Engine != "go" || forced.Engine != "rg" {
		t.Errorf("engines: auto %s, forced %s", auto.Engine, forced.Engine)
	}
	if !reflect.DeepEqual(comparable(auto), comparable(forced)) || auto.TotalMatches != autoRgBudget+11 {
		t.Errorf("results differ:\n%s", diffResults(auto, forced))
	}
	small, err := Grep(context.Background(), GrepOptions{Root: root, Pattern: "once"})
	if err != nil || small.Engine != "rg" {
		t.Errorf("small: %v %+v", err, small)
	}
}
