//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// renameOver replaces p the way git (config.lock) and many editors save: a new
// file renamed over the old one.
func renameOver(p string) error {
	if err := os.WriteFile(p+".new", []byte("replaced on the host\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(p+".new", p)
}

// TestHostReplacementStopsTheCommand: a mount on a file or directory is
// detached in every other mount namespace when the host removes it or renames
// something over it (Linux ≥ 3.18). A command running in the sandbox while the
// user's git rewrites .git/config, or their editor saves .env through a rename,
// would then see the new file unprotected: it could write a hook-running
// core.fsmonitor into .git/config, or read the new secrets. The sandbox stops
// the command as soon as that happens and says why. The command waits on a
// FIFO between "ready" (its mounts are in place) and its attempt, so the test
// never races it: without the watch the test releases the command after a
// deadline and the attempt succeeds (the escape this test guards against).
func TestHostReplacementStopsTheCommand(t *testing.T) {
	sb := requireMode(t, ModeBwrap)
	cases := []struct {
		name, rel string
		change    func(p string) error
		stops     bool
	}{
		{"protected file renamed over", ".git/config", renameOver, true},
		{"protected file removed", ".git/config", os.Remove, true},
		{"sensitive file renamed over", ".env", renameOver, true},
		{"protected directory moved away", ".git/hooks", func(p string) error { return os.Rename(p, p+"-old") }, true},
		{"placeholder removed", ".vscode", os.Remove, true},
		{"a file beside a protected one", "notes.txt", renameOver, false},
		{"a file inside a protected directory", ".git/hooks/pre-commit.sample", renameOver, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			mustWrite(t, e.ws+"/.env", "API_TOKEN=before\n")
			mustWrite(t, e.ws+"/notes.txt", "notes\n")
			mustWrite(t, e.ws+"/.git/hooks/pre-commit.sample", "#!/bin/sh\n")
			gate := filepath.Join(e.ws, "gate")
			if err := syscall.Mkfifo(gate, 0o600); err != nil {
				t.Fatal(err)
			}
			script := `echo ready; read x < gate
				echo '[core] fsmonitor = "touch /tmp/pwned"' >> .git/config && echo "WROTE config"
				mkdir -p .vscode && echo '{}' > .vscode/tasks.json && echo "CREATED .vscode"
				echo '#!/bin/sh' > .git/hooks/pre-commit && echo "WROTE hook"
				echo "env: $(cat .env)"
				echo survived`
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c, err := sb.Command(ctx, e.policy(), []string{"bash", "-c", script}, e.ws)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Release()
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			c.Stdout, c.Stderr = pw, pw
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			out := bufio.NewReader(pr)
			if line, err := out.ReadString('\n'); line != "ready\n" {
				t.Fatalf("the command did not start: %q, %v", line, err)
			}
			if err := tc.change(filepath.Join(e.ws, tc.rel)); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			var stopped bool
			select {
			case <-done:
				stopped = true
			case <-time.After(time.Duration(map[bool]int{true: 30, false: 0}[tc.stops]) * time.Second):
			}
			if !stopped {
				// Let the command go on: an unprotected attempt now succeeds.
				// O_RDWR: a FIFO opened so never blocks, and the command's
				// open for reading finds a writer.
				f, err := os.OpenFile(gate, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString("go\n")
				<-done
				f.Close()
			}
			rest := readAll(out)
			switch {
			case tc.stops && !stopped:
				t.Errorf("the command kept running after %s changed on the host:\n%s", tc.rel, rest)
			case tc.stops && !slices.Contains(c.Unprotected(), filepath.Join(e.ws, tc.rel)):
				t.Errorf("Unprotected() = %q, want %s", c.Unprotected(), tc.rel)
			case !tc.stops && stopped:
				t.Errorf("the command was stopped by a change to %s that lifts no protection; Unprotected %q\n%s", tc.rel, c.Unprotected(), rest)
			case !tc.stops && (!strings.Contains(rest, "survived") || len(c.Unprotected()) > 0):
				t.Errorf("the command did not finish normally: Unprotected %q\n%s", c.Unprotected(), rest)
			}
			for _, bad := range []string{"WROTE config", "CREATED .vscode", "WROTE hook", "replaced on the host"} {
				if strings.Contains(rest, bad) {
					t.Errorf("escape: %s\n%s", bad, rest)
				}
			}
			if b, _ := os.ReadFile(e.ws + "/.git/config"); strings.Contains(string(b), "fsmonitor") {
				t.Errorf("the command wrote .git/config: %q", b)
			}
		})
	}
}

func readAll(r *bufio.Reader) string {
	var b strings.Builder
	for {
		s, err := r.ReadString('\n')
		b.WriteString(s)
		if err != nil {
			return b.String()
		}
	}
}

// TestMountWatchOverflow: when the kernel's event queue overflowed, a mounted path counts as
// changed only if it is gone or another file now, so that a command flooding its workspace with
// new entries is not stopped for nothing, and a replacement hidden in the flood still stops it.
func TestMountWatchOverflow(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	mustWrite(t, a, "a\n")
	mustWrite(t, b, "b\n")
	w, err := watchMounts([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	defer w.stop()
	overflow := make([]byte, unix.SizeofInotifyEvent)
	binary.NativeEndian.PutUint32(overflow[0:], ^uint32(0)) // wd -1
	binary.NativeEndian.PutUint32(overflow[4:], unix.IN_Q_OVERFLOW)
	if hit := w.changes(overflow); len(hit) != 0 {
		t.Errorf("nothing changed, yet %q", hit)
	}
	if err := renameOver(b); err != nil {
		t.Fatal(err)
	}
	if hit := w.changes(overflow); !slices.Equal(hit, []string{b}) {
		t.Errorf("after b was replaced: %q, want [%s]", hit, b)
	}
	os.Remove(a)
	if hit := w.changes(overflow); len(hit) != 2 {
		t.Errorf("after a was removed too: %q", hit)
	}
}
