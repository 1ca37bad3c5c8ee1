//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// maskTree makes a workspace with a secret at the top and one two levels down (s/t/.env.prod),
// and directories without secrets.
func maskTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"a/b/c/d", "s/t", "e/f", "g"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(root, d, "main.go"), "package x\n")
	}
	mustWrite(t, filepath.Join(root, ".env"), "TOKEN=1\n")
	mustWrite(t, filepath.Join(root, "s/t/.env.prod"), "TOKEN=2\n")
	return root
}

func sensitiveRels(t *testing.T, idx *maskIndex, root string) []string {
	t.Helper()
	found, err := idx.find([]string{root}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range found {
		out = append(out, e.rel)
	}
	slices.Sort(out)
	return out
}

// TestMaskIndexFollowsChanges: whatever vouches for a directory's listing — an inotify watch,
// its inode and timestamps alone (no inotify), or a mix (the watch budget spent after three
// directories) — a secret created deep in the tree between two walks, a directory holding one
// renamed elsewhere, and a new directory holding one are all found by the next walk, and the
// moved secret is found at its new path.
func TestMaskIndexFollowsChanges(t *testing.T) {
	for _, variant := range []string{"inotify", "timestamps", "budget"} {
		t.Run(variant, func(t *testing.T) {
			idx := newMaskIndex(variant != "timestamps")
			switch variant {
			case "timestamps":
				// As if every listing were taken three seconds from now: directories just made
				// count as old enough for their timestamps to tell (waitFSTick below keeps a
				// change from landing in the tick of the listing before it).
				sensClock = func() time.Time { return time.Now().Add(3 * time.Second) }
				t.Cleanup(func() { sensClock = time.Now })
			case "budget":
				idx.budget = 3
			}
			root := maskTree(t)
			change := func(f func()) {
				if variant != "inotify" {
					waitFSTick(t, root)
				}
				f()
			}
			want := []string{".env", "s/t/.env.prod"}
			if got := sensitiveRels(t, idx, root); !slices.Equal(got, want) {
				t.Fatalf("first walk: %q, want %q", got, want)
			}
			n, o := sensDirsRead.Load(), sensDirsOpened.Load()
			if got := sensitiveRels(t, idx, root); !slices.Equal(got, want) {
				t.Fatalf("second walk: %q, want %q", got, want)
			}
			if read, opened := sensDirsRead.Load()-n, sensDirsOpened.Load()-o; variant == "inotify" && (read != 0 || opened != 0) {
				t.Errorf("nothing changed, yet %d directories were opened and %d read again", opened, read)
			}

			change(func() { mustWrite(t, filepath.Join(root, "a/b/c/d/.env"), "TOKEN=3\n") })
			want = []string{".env", "a/b/c/d/.env", "s/t/.env.prod"}
			if got := sensitiveRels(t, idx, root); !slices.Equal(got, want) {
				t.Errorf("after .env was created deep in the tree: %q, want %q", got, want)
			}

			change(func() {
				if err := os.Rename(filepath.Join(root, "s/t"), filepath.Join(root, "e/f/moved")); err != nil {
					t.Fatal(err)
				}
			})
			want = []string{".env", "a/b/c/d/.env", "e/f/moved/.env.prod"}
			if got := sensitiveRels(t, idx, root); !slices.Equal(got, want) {
				t.Errorf("after the directory holding .env.prod was renamed: %q, want %q", got, want)
			}

			change(func() {
				if err := os.MkdirAll(filepath.Join(root, "g/new/deeper"), 0o755); err != nil {
					t.Fatal(err)
				}
				mustWrite(t, filepath.Join(root, "g/new/deeper/id_rsa"), "KEY\n")
			})
			want = []string{".env", "a/b/c/d/.env", "e/f/moved/.env.prod", "g/new/deeper/id_rsa"}
			if got := sensitiveRels(t, idx, root); !slices.Equal(got, want) {
				t.Errorf("after a new directory holding a key: %q, want %q", got, want)
			}

			change(func() {
				if err := os.RemoveAll(filepath.Join(root, "a/b")); err != nil {
					t.Fatal(err)
				}
			})
			want = []string{".env", "e/f/moved/.env.prod", "g/new/deeper/id_rsa"}
			if got := sensitiveRels(t, idx, root); !slices.Equal(got, want) {
				t.Errorf("after a directory was removed: %q, want %q", got, want)
			}

			change(func() {
				if err := os.RemoveAll(filepath.Join(root, "e/f/moved")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "e/f/moved")); err != nil {
					t.Fatal(err)
				}
			})
			want = []string{".env", "g/new/deeper/id_rsa"}
			if got := sensitiveRels(t, idx, root); !slices.Equal(got, want) {
				t.Errorf("after a directory holding a secret was replaced by a symlink: %q, want %q", got, want)
			}
		})
	}
}

// TestMaskIndexQueueOverflow: when more changes happen between two walks than the inotify queue
// holds, the events are lost; the index then trusts no watch and looks at every directory's
// timestamps, and finds the secret added among the lost events.
func TestMaskIndexQueueOverflow(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Skip(err)
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || limit > 1<<17 {
		t.Skipf("max_queued_events %q: too many files to overflow it", b)
	}
	idx := newMaskIndex(true)
	root := maskTree(t)
	if err := os.Mkdir(filepath.Join(root, "bulk"), 0o755); err != nil {
		t.Fatal(err)
	}
	sensitiveRels(t, idx, root)
	for i := range limit + 16 {
		f, err := os.Create(filepath.Join(root, "bulk", strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	mustWrite(t, filepath.Join(root, "a/b/c/d/.env"), "TOKEN=3\n")
	want := []string{".env", "a/b/c/d/.env", "s/t/.env.prod"}
	if got := sensitiveRels(t, idx, root); !slices.Equal(got, want) {
		t.Errorf("after the queue overflowed: %q, want %q", got, want)
	}
	if idx.invalid != idx.seq {
		t.Errorf("the queue did not overflow (walk %d, last invalidation %d): the test did not test it", idx.seq, idx.invalid)
	}
}

// TestMaskFollowsWorkspaceBetweenCommands: through the real sandbox, with the process's index
// warm from a first command, a second command cannot read a .env created deep in the tree, one
// in a directory renamed in between, or a key in a directory created in between.
func TestMaskFollowsWorkspaceBetweenCommands(t *testing.T) {
	sb := requireMode(t, ModeBwrap)
	e := newEnv(t)
	for _, d := range []string{"src/a/b/c/d", "old/keys", "other"} {
		if err := os.MkdirAll(filepath.Join(e.ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, e.ws+"/old/keys/.env", "MOVED=moved-dir-secret\n")
	p := e.policy()
	if r := runBash(t, sb, p, "cat old/keys/.env; cat src/a/b/c/d/.env; exit 0"); strings.Contains(r.stdout, "secret") {
		t.Fatalf("first command read a secret\n%s", r)
	}
	mustWrite(t, e.ws+"/src/a/b/c/d/.env", "DEEP=deep-new-secret\n")
	if err := os.Rename(e.ws+"/old/keys", e.ws+"/other/renamed"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.ws+"/fresh/dir", 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, e.ws+"/fresh/dir/id_ed25519", "fresh-dir-secret\n")
	mustWrite(t, e.ws+"/src/a/b/c/d/ok.txt", "ordinary-ok\n")
	r := runBash(t, sb, p, "cat src/a/b/c/d/.env other/renamed/.env fresh/dir/id_ed25519 src/a/b/c/d/ok.txt; exit 0")
	for _, s := range []string{"deep-new-secret", "moved-dir-secret", "fresh-dir-secret"} {
		if strings.Contains(r.stdout, s) {
			t.Errorf("secret %q readable by the second command\n%s", s, r)
		}
	}
	if !strings.Contains(r.stdout, "ordinary-ok") {
		t.Errorf("an ordinary file beside them is unreadable\n%s", r)
	}
}

// TestMaskIndexHardLinks: a regular file that is another name of a sensitive file — of a
// workspace .env, of a key in a sensitive directory, of a $HOME secret — is masked; a pair of
// ordinary hard-linked files (what cargo and pnpm make) is not. Links made between two walks
// are seen: a new name for .env, and a sensitive name given to an existing ordinary file (only
// that file's link count changes, which neither its directory's timestamps nor its directory's
// watch show: the new sensitive name's link count, higher than the names known, makes the index
// list every directory again).
func TestMaskIndexHardLinks(t *testing.T) {
	idx := newMaskIndex(true)
	root := maskTree(t)
	home := t.TempDir()
	mustWrite(t, filepath.Join(home, "credentials"), "aws\n")
	if err := os.MkdirAll(filepath.Join(root, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(root, ".ssh/id_rsa"), "KEY\n")
	mustWrite(t, filepath.Join(root, "g/app"), "binary\n")
	mustWrite(t, filepath.Join(root, "a/b/c/d/plain.txt"), "ordinary\n")
	link := func(old, new string) {
		t.Helper()
		if err := os.Link(old, new); err != nil {
			t.Skipf("hard links: %v", err)
		}
	}
	link(filepath.Join(root, ".env"), filepath.Join(root, "a/b/notes.txt"))
	link(filepath.Join(root, ".ssh/id_rsa"), filepath.Join(root, "e/key.txt"))
	link(filepath.Join(home, "credentials"), filepath.Join(root, "e/f/aws.txt"))
	link(filepath.Join(root, "g/app"), filepath.Join(root, "g/app-1234")) // cargo's uplifted binary
	names := func() []string {
		t.Helper()
		found, err := idx.find([]string{root}, []string{filepath.Join(root, "a/b/notes.txt")}, []string{home})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range found {
			out = append(out, e.rel)
		}
		slices.Sort(out)
		return out
	}
	want := []string{".env", ".ssh", "a/b/notes.txt", "e/f/aws.txt", "e/key.txt", "s/t/.env.prod"}
	if got := names(); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q (an approval never unmasks a link; g/app and g/app-1234 stay readable)", got, want)
	}
	link(filepath.Join(root, ".env"), filepath.Join(root, "a/b/c/later.txt"))
	link(filepath.Join(root, "a/b/c/d/plain.txt"), filepath.Join(root, "s/.env.copy"))
	want = []string{".env", ".ssh", "a/b/c/d/plain.txt", "a/b/c/later.txt", "a/b/notes.txt", "e/f/aws.txt", "e/key.txt", "s/.env.copy", "s/t/.env.prod"}
	if got := names(); !slices.Equal(got, want) {
		t.Errorf("after links made between two walks: %q, want %q", got, want)
	}
}

// TestHardLinkToSecretMasked: through the real sandbox, a command cannot read a workspace file
// that is a hard link to .env or to a $HOME secret, and still reads and runs a hard-linked pair
// of ordinary files.
func TestHardLinkToSecretMasked(t *testing.T) {
	sb := requireMode(t, ModeBwrap)
	e := newEnv(t)
	mustWrite(t, e.ws+"/.env", "TOKEN=linked-env-secret\n")
	mustWrite(t, e.ws+"/src/tool", "#!/bin/sh\necho ordinary-link-ok\n")
	if err := os.Chmod(e.ws+"/src/tool", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{e.ws + "/.env", e.ws + "/notes.txt"}, {e.ws + "/src/tool", e.ws + "/src/tool-1234"}} {
		if err := os.Link(l[0], l[1]); err != nil {
			t.Skipf("hard links: %v", err)
		}
	}
	outsideLinked := os.Link(e.home+"/.ssh/id_ed25519", e.ws+"/src/key.txt") == nil // /var/tmp and /tmp may be apart
	r := runBash(t, sb, e.policy(), "cat notes.txt; cat src/key.txt; ./src/tool-1234; exit 0")
	if strings.Contains(r.stdout, "linked-env-secret") {
		t.Errorf("a hard link to .env is readable\n%s", r)
	}
	if outsideLinked && strings.Contains(r.stdout, "PRIVATE KEY") {
		t.Errorf("a hard link to a $HOME secret is readable\n%s", r)
	}
	if !strings.Contains(r.stdout, "ordinary-link-ok") {
		t.Errorf("a hard-linked ordinary program does not run\n%s", r)
	}
}
