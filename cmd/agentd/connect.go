package main

import (
	"flag"
	"fmt"
	"io"
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
	conn, err := net.Dial("unix", path)
	if err != nil {
		if conn, err = startDaemon(path, args, *idle); err != nil {
			fmt.Fprintln(os.Stderr, "agentd connect:", err)
			return 1
		}
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
		conn, err := net.Dial("unix", path)
		if err == nil {
			return conn, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the daemon did not start (see %s): %v", logFile.Name(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
