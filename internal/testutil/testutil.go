// Package testutil holds helpers that tests in several packages share. It imports only the
// standard library, and only test files import it (TestImportedOnlyByTests checks both), so the
// module's import direction is the same with or without it.
package testutil

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
)

// NeedTool skips t when the command name is not on PATH, saying which package provides it, and
// fails instead under CI=true, where .ci/run installs it.
func NeedTool(t testing.TB, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found in CI (.ci/run installs %s)", name, pkg)
		}
		t.Skipf("%s NOT INSTALLED (apt-get install %s): not tested", name, pkg)
	}
}

// Greeting is what UnixGreeter writes to every connection.
const Greeting = "hello-from-socket\n"

// UnixGreeter listens on a Unix socket named docker.sock in a fresh directory under the system
// temporary directory (short: a socket path is at most 107 bytes; /tmp is masked in bubblewrap
// mode), writes Greeting to every connection, closes it and counts it. Both end with the test.
func UnixGreeter(t testing.TB) (path string, accepted *atomic.Int32) {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentd-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path = filepath.Join(dir, "docker.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Write([]byte(Greeting))
			c.Close()
		}
	}()
	return path, accepted
}

// Snapshot describes every entry under the roots, keyed by path: its mode, a symlink's target, a
// regular file's size and content hash. Equal snapshots mean nothing there was created, removed,
// retargeted, rewritten or given other permissions.
func Snapshot(t testing.TB, roots ...string) map[string]string {
	t.Helper()
	return snapshot(t, false, roots)
}

// SnapshotTimes is Snapshot with each entry's modification time too (a `touch` shows).
func SnapshotTimes(t testing.TB, roots ...string) map[string]string {
	t.Helper()
	return snapshot(t, true, roots)
}

func snapshot(t testing.TB, times bool, roots []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			v := info.Mode().String()
			switch {
			case info.Mode()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				v += " -> " + target
			case info.Mode().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				v += fmt.Sprintf(" %d %x", len(b), sha256.Sum256(b))
			}
			if times {
				v += fmt.Sprintf(" mtime %d", info.ModTime().UnixNano())
			}
			out[p] = v
			return nil
		})
		if err != nil {
			t.Fatalf("snapshot of %s: %v", root, err)
		}
	}
	return out
}

// SnapshotChanges lists, sorted by path, every entry that differs between two snapshots:
// "p changed: before → after", "p was added: after", "p was removed: before". None means equal.
func SnapshotChanges(before, after map[string]string) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(before)) {
		a, ok := after[p]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s was removed: %q", p, before[p]))
		case a != before[p]:
			out = append(out, fmt.Sprintf("%s changed: %q → %q", p, before[p], a))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[p]; !ok {
			out = append(out, fmt.Sprintf("%s was added: %q", p, after[p]))
		}
	}
	return out
}

// GoTelemetryOff turns the go command's telemetry off for a test's own configuration directory
// (its XDG_CONFIG_HOME). In a fresh one the mode is "local", and every `go` the code under test
// runs (agentd asks `go env GOCACHE`) starts a detached telemetry sidecar that keeps writing
// there after the process that ran it has exited, racing t.TempDir's cleanup ("directory not
// empty").
func GoTelemetryOff(t testing.TB, configHome string) {
	t.Helper()
	dir := filepath.Join(configHome, "go", "telemetry")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mode"), []byte("off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
