package search

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildFixture writes the tricky tree used by the parity tests and returns its root.
func buildFixture(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	w := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A repository root: .git is never searched, info/exclude applies.
	w(".git/HEAD", "ref: refs/heads/main\nhello from HEAD\n")
	w(".git/config", "[core]\n")
	w(".git/info/exclude", "# local excludes\nexcluded-by-info.txt\n")
	w(".git/objects/ab/cdef", "hello inside git objects\n")
	w("excluded-by-info.txt", "hello excluded by info/exclude\n")
	w(".gitignore", strings.Join([]string{
		"# comment",
		"*.log",
		"build/",
		"/root-only.txt",
		"**/gen/*.tmp",
		"deep/**",
		"!deep/keep.txt",
		"*.{bak,orig}",
		"[Tt]emp[0-9].txt",
		`space\ name.txt`,
		"!.env.example",
		"**/src2/generated",
		"trailing-space.txt   ",
		"docs/private/",
		"[!a-m]*.skip",
		"",
	}, "\n"))
	w(".ignore", "ignored-by-dotignore.txt\n*.pre\n")
	w(".rgignore", "rg-ignored.txt\n")
	w("a.txt", "hello world\nHello World\nHELLO\nsay hello again\nnothing here\n")
	w("root-only.txt", "hello root only\n")
	w("sub/root-only.txt", "hello not anchored\n")
	w("keep.log", "hello keep log\n")
	w("sub/.gitignore", "!keep.log\nlocal-*.txt\n")
	w("sub/keep.log", "hello sub keep\n")
	w("sub/other.log", "hello other log\n")
	w("sub/local-x.txt", "hello local\n")
	w("sub/deeper/d.txt", "hello deeper\nfoo bar\n")
	w("build/out.txt", "hello build\n")
	w("sub/build/x.txt", "hello sub build\n")
	w("sub2/build", "hello build is a file here\n")
	w("x/gen/a.tmp", "hello gen tmp\n")
	w("gen/b.tmp", "hello gen b\n")
	w("gen/c.txt", "hello gen c\n")
	w("deep/a/b.txt", "hello deep\n")
	w("deep/keep.txt", "hello deep keep\n")
	w("file.bak", "hello bak\n")
	w("file.orig", "hello orig\n")
	w("temp1.txt", "hello temp1\n")
	w("Temp2.txt", "hello Temp2\n")
	w("tempA.txt", "hello tempA\n")
	w("space name.txt", "hello space\n")
	w("trailing-space.txt", "hello trailing\n")
	w("docs/private/p.md", "hello private\n")
	w("docs/public.md", "hello public doc\n")
	w("docs/private.md", "hello private.md is a file\n")
	w("x.skip", "hello x skip\n")
	w("b.skip", "hello b skip\n")
	w("src2/x/src2/generated/f.txt", "hello generated twice\n")
	w("src2/generated/g.txt", "hello generated\n")
	w("ignored-by-dotignore.txt", "hello dotignore\n")
	w("rg-ignored.txt", "hello rgignore\n")
	// .ignore beats a nested .gitignore negation.
	w("prec/.gitignore", "!x.pre\n")
	w("prec/x.pre", "hello prec\n")
	w("prec/y.txt", "hello prec y\n")
	// The whitelist idiom.
	w("wl/.gitignore", "*\n!*/\n!*.go\n")
	w("wl/a.go", "hello wl go\n")
	w("wl/b.txt", "hello wl txt\n")
	w("wl/d/c.go", "hello wl deep go\n")
	w("wl/d/e.txt", "hello wl deep txt\n")
	// A nested repository: the outer .gitignore stops at its root, .ignore does not.
	w("nested/.git/HEAD", "ref: x\n")
	w("nested/.git/info/exclude", "nested-excluded.txt\n")
	w("nested/n.log", "hello nested log\n")
	w("nested/n.pre", "hello nested pre\n")
	w("nested/nested-excluded.txt", "hello nested excluded\n")
	w("nested/.gitignore", "*.tmp\n")
	w("nested/t.tmp", "hello nested tmp\n")
	// A worktree-style .git file whose commondir has an exclude file.
	w("wt/.git", "gitdir: "+filepath.Join(root, "wtgit")+"\n")
	w("wtgit/commondir", "../wtcommon\n")
	w("wtcommon/info/exclude", "wt-excluded.txt\n")
	w("wt/wt-excluded.txt", "hello wt excluded\n")
	w("wt/wt-kept.txt", "hello wt kept\n")
	// Hidden entries.
	w(".hidden.txt", "hello hidden\n")
	w(".hdir/h.txt", "hello hdir\n")
	w(".hdir/.hh.txt", "hello double hidden\n")
	w("sub/.hfile", "hello sub hidden\n")
	w(".github/workflows/ci.yml", "hello ci\n")
	w(".env.example", "hello env example\n")
	w(".env", "hello env\n")
	// Binary files: NUL at the start, NUL after 100 KB of matching lines, NUL with no match.
	w("bin.dat", "hello\x00binary\n")
	var late strings.Builder
	for i := 0; i < 1000; i++ {
		word := "filler"
		if i%50 == 0 {
			word = "hello"
		}
		fmt.Fprintf(&late, "%s line %d %s\n", word, i, strings.Repeat("-", 80))
	}
	late.WriteString("\x00\nhello after nul\n")
	w("late-bin.txt", late.String())
	w("nul-nomatch.bin", "\x00\x01\x02")
	// UTF-16 with BOM: binary for both engines.
	w("utf16.txt", "\xff\xfeh\x00e\x00l\x00l\x00o\x00\n\x00")
	// Unicode, CRLF, empty, no final newline, invalid UTF-8, long lines.
	w("unicode/ünï.txt", "héllo wörld\n日本語 hello\nKELVIN \u212A here\nſtraße STRASSE\nσίσυφος ΣΊΣΥΦΟΣ\n")
	w("crlf.txt", "hello crlf\r\nsecond line\r\nends with hello\r\n\r\nfoo\r\n")
	w("empty.txt", "")
	w("nonl.txt", "first\nhello no newline")
	w("latin1.txt", "caf\xe9 hello\nna\xefve\n")
	w("long.txt", strings.Repeat("x", 1000)+"hello"+strings.Repeat("y", 1000)+"\nshort hello\n")
	// Context.
	var ctx strings.Builder
	for i := 1; i <= 40; i++ {
		if i == 5 || i == 7 || i == 15 || i == 16 || i == 30 || i == 40 {
			fmt.Fprintf(&ctx, "line %d needle\n", i)
		} else {
			fmt.Fprintf(&ctx, "line %d\n", i)
		}
	}
	w("ctx.txt", ctx.String())
	// Ignore files with CRLF line ends, and with a line that is not UTF-8 (ripgrep stops
	// reading the file there).
	w("crlfdir/.gitignore", "*.x\r\n# c\r\n")
	w("crlfdir/a.x", "hello crlf ignored\n")
	w("crlfdir/b.y", "hello crlf kept\n")
	w("badutf/.gitignore", "a.txt\n\xff\nb.txt\n")
	w("badutf/a.txt", "hello a\n")
	w("badutf/b.txt", "hello b\n")
	// A large text file: matches around ripgrep's 64 KiB buffer boundaries, one long line.
	var big strings.Builder
	for i := 0; big.Len() < 300<<10; i++ {
		switch {
		case i%97 == 0:
			fmt.Fprintf(&big, "line %d hello needle\n", i)
		case i == 3000:
			big.WriteString(strings.Repeat("z", 70<<10) + " hello long\n")
		default:
			fmt.Fprintf(&big, "line %d filler text\n", i)
		}
	}
	w("big.txt", big.String())
	// Go files for include globs.
	w("src/main.go", "package main\n\nfunc main() {\n\thello()\n}\n")
	w("src/util/u.go", "package util\n\n// Hello says hello.\nfunc Hello() string { return \"hello\" }\n")
	w("src/util/u_test.go", "package util\n\nfunc TestHello(t *testing.T) { Hello() }\n")
	w("src/a.b", "hello a.b\n")
	w("src/b.c", "hello b.c\n")
	w("weird/co:lon.txt", "hello colon\n")
	w("weird/br[ack]et.txt", "hello bracket\n")
	w("weird/st*r.txt", "hello star\n")
	// Symbolic links are not followed.
	if err := os.Symlink("a.txt", filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	// Stable modification times (Glob sorts by them).
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	i := 0
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			i++
			os.Chtimes(p, base, base.Add(time.Duration(i)*time.Minute))
		}
		return nil
	})
	return root
}
