package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// connectCmd forwards stdio to the shared daemon, starting it when it is not running (like
// `gopls -remote=auto`), so editors always spawn one command and share sessions.
func connectCmd(args []string) int {
	fs := flag.NewFlagSet("connect", flag.ContinueOnError)
	var s settings
	s.register(fs)
	socket := fs.String("socket", "", "the daemon's socket (default $XDG_RUNTIME_DIR/agentd/agentd.sock)")
	idle := fs.Duration("idle-timeout", 10*time.Minute, "a daemon started by connect exits after this long with no editor and no running turn")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	for _, a := range fs.Args() {
		if a != "--stdio" && a != "-stdio" {
			fmt.Fprintf(os.Stderr, "agentd connect: unexpected argument %q\n", a)
			return 2
		}
	}
	path := *socket
	if path == "" {
		var err error
		if path, err = defaultSocket(); err != nil {
			fmt.Fprintln(os.Stderr, "agentd:", err)
			return 1
		}
	}
	// Nothing is written before the directory, the socket and the process behind it are known
	// to be the user's own: the editor's first message carries its buffers.
	conn, err := dialDaemon(path)
	var refused *refusal
	if err != nil && !errors.As(err, &refused) {
		conn, err = startDaemon(path, args, *idle)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd connect:", err)
		return 1
	}
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(conn, os.Stdin)
		conn.(*net.UnixConn).CloseWrite()
		done <- struct{}{}
	}()
	go func() {
		io.Copy(os.Stdout, conn)
		done <- struct{}{}
	}()
	<-done
	return 0
}

// startDaemon starts `agentd serve --listen` in its own session, detached from the editor, with
// the connect flags passed on, and waits for its socket.
func startDaemon(path string, args []string, idle time.Duration) (net.Conn, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	serveArgs := []string{"serve", "--listen", "--socket", path, "--idle-timeout", idle.String()}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--stdio" || a == "-stdio":
		case a == "--socket" || a == "-socket" || a == "--idle-timeout" || a == "-idle-timeout":
			i++
		case strings.HasPrefix(a, "--socket=") || strings.HasPrefix(a, "-socket=") ||
			strings.HasPrefix(a, "--idle-timeout=") || strings.HasPrefix(a, "-idle-timeout="):
		default:
			serveArgs = append(serveArgs, a)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(filepath.Dir(path), "agentd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(exe, serveArgs...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	slog.Debug("started the shared daemon", "pid", cmd.Process.Pid, "socket", path)
	go cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := dialDaemon(path)
		var refused *refusal
		if err == nil || errors.As(err, &refused) {
			return conn, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the daemon did not start (see %s): %v", logFile.Name(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refusal is a socket connect will not use: someone else's directory, socket or daemon.
type refusal struct{ reason string }

func (r *refusal) Error() string { return "refusing to connect: " + r.reason }

// dialDaemon connects to the daemon's socket once the directory (ours, 0700), the socket (ours)
// and the listening process (ours, by SO_PEERCRED) are checked; it writes nothing. Another local
// user who pre-created the directory under /tmp (no XDG_RUNTIME_DIR) would otherwise receive the
// editor's initialize and buffers. A refusal is a *refusal; any other error means no daemon.
func dialDaemon(path string) (net.Conn, error) {
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	uid, err := peerUID(conn.(*net.UnixConn))
	if err == nil && uid != os.Getuid() {
		err = fmt.Errorf("the daemon on %s runs as uid %d, not as you (uid %d)", path, uid, os.Getuid())
	}
	if err != nil {
		conn.Close()
		return nil, &refusal{err.Error()}
	}
	return conn, nil
}

// checkSocketPath checks what exists of the socket's path: the directory must be ours and closed
// to others, the socket ours and a socket. What does not exist yet is for the daemon to create.
func checkSocketPath(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &refusal{err.Error()}
	}
	if !st.IsDir() {
		return &refusal{dir + " is not a directory"}
	}
	if err := ownedByUs(dir, st); err != nil {
		return err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return &refusal{fmt.Sprintf("%s is accessible by other users (mode %o)", dir, st.Mode().Perm())}
	}
	st, err = os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &refusal{err.Error()}
	}
	if st.Mode()&fs.ModeSocket == 0 {
		return &refusal{path + " is not a socket"}
	}
	return ownedByUs(path, st)
}

func ownedByUs(path string, st fs.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return &refusal{"cannot read the owner of " + path}
	}
	if int(sys.Uid) != os.Getuid() {
		return &refusal{fmt.Sprintf("%s is owned by uid %d, not by you (uid %d)", path, sys.Uid, os.Getuid())}
	}
	return nil
}
