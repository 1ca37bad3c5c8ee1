package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const nobody = 65534

// impostor is a listener process (testdata/impostor), optionally running as another user.
type impostor struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *bufio.Reader
	sock string // where the test reaches it
}

// buildImpostor builds the listener into dir (which other users can traverse).
func buildImpostor(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "impostor")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/impostor").CombinedOutput(); err != nil {
		t.Fatalf("building the impostor: %v\n%s", err, out)
	}
	return bin
}

func startImpostor(t *testing.T, bin, sock string, uid int) *impostor {
	t.Helper()
	cmd := exec.Command(bin, sock)
	if uid != os.Getuid() {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	im := &impostor{t: t, cmd: cmd, out: bufio.NewReader(stdout), sock: sock}
	if line := im.line("ready"); line != "ready" {
		t.Fatalf("impostor: %s", line)
	}
	return im
}

// line reads the impostor's next line, failing after a deadline that names what was awaited.
func (im *impostor) line(what string) string {
	im.t.Helper()
	got := make(chan string, 1)
	go func() {
		s, _ := im.out.ReadString('\n')
		got <- strings.TrimSpace(s)
	}()
	select {
	case s := <-got:
		return s
	case <-time.After(30 * time.Second):
		im.t.Fatalf("the impostor did not print %q", what)
		return ""
	}
}

// received ends the count (see testdata/impostor) and returns what the impostor got.
func (im *impostor) received() string {
	im.t.Helper()
	c, err := net.Dial("unix", im.sock)
	if err != nil {
		im.t.Fatalf("dialing the impostor for its count: %v", err)
	}
	c.Write([]byte("sentinel"))
	c.Close()
	return im.line("its count")
}

// runConnect runs `agentd connect` with no XDG_RUNTIME_DIR and the temp dir at tmp, feeding it
// an editor's first message.
func runConnect(t *testing.T, tmp string, extra ...string) (code int, stderr string) {
	t.Helper()
	cmd := exec.Command(agentdBin, append([]string{"connect"}, extra...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") && !strings.HasPrefix(kv, "TMPDIR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"initializationOptions":{"secret":"buffer contents"}}}`
	cmd.Stdin = strings.NewReader(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), errb.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, errb.String()
}

// sharedTemp is a temp dir other users can traverse (the impostor runs as one).
func sharedTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentd-connect-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The control: a listener of our own on the default socket receives the editor's bytes, so the
// impostor's count of zero below means something.
func TestConnectForwardsToOurOwnListener(t *testing.T) {
	tmp := sharedTemp(t)
	bin := buildImpostor(t, tmp)
	dir := filepath.Join(tmp, fmt.Sprintf("agentd-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	im := startImpostor(t, bin, filepath.Join(dir, "agentd.sock"), os.Getuid())
	if code, stderr := runConnect(t, tmp); code != 0 {
		t.Fatalf("connect to our own listener exited %d: %s", code, stderr)
	}
	if got := im.received(); got == "conns=0 bytes=0" || !strings.HasPrefix(got, "conns=1 ") {
		t.Fatalf("our own listener received %s, want one connection with the message", got)
	}
}

// Another user pre-created /tmp/agentd-<uid> and listens in it: connect refuses before it
// connects, says why, and the impostor receives nothing.
func TestConnectRefusesAnotherUsersDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a listener as another user (CI runs as root)")
	}
	tmp := sharedTemp(t)
	bin := buildImpostor(t, tmp)
	dir := filepath.Join(tmp, fmt.Sprintf("agentd-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	im := startImpostor(t, bin, filepath.Join(dir, "agentd.sock"), nobody)
	code, stderr := runConnect(t, tmp)
	if code == 0 || !strings.Contains(stderr, "refusing to connect") || !strings.Contains(stderr, fmt.Sprintf("owned by uid %d", nobody)) {
		t.Errorf("connect exited %d with stderr %q, want a refusal naming the owner", code, stderr)
	}
	if got := im.received(); got != "conns=0 bytes=0" {
		t.Fatalf("the impostor received %s", got)
	}
}

// The directory is ours but the socket in it is someone else's, or the socket is ours but the
// process listening on it is not (SO_PEERCRED): refused, and not one byte is written.
func TestConnectRefusesAnotherUsersSocketAndDaemon(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a listener as another user (CI runs as root)")
	}
	tmp := sharedTemp(t)
	bin := buildImpostor(t, tmp)
	theirs := filepath.Join(tmp, "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	im := startImpostor(t, bin, filepath.Join(theirs, "s.sock"), nobody)
	// Our directory, with their bound socket moved into it.
	dir := filepath.Join(tmp, fmt.Sprintf("agentd-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agentd.sock")
	if err := os.Rename(im.sock, sock); err != nil {
		t.Fatal(err)
	}
	im.sock = sock

	code, stderr := runConnect(t, tmp)
	if code == 0 || !strings.Contains(stderr, "refusing to connect") || !strings.Contains(stderr, fmt.Sprintf("owned by uid %d", nobody)) {
		t.Errorf("their socket: connect exited %d with stderr %q, want a refusal naming the owner", code, stderr)
	}
	// Now the socket file is ours too: only the listener's credentials give it away.
	if err := os.Lchown(sock, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	code, stderr = runConnect(t, tmp)
	if code == 0 || !strings.Contains(stderr, "refusing to connect") || !strings.Contains(stderr, fmt.Sprintf("runs as uid %d", nobody)) {
		t.Errorf("their daemon: connect exited %d with stderr %q, want a refusal naming the daemon's uid", code, stderr)
	}
	// One connection (the credential check needs it), zero bytes.
	if got := im.received(); got != "conns=1 bytes=0" {
		t.Fatalf("the impostor received %s, want conns=1 bytes=0", got)
	}
}
