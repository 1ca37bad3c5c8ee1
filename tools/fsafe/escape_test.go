package fsafe

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/tools"
)

type escOp int

const (
	opResolve escOp = iota
	opRead          // FS.Read and FS.ReadLines
	opWrite         // FS.Read (errors ignored), FS.PrepareWrite, FS.Commit
)

type escCase struct {
	name  string
	setup func(t *testing.T, e *env)
	path  func(e *env) string
	op    escOp
	want  tools.ResultType // "" for success
	rel   string           // canonical relative path expected on success
	check func(t *testing.T, e *env, p Path)
	// hardLink: the case reads an outside file's content through a hard link on purpose.
	hardLink bool
}

func rel(s string) func(*env) string { return func(*env) string { return s } }

func TestPathEscapes(t *testing.T) {
	ctx := context.Background()
	cases := []escCase{
		{name: "plain file", path: rel("a.txt"), op: opRead, rel: "a.txt"},
		{name: "nested file", path: rel("sub/b.txt"), op: opRead, rel: "sub/b.txt"},
		{name: "dot components", path: rel("./sub/./b.txt"), op: opRead, rel: "sub/b.txt"},
		{name: "dotdot that stays inside", path: rel("sub/../a.txt"), op: opRead, rel: "a.txt"},
		{name: "trailing slash on a directory", path: rel("sub/"), op: opResolve, rel: "sub"},
		{name: "dotdot out of the workspace", path: rel("../outside/secret.txt"), op: opRead, want: tools.PermissionDenied},
		{name: "dotdot out through a subdirectory", path: rel("sub/../../outside/secret.txt"), op: opRead, want: tools.PermissionDenied},
		{name: "many dotdots to /etc", path: rel("../../../../../../../../etc/passwd"), op: opRead, want: tools.PermissionDenied},
		{name: "dotdot after a missing directory", path: rel("nope/../../outside/secret.txt"), op: opRead, want: tools.PermissionDenied},
		{name: "absolute path outside", path: func(e *env) string { return filepath.Join(e.outside, "secret.txt") }, op: opRead, want: tools.PermissionDenied},
		{name: "absolute /etc/passwd", path: rel("/etc/passwd"), op: opRead, want: tools.PermissionDenied},
		{name: "absolute path inside", path: func(e *env) string { return filepath.Join(e.ws, "a.txt") }, op: opRead, rel: "a.txt"},
		{name: "sibling sharing the prefix, absolute", path: func(e *env) string { return filepath.Join(e.evil, "x.txt") }, op: opRead, want: tools.PermissionDenied},
		{name: "sibling sharing the prefix, relative write", path: rel("../ws-evil/x.txt"), op: opWrite, want: tools.PermissionDenied},
		{name: "symlink to the sibling", setup: link("../ws-evil", "evil-link"), path: rel("evil-link/x.txt"), op: opWrite, want: tools.PermissionDenied},
		{name: "symlink to an outside file, read", setup: linkOut("secret.txt", "out-file"), path: rel("out-file"), op: opRead, want: tools.PermissionDenied},
		{name: "symlink to an outside file, write", setup: linkOut("secret.txt", "out-file"), path: rel("out-file"), op: opWrite, want: tools.PermissionDenied},
		{name: "symlink to an outside directory, read", setup: linkOut("", "out-dir"), path: rel("out-dir/secret.txt"), op: opRead, want: tools.PermissionDenied},
		{name: "symlink to an outside directory, new file", setup: linkOut("", "out-dir"), path: rel("out-dir/new.txt"), op: opWrite, want: tools.PermissionDenied},
		{name: "dangling symlink pointing outside", setup: linkOut("created.txt", "dangle"), path: rel("dangle"), op: opWrite, want: tools.PermissionDenied},
		{name: "dangling directory symlink pointing outside", setup: linkOut("nodir", "dangle-dir"), path: rel("dangle-dir/f.txt"), op: opWrite, want: tools.PermissionDenied},
		{name: "relative symlink climbing out", setup: link("../../outside", "sub/up"), path: rel("sub/up/secret.txt"), op: opRead, want: tools.PermissionDenied},
		{name: "symlink loop", setup: func(t *testing.T, e *env) {
			mustSymlink(t, "loop2", filepath.Join(e.ws, "loop1"))
			mustSymlink(t, "loop1", filepath.Join(e.ws, "loop2"))
		}, path: rel("loop1"), op: opRead, want: tools.PermissionDenied},
		{name: "self loop as a directory", setup: link("self", "self"), path: rel("self/x.txt"), op: opWrite, want: tools.PermissionDenied},
		{name: "link/.. is the link target's parent (outside)", setup: linkOut("deep", "deep-link"), path: rel("deep-link/../secret.txt"), op: opRead, want: tools.PermissionDenied},
		{name: "link/.. that stays inside", setup: link("sub", "in-link"), path: rel("in-link/../a.txt"), op: opRead, rel: "a.txt"},
		{name: "/proc/self/root to an outside file", path: func(e *env) string { return "/proc/self/root" + filepath.Join(e.outside, "secret.txt") }, op: opRead, want: tools.PermissionDenied},
		{name: "/proc/self/root to a workspace file", path: func(e *env) string { return "/proc/self/root" + filepath.Join(e.ws, "a.txt") }, op: opWrite, want: tools.PermissionDenied},
		{name: "/proc/self/cwd", path: rel("/proc/self/cwd/x"), op: opRead, want: tools.PermissionDenied},
		{name: "symlink into /proc/self/root", setup: func(t *testing.T, e *env) {
			mustSymlink(t, "/proc/self/root"+filepath.Join(e.outside, "secret.txt"), filepath.Join(e.ws, "proc-link"))
		}, path: rel("proc-link"), op: opRead, want: tools.PermissionDenied},
		{name: "NUL byte", path: rel("a.txt\x00.png"), op: opRead, want: tools.PermissionDenied},
		{name: "name longer than NAME_MAX", path: rel(strings.Repeat("n", 300)), op: opWrite, want: tools.PermissionDenied},
		{name: "path longer than PATH_MAX", path: rel(strings.Repeat("d/", 2100) + "f"), op: opWrite, want: tools.PermissionDenied},
		{name: "relative symlink inside", setup: link("sub/b.txt", "rel-in"), path: rel("rel-in"), op: opRead, rel: "sub/b.txt"},
		{name: "absolute symlink inside (os.Root alone would refuse it)", setup: func(t *testing.T, e *env) {
			mustSymlink(t, filepath.Join(e.ws, "sub", "b.txt"), filepath.Join(e.ws, "abs-in"))
		}, path: rel("abs-in"), op: opRead, rel: "sub/b.txt"},
		{name: "write through an absolute symlink inside", setup: func(t *testing.T, e *env) {
			mustSymlink(t, filepath.Join(e.ws, "sub", "b.txt"), filepath.Join(e.ws, "abs-in"))
		}, path: rel("abs-in"), op: opWrite, rel: "sub/b.txt", check: func(t *testing.T, e *env, p Path) {
			if got := readString(t, filepath.Join(e.ws, "sub", "b.txt")); got != "new content\n" {
				t.Errorf("target = %q", got)
			}
			if fi, err := os.Lstat(filepath.Join(e.ws, "abs-in")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the symlink itself was replaced: %v %v", fi, err)
			}
		}},
		{name: "dangling symlink pointing inside", setup: link("sub/created.txt", "new-link"), path: rel("new-link"), op: opWrite, rel: "sub/created.txt", check: func(t *testing.T, e *env, p Path) {
			if got := readString(t, filepath.Join(e.ws, "sub", "created.txt")); got != "new content\n" {
				t.Errorf("created = %q", got)
			}
		}},
		{name: "case trick .GIT/config is protected", setup: func(t *testing.T, e *env) { mustWrite(t, filepath.Join(e.ws, ".GIT", "config"), "[core]\n") },
			path: rel(".GIT/config"), op: opResolve, rel: ".GIT/config", check: wantProtected(true)},
		{name: "case trick .Vscode/settings.json is protected", path: rel(".Vscode/settings.json"), op: opResolve, rel: ".Vscode/settings.json", check: wantProtected(true)},
		{name: "nested repository hook is protected", path: rel("sub/.git/hooks/pre-commit"), op: opResolve, rel: "sub/.git/hooks/pre-commit", check: wantProtected(true)},
		{name: "protected through a symlink", setup: link(".git", "g"), path: rel("g/config"), op: opResolve, rel: ".git/config", check: wantProtected(true)},
		{name: ".env is sensitive to read", path: rel(".env"), op: opResolve, rel: ".env", check: func(t *testing.T, e *env, p Path) {
			if perm := p.Permission(tools.AccessRead); !perm.Sensitive || perm.Reason == "" {
				t.Errorf("permission = %+v", perm)
			}
		}},
		{name: "FIFO read does not block", setup: mkfifo("pipe"), path: rel("pipe"), op: opRead, want: tools.PermissionDenied},
		{name: "FIFO write", setup: mkfifo("pipe"), path: rel("pipe"), op: opWrite, want: tools.PermissionDenied},
		{name: "device through a symlink (/dev/null)", setup: link("/dev/null", "null"), path: rel("null"), op: opWrite, want: tools.PermissionDenied},
		{name: "device node inside", setup: func(t *testing.T, e *env) {
			if err := syscall.Mknod(filepath.Join(e.ws, "zero"), syscall.S_IFCHR|0o666, 1<<8|5); err != nil {
				t.Skipf("mknod: %v (needs root)", err)
			}
		}, path: rel("zero"), op: opRead, want: tools.PermissionDenied},
		{name: "socket", setup: func(t *testing.T, e *env) {
			l, err := net.Listen("unix", filepath.Join(e.ws, "sock"))
			if err != nil {
				t.Skipf("unix socket: %v", err)
			}
			t.Cleanup(func() { l.Close() })
		}, path: rel("sock"), op: opRead, want: tools.PermissionDenied},
		{name: "hard link to an outside file is flagged, and a write breaks the link", hardLink: true, setup: func(t *testing.T, e *env) {
			if err := os.Link(filepath.Join(e.outside, "secret.txt"), filepath.Join(e.ws, "hl")); err != nil {
				t.Skipf("link: %v", err)
			}
		}, path: rel("hl"), op: opWrite, rel: "hl", check: func(t *testing.T, e *env, p Path) {
			if !p.Info().HardLinked() {
				t.Errorf("info = %+v, want HardLinked", p.Info())
			}
			if perm := p.Permission(tools.AccessRead); !perm.Sensitive || !strings.Contains(perm.Reason, "hard link") {
				t.Errorf("read permission = %+v, want Sensitive for the hard link", perm)
			}
			if got := readString(t, filepath.Join(e.ws, "hl")); got != "new content\n" {
				t.Errorf("hl = %q", got)
			}
		}},
		{name: "a directory is not a file", path: rel("sub"), op: opRead, want: tools.InvalidArgs},
		{name: "the workspace root is not a file", path: rel("."), op: opWrite, want: tools.InvalidArgs},
		{name: "empty path", path: rel(""), op: opResolve, want: tools.InvalidArgs},
		{name: "tilde is not expanded", path: rel("~/.ssh/id_rsa"), op: opRead, want: tools.NotFound},
		{name: "a file used as a directory", path: rel("a.txt/x"), op: opRead, want: tools.NotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			if tc.setup != nil {
				tc.setup(t, e)
			}
			outsideBefore := testutil.Snapshot(t, e.outside, e.evil)
			name := tc.path(e)

			var got error
			var p Path
			seen := make([][]byte, 0, 4)
			done := make(chan struct{})
			go func() { // a FIFO must never block: run the operation with a deadline
				defer close(done)
				p, got = e.w.Resolve(name)
				switch tc.op {
				case opRead:
					c, err := e.fs.Read(ctx, name)
					if err == nil {
						seen = append(seen, c.Data)
					}
					pg, err2 := e.fs.ReadLines(ctx, name, 0, 0)
					if err2 == nil {
						for _, l := range pg.Lines {
							seen = append(seen, []byte(l.Text))
						}
					}
					if err != nil {
						got = err
					} else if err2 != nil {
						got = err2
					}
				case opWrite:
					if c, err := e.fs.Read(ctx, name); err == nil {
						seen = append(seen, c.Data)
					}
					tg, err := e.fs.PrepareWrite(ctx, name)
					if err == nil {
						seen = append(seen, tg.Content)
						_, err = e.fs.Commit(ctx, tg, []byte("new content\n"))
					}
					got = err
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the operation blocked")
			}

			if errType(got) != tc.want {
				t.Fatalf("%q: error %v (type %q), want type %q", name, got, errType(got), tc.want)
			}
			if tc.want == "" {
				if p.Rel() != tc.rel {
					t.Errorf("rel = %q, want %q", p.Rel(), tc.rel)
				}
				if !strings.HasPrefix(p.Abs(), e.w.Roots()[0]+"/") && p.Abs() != e.w.Roots()[0] {
					t.Errorf("abs = %q is not under the root", p.Abs())
				}
			} else if got != nil && strings.TrimSpace(got.Error()) == string(tc.want)+":" {
				t.Errorf("error without a message: %v", got)
			}
			if !tc.hardLink {
				for _, b := range seen {
					if containsSecret(b) {
						t.Fatalf("the outside secret was read through %q", name)
					}
				}
			}
			if c := testutil.SnapshotChanges(outsideBefore, testutil.Snapshot(t, e.outside, e.evil)); len(c) > 0 {
				t.Fatalf("outside changed: %s", strings.Join(c, "; "))
			}
			if tc.check != nil {
				tc.check(t, e, p)
			}
		})
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
}

func link(target, name string) func(*testing.T, *env) {
	return func(t *testing.T, e *env) { mustSymlink(t, target, filepath.Join(e.ws, name)) }
}

func linkOut(target, name string) func(*testing.T, *env) {
	return func(t *testing.T, e *env) {
		mustSymlink(t, filepath.Join(e.outside, target), filepath.Join(e.ws, name))
	}
}

func mkfifo(name string) func(*testing.T, *env) {
	return func(t *testing.T, e *env) {
		if err := syscall.Mkfifo(filepath.Join(e.ws, name), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
}

func wantProtected(want bool) func(*testing.T, *env, Path) {
	return func(t *testing.T, e *env, p Path) {
		perm := p.Permission(tools.AccessWrite)
		if perm.Protected != want || (want && perm.Reason == "") {
			t.Errorf("write permission of %s = %+v, want Protected=%v", p.Rel(), perm, want)
		}
		if len(perm.Paths) != 1 || perm.Paths[0] != p.Abs() {
			t.Errorf("paths = %v", perm.Paths)
		}
	}
}

func TestNewWorkspaceRefusesBadRoots(t *testing.T) {
	dir := t.TempDir()
	for _, root := range []string{"relative/dir", "/", filepath.Join(dir, "missing")} {
		if w, err := NewWorkspace(root); err == nil {
			w.Close()
			t.Errorf("NewWorkspace(%q) succeeded", root)
		}
	}
	f := filepath.Join(dir, "file")
	mustWrite(t, f, "x")
	if _, err := NewWorkspace(f); err == nil {
		t.Errorf("a file as a root was accepted")
	}
}

func TestMultipleRoots(t *testing.T) {
	base := t.TempDir()
	r1, r2 := filepath.Join(base, "one"), filepath.Join(base, "two")
	mustWrite(t, filepath.Join(r1, "a.txt"), "1")
	mustWrite(t, filepath.Join(r2, "b.txt"), "2")
	// The second root is reached through a symlink: it is canonicalized.
	mustSymlink(t, r2, filepath.Join(base, "two-link"))
	w, err := NewWorkspace(r1, filepath.Join(base, "two-link"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := w.Roots(); got[1] != r2 {
		t.Fatalf("roots = %v", got)
	}
	p, err := w.Resolve(filepath.Join(base, "two-link", "b.txt"))
	if err != nil || p.Root() != r2 || p.Rel() != "b.txt" {
		t.Fatalf("Resolve = %+v, %v", p, err)
	}
	if _, err := w.Resolve("b.txt"); err != nil {
		t.Fatal(err) // relative to the first root: resolves (does not exist there)
	}
	p, err = w.Resolve("../two/b.txt") // leaves root one, lands in root two: inside
	if err != nil || p.Root() != r2 {
		t.Fatalf("Resolve(../two/b.txt) = %+v, %v", p, err)
	}
	data, _, err := ReadFile(p, 100)
	if err != nil || string(data) != "2" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	if _, err := w.Resolve(filepath.Join(base, "three")); errType(err) != tools.PermissionDenied {
		t.Fatalf("outside both roots: %v", err)
	}
}

// A directory swapped for an in-root symlink between Resolve and the open must be detected:
// os.Root would follow it (it stays inside), but the policy decided on another path.
func TestSwapInsideRootIsDetected(t *testing.T) {
	e := newEnv(t, Options{})
	mustWrite(t, filepath.Join(e.ws, "foo", "hooks", "pre-commit"), "plain\n")
	mustWrite(t, filepath.Join(e.ws, ".git", "hooks", "pre-commit"), "#!/bin/sh\n")
	p, err := e.w.Resolve("foo/hooks/pre-commit")
	if err != nil {
		t.Fatal(err)
	}
	if p.Permission(tools.AccessWrite).Protected {
		t.Fatal("foo/hooks is not protected")
	}
	// Now make foo a symlink to .git.
	if err := os.Rename(filepath.Join(e.ws, "foo"), filepath.Join(e.ws, "foo.real")); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, ".git", filepath.Join(e.ws, "foo"))
	if _, _, err := ReadFile(p, 1000); errType(err) != tools.IOError {
		t.Errorf("read after the swap: %v, want io_error", err)
	}
	if _, err := WriteFile(p, []byte("pwned"), WriteOptions{}); err == nil {
		t.Errorf("write after the swap succeeded")
	}
	if got := readString(t, filepath.Join(e.ws, ".git", "hooks", "pre-commit")); got != "#!/bin/sh\n" {
		t.Fatalf("the hook was written: %q", got)
	}
}
