//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// deadTag is the placeholder tag of a process that has ended.
func deadTag(t *testing.T) string {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	tag := ownerOnce() // boot:pid:start of this process; the pid becomes the dead child's
	parts := strings.Split(tag, ":")
	return parts[0] + ":" + strconv.Itoa(c.Process.Pid) + ":" + parts[2]
}

// leftover makes what a killed agentd leaves: an empty read-only directory tagged with tag.
func leftover(t *testing.T, p, tag string) {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lsetxattr(p, placeholderXattr, []byte(tag), 0); err != nil {
		t.Fatalf("user extended attributes: %v", err)
	}
	if err := os.Chmod(p, 0o555); err != nil {
		t.Fatal(err)
	}
}

// TestPlaceholdersLeftByADeadAgentdAreSwept: a placeholder whose maker has ended is removed by the
// next session's sweep and by the next command's planning; one whose maker runs, one that holds
// something, and the user's own empty read-only directory are kept.
func TestPlaceholdersLeftByADeadAgentdAreSwept(t *testing.T) {
	ws := t.TempDir()
	dead := deadTag(t)
	leftover(t, filepath.Join(ws, ".vscode"), dead)
	leftover(t, filepath.Join(ws, ".git"), dead) // for .git/hooks: the first missing component
	leftover(t, filepath.Join(ws, ".idea"), ownerOnce())
	leftover(t, filepath.Join(ws, ".envrc"), dead)
	if err := os.Chmod(filepath.Join(ws, ".envrc"), 0o700); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(ws, ".envrc", "kept"), "x")
	if err := os.Chmod(filepath.Join(ws, ".envrc"), 0o555); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, ".agentd"), 0o555); err != nil { // the user's, untagged
		t.Fatal(err)
	}
	SweepPlaceholders([]string{ws}, []string{".vscode", ".git/hooks", ".idea", ".envrc", ".agentd"})
	for name, want := range map[string]bool{".vscode": false, ".git": false, ".idea": true, ".envrc": true, ".agentd": true} {
		if hostHas(filepath.Join(ws, name)) != want {
			t.Errorf("%s present = %v, want %v", name, !want, want)
		}
	}

	// A command's planning replaces a stale placeholder with its own, removed at Release.
	sb := requireMode(t, ModeBwrap)
	e := newEnv(t)
	leftover(t, filepath.Join(e.ws, ".vscode"), dead)
	r := runBash(t, sb, e.policy(), `test -d .vscode && ! touch .vscode/x 2>/dev/null && echo protected`)
	if !strings.Contains(r.stdout, "protected") {
		t.Errorf(".vscode not protected:\n%s", r)
	}
	if hostHas(filepath.Join(e.ws, ".vscode")) {
		t.Error("the stale placeholder is still there after the command")
	}
}

// TestPlaceholderIsTaggedAndMadeInPlace: a placeholder is an empty directory, mode 0555, tagged
// with this process, and nothing of its making is left beside it.
func TestPlaceholderIsTaggedAndMadeInPlace(t *testing.T) {
	ws := t.TempDir()
	p := filepath.Join(ws, ".vscode")
	held, _, err := claimPlaceholder(p)
	if err != nil || !held {
		t.Fatalf("claim: %v %v", held, err)
	}
	defer releasePlaceholder(p)
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o555 {
		t.Fatalf("placeholder: %v %v", fi, err)
	}
	buf := make([]byte, 128)
	n, err := unix.Lgetxattr(p, placeholderXattr, buf)
	if err != nil || string(buf[:n]) != ownerOnce() {
		t.Errorf("tag %q, %v; want %q", buf[:n], err, ownerOnce())
	}
	if ents, _ := os.ReadDir(ws); len(ents) != 1 {
		t.Errorf("the workspace holds %v, want only the placeholder", ents)
	}
	if stalePlaceholder(p) {
		t.Error("a placeholder of this live process counts as stale")
	}
}
