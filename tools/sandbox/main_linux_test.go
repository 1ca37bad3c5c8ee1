//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestMain dispatches the two roles the test binary plays inside sandboxes:
// the helper (HelperMain, exactly as the agentd binary does) and small probe
// programs that make one syscall and print what happened.
func TestMain(m *testing.M) {
	HelperMain()
	if len(os.Args) > 2 && os.Args[1] == probeArg {
		os.Exit(probe(os.Args[2], os.Args[3:]))
	}
	if len(os.Args) == 4 && os.Args[1] == applyLockHolderArg {
		os.Exit(holdApplyLock(os.Args[2], os.Args[3]))
	}
	os.Exit(m.Run())
}

const probeArg = "__sandbox-probe"

// probe runs one check and prints "result=…". Exit 0 if the syscall
// succeeded, 1 if it failed.
func probe(name string, args []string) int {
	report := func(err error) int {
		if err == nil {
			fmt.Println("result=ok")
			return 0
		}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			fmt.Printf("result=%s\n", unix.ErrnoName(errno))
		} else {
			fmt.Printf("result=%v\n", err)
		}
		return 1
	}
	errOf := func(e syscall.Errno) error {
		if e == 0 {
			return nil
		}
		return e
	}
	switch name {
	case "ptrace":
		_, _, e := unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
		return report(errOf(e))
	case "io_uring":
		var params [120]byte
		r, _, e := unix.RawSyscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
		if e == 0 {
			unix.Close(int(r))
		}
		return report(errOf(e))
	case "unshare":
		return report(unix.Unshare(unix.CLONE_NEWUSER))
	case "clone3":
		var a [88]byte
		_, _, e := unix.RawSyscall(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&a)), 88, 0)
		return report(errOf(e))
	case "bpf":
		_, _, e := unix.RawSyscall(unix.SYS_BPF, 0, 0, 0)
		return report(errOf(e))
	case "x32":
		// socket(AF_INET, SOCK_STREAM, 0) through the x32 table.
		r, _, e := unix.RawSyscall(unix.SYS_SOCKET|0x40000000, unix.AF_INET, unix.SOCK_STREAM, 0)
		if e == 0 {
			unix.Close(int(r))
		}
		return report(errOf(e))
	case "inet-socket":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fd)
		}
		return report(err)
	case "unix-connect":
		c, err := net.DialTimeout("unix", args[0], 3*time.Second)
		if err == nil {
			c.Close()
		}
		return report(err)
	case "launch":
		// A stand-in daemon: start a sandboxed command, then wait to be
		// killed. args: mode ws marker
		m := ModeBwrap
		if args[0] == ModeLandlock.String() {
			m = ModeLandlock
		}
		sb, err := New(Options{Mode: m})
		if err != nil {
			return report(err)
		}
		c, err := sb.Command(context.Background(), Policy{WorkspaceRoots: []string{args[1]}},
			[]string{"bash", "-c", fmt.Sprintf("setsid sleep %[1]s1 & sleep %[1]s2 & sleep %[1]s3", args[2])}, args[1])
		if err != nil {
			return report(err)
		}
		if err := c.Start(); err != nil {
			return report(err)
		}
		fmt.Println("started")
		select {}
	case "alloc":
		// Allocate and touch args[0] MiB.
		var mib int
		fmt.Sscan(args[0], &mib)
		mem := make([][]byte, 0, mib)
		for range mib {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			mem = append(mem, b)
		}
		fmt.Printf("allocated=%d\n", len(mem))
		return report(nil)
	case "spawn":
		// Start args[0] copies of `sleep args[1]` and leave them running;
		// stop at the first failure.
		var n int
		fmt.Sscan(args[0], &n)
		sleep, err := exec.LookPath("sleep")
		if err != nil {
			return report(err)
		}
		started := 0
		for range n {
			_, err = syscall.ForkExec(sleep, []string{"sleep", args[1]}, &syscall.ProcAttr{Files: []uintptr{0, 1, 2}})
			if err != nil {
				break
			}
			started++
		}
		fmt.Printf("started=%d\n", started)
		return report(err)
	case "signal":
		var pid int
		fmt.Sscan(args[0], &pid)
		return report(unix.Kill(pid, 0))
	}
	fmt.Println("unknown probe", name)
	return 2
}

var (
	featOnce sync.Once
	feat     Features
)

func features() Features {
	featOnce.Do(func() { feat = Detect() })
	return feat
}

// requireMode fails loudly when the machine lacks what mode needs: these
// tests exist to prove the protections work, never to pass without them.
func requireMode(t testing.TB, m Mode) *Sandbox {
	t.Helper()
	f := features()
	if !f.Usable(m) {
		t.Fatalf("KERNEL/HOST FEATURE MISSING for mode %s — the sandbox cannot be tested here: %s", m, strings.Join(f.Missing(), "; "))
	}
	if m == ModeBwrap && (f.LandlockABI < 1 || !f.Seccomp) {
		t.Fatalf("KERNEL FEATURE MISSING: bwrap mode is expected to layer Landlock and seccomp: %s", strings.Join(f.Missing(), "; "))
	}
	sb, err := New(Options{Mode: m, Features: &f})
	if err != nil {
		t.Fatalf("New(%s): %v", m, err)
	}
	return sb
}

var sandboxModes = []Mode{ModeBwrap, ModeLandlock}

// forModes runs fn once per sandbox mode.
func forModes(t *testing.T, fn func(t *testing.T, sb *Sandbox)) {
	for _, m := range sandboxModes {
		t.Run(m.String(), func(t *testing.T) { fn(t, requireMode(t, m)) })
	}
}

// env is a test workspace: ws (a git-like repo), a session tmp dir, a fake
// home with secrets and a fake XDG_RUNTIME_DIR outside /tmp.
type env struct {
	ws, tmp, home, xdg, layers string
}

func newEnv(t *testing.T) env {
	t.Helper()
	base := t.TempDir()
	e := env{ws: filepath.Join(base, "ws"), tmp: filepath.Join(base, "session-tmp"), layers: filepath.Join(base, "layers")}
	for _, d := range []string{e.ws + "/.git/hooks", e.ws + "/src", e.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, e.ws+"/.git/config", "[core]\n")
	mustWrite(t, e.ws+"/.git/HEAD", "ref: refs/heads/main\n")
	outside, err := os.MkdirTemp("/var/tmp", "agentd-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	e.home = filepath.Join(outside, "home")
	e.xdg = filepath.Join(outside, "run-user")
	for _, d := range []string{e.home + "/.ssh", e.home + "/.config/gh", e.xdg} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, e.home+"/.ssh/id_ed25519", "PRIVATE KEY\n")
	mustWrite(t, e.home+"/.config/gh/hosts.yml", "oauth_token: gho_secret\n")
	mustWrite(t, e.home+"/.netrc", "machine x password hunter2\n")
	mustWrite(t, e.home+"/.gitconfig", "[user]\n\tname = t\n")
	return e
}

func (e env) policy() Policy {
	return Policy{
		WorkspaceRoots: []string{e.ws},
		TmpDir:         e.tmp,
		LayerDir:       e.layers,
		Home:           e.home,
		RuntimeDir:     e.xdg,
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	stdout, stderr string
	code           int
	cmd            *Cmd
	// changes are what the command changed (its copy-on-write layers), read before Release.
	changes []Change
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runArgv runs argv in the sandbox the way the bash tool will.
func runArgv(t *testing.T, sb *Sandbox, p Policy, dir string, argv ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := sb.Command(ctx, p, argv, dir)
	if err != nil {
		t.Fatalf("Command: %v", err)
	}
	defer c.Release()
	var err2 error
	var so, se bytes.Buffer
	c.Stdout, c.Stderr = &so, &se
	c.WaitDelay = 5 * time.Second
	err = c.Run()
	r := result{stdout: so.String(), stderr: se.String(), cmd: c}
	if r.changes, err2 = c.Changes(); err2 != nil {
		t.Fatalf("Changes: %v", err2)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
	default:
		t.Fatalf("run: %v\n%s", err, r)
	}
	if r.code == ExitHelperFailed {
		t.Fatalf("the sandbox helper failed:\n%s", r)
	}
	return r
}

func runBash(t *testing.T, sb *Sandbox, p Policy, script string) result {
	t.Helper()
	return runArgv(t, sb, p, p.WorkspaceRoots[0], "bash", "-c", script)
}

func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, err = filepath.EvalSymlinks(exe)
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func runProbe(t *testing.T, sb *Sandbox, p Policy, name string, args ...string) result {
	t.Helper()
	return runArgv(t, sb, p, p.WorkspaceRoots[0], append([]string{testBinary(t), probeArg, name}, args...)...)
}
