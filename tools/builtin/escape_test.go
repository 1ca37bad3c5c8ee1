package builtin_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/tools"
)

// Every path a prompt-injected model might use to get out of the workspace, through every tool
// that takes a path: each call ends in a typed, readable refusal and nothing on disk changes.
func TestBadPathsAreRefusedByEveryToolAndChangeNothing(t *testing.T) {
	f := newFixture(t)
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	evil := f.dir + "-evil" // a sibling whose name starts with the workspace's
	if err := os.Mkdir(evil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(evil) })
	for _, p := range []string{filepath.Join(outside, "secret.txt"), filepath.Join(evil, "x")} {
		if err := os.WriteFile(p, []byte("secret\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.write("keep.txt", "x\n")
	f.write("sub/file.txt", "x\n")
	for link, target := range map[string]string{
		"out": outside, "outfile": filepath.Join(outside, "secret.txt"), "dangling": filepath.Join(outside, "new.txt"),
		"loop1": "loop2", "loop2": "loop1", "rel-out": "../" + filepath.Base(outside),
	} {
		if err := os.Symlink(target, filepath.Join(f.dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	f.read("keep.txt")
	before := testutil.Snapshot(t, f.dir, outside, evil)

	paths := []string{
		"..",
		"../x",
		"../../../../etc/passwd",
		filepath.Join(outside, "secret.txt"),
		"/etc/passwd",
		"out/secret.txt",
		"outfile",
		"dangling",
		"loop1",
		"loop1/x",
		"out/..",
		"rel-out/secret.txt",
		"../" + filepath.Base(evil) + "/x",
		filepath.Join(evil, "x"),
		"/proc/self/root" + filepath.Join(f.dir, "keep.txt"),
		"/proc/self/cwd",
		"keep\x00.txt",
		strings.Repeat("n", 300),
		strings.Repeat("d/", 2100) + "f",
	}
	type call struct {
		tool string
		args func(p string) map[string]any
	}
	calls := []call{
		{"read", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"write", func(p string) map[string]any { return write(p, "pwned\n") }},
		{"edit", func(p string) map[string]any { return edit(p, "secret", "pwned") }},
		{"glob", func(p string) map[string]any { return map[string]any{"pattern": "**", "path": p} }},
		{"grep", func(p string) map[string]any { return map[string]any{"pattern": "secret", "path": p} }},
		{"ls", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"bash", func(p string) map[string]any {
			return map[string]any{"command": "echo pwned > pwned.txt", "cwd": p}
		}},
	}
	for _, p := range paths {
		for _, c := range calls {
			r := f.call(c.tool, c.args(p))
			if r.Type != tools.PermissionDenied {
				t.Errorf("%s %q: %s: %s", c.tool, p, r.Type, r.Text())
				continue
			}
			if text := r.Text(); text == "" || strings.Contains(text, "secret\n") || strings.Contains(text, "panic") {
				t.Errorf("%s %q: unreadable or leaking message %q", c.tool, p, text)
			}
		}
	}
	sameSnapshot(t, before, testutil.Snapshot(t, f.dir, outside, evil))
}

// Calls the model gets wrong inside the workspace: each a typed, readable error, nothing on disk
// changes.
func TestBadCallsChangeNothing(t *testing.T) {
	f := newFixture(t)
	f.write("a.go", "x := 1\nx := 1\n")
	f.write("bin.dat", "\x00\x01\x02")
	f.read("a.go")
	f.read("bin.dat")
	if err := syscall.Mkfifo(filepath.Join(f.dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.Snapshot(t, f.dir)
	cases := []struct {
		tool string
		args any
		want tools.ResultType
	}{
		{"edit", edit("a.go", "", "y"), tools.InvalidArgs},
		{"edit", edit("a.go", "nope", "y"), tools.InvalidArgs},
		{"edit", edit("a.go", "x := 1", "y"), tools.InvalidArgs},
		{"edit", edit("bin.dat", "\x01", "y"), tools.InvalidArgs},
		{"edit", `{"path":"a.go","old_string":"x","new_string":"y","surprise":1}`, tools.InvalidArgs},
		{"edit", `not json`, tools.InvalidArgs},
		{"grep", map[string]any{"pattern": "(unclosed"}, tools.InvalidArgs},
		{"grep", map[string]any{"pattern": "a\nb"}, tools.InvalidArgs},
		{"grep", map[string]any{"pattern": `\1`}, tools.InvalidArgs},
		{"glob", map[string]any{"pattern": "../*"}, tools.InvalidArgs},
		{"glob", map[string]any{"pattern": "/etc/*"}, tools.InvalidArgs},
		{"write", map[string]any{"path": "", "content": "x"}, tools.InvalidArgs},
		{"read", map[string]any{"path": "a.go", "limit": "lots"}, tools.InvalidArgs},
		{"bash", map[string]any{"command": ""}, tools.InvalidArgs},
		{"read", map[string]any{"path": "fifo"}, tools.PermissionDenied},
		{"edit", edit("fifo", "a", "b"), tools.PermissionDenied},
		{"write", write("fifo", "x"), tools.PermissionDenied},
		{"grep", map[string]any{"pattern": "x", "path": "fifo"}, tools.InvalidArgs},
		{"write", write("a.go/new.txt", "x"), tools.InvalidArgs},
		{"write", write("a.go/deeper/new.txt", "x"), tools.InvalidArgs},
	}
	for _, c := range cases {
		r := f.call(c.tool, c.args)
		if r.Type != c.want || r.Text() == "" {
			t.Errorf("%s %v: %s %q, want %s", c.tool, c.args, r.Type, r.Text(), c.want)
		}
	}
	sameSnapshot(t, before, testutil.Snapshot(t, f.dir))
}
