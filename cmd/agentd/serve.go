package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/agentd/agentd/daemon"
	"github.com/agentd/agentd/harness"
)

// serveCmd runs the editor daemon on stdio (one editor) or on a Unix socket (shared by editors).
func serveCmd(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var s settings
	s.register(fs)
	stdio := fs.Bool("stdio", false, "serve one editor on stdin/stdout")
	listen := fs.Bool("listen", false, "serve editors on a Unix socket")
	socket := fs.String("socket", "", "the socket path (default $XDG_RUNTIME_DIR/agentd/agentd.sock)")
	idle := fs.Duration("idle-timeout", 0, "with --listen: exit after this long with no editor and no running turn (0: never)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// vscode-languageclient appends --stdio after the arguments it was given.
	for _, a := range fs.Args() {
		if a == "--stdio" || a == "-stdio" {
			*stdio = true
		} else {
			fmt.Fprintf(os.Stderr, "agentd serve: unexpected argument %q\n", a)
			return 2
		}
	}
	if *stdio == *listen {
		fmt.Fprintln(os.Stderr, "agentd serve: give exactly one of --stdio and --listen")
		return 2
	}
	opts, warnings, err := s.resolve()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return 2
	}
	for _, w := range warnings {
		slog.Warn("config", "warning", w)
	}
	rt, err := harness.NewRuntime(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return 1
	}
	defer rt.Close()
	srv := daemon.NewServer(rt)
	defer srv.Shutdown()
	logs := daemon.NewLogHandler(slog.Default().Handler())
	logs.Attach(srv)
	slog.SetDefault(slog.New(logs))

	if *stdio {
		// The connection ends with the editor's exit notification — the process then exits at
		// once, 0 after shutdown and 1 without, as the LSP says, even while stdin stays open — or
		// when stdin closes (0).
		done := make(chan int, 1)
		go func() {
			code, exited := srv.ServeConn(stdioConn{})
			if !exited {
				code = 0
			}
			done <- code
		}()
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		select {
		case code := <-done:
			return code
		case <-sigs:
			return 0
		}
	}
	path := *socket
	if path == "" {
		if path, err = defaultSocket(); err != nil {
			fmt.Fprintln(os.Stderr, "agentd:", err)
			return 1
		}
	}
	ln, err := listenSocket(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return 1
	}
	slog.Info("agentd serving", "socket", path, "version", version, "sandbox", rt.SandboxSummary())
	return serveSocket(srv, ln, *idle)
}

func serveSocket(srv *daemon.Server, ln net.Listener, idle time.Duration) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var mu sync.Mutex
	active := 0
	lastLeft := time.Now()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	if idle > 0 {
		go func() {
			t := time.NewTicker(idle / 4)
			defer t.Stop()
			for range t.C {
				mu.Lock()
				quiet := active == 0 && time.Since(lastLeft) > idle && !srv.Busy()
				mu.Unlock()
				if quiet {
					slog.Info("no editor for a while: exiting", "idle", idle)
					stop()
					return
				}
			}
		}()
	}
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return 0
			}
			slog.Error("accept", "err", err)
			return 1
		}
		mu.Lock()
		active++
		mu.Unlock()
		go func() {
			srv.ServeConn(conn)
			mu.Lock()
			active--
			lastLeft = time.Now()
			mu.Unlock()
		}()
	}
}

// defaultSocket is $XDG_RUNTIME_DIR/agentd/agentd.sock, or a per-user directory under the temp
// dir when there is no runtime dir.
func defaultSocket() (string, error) {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "agentd-"+strconv.Itoa(os.Getuid()))
	} else {
		dir = filepath.Join(dir, "agentd")
	}
	return filepath.Join(dir, "agentd.sock"), nil
}

// listenSocket listens on path: the directory is 0700 and ours, the socket 0600. A stale socket
// of ours is replaced; a socket or directory owned by someone else is refused.
func listenSocket(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := checkOwned(dir, true); err != nil {
		return nil, err
	}
	if st, err := os.Lstat(path); err == nil {
		if err := checkOwned(path, false); err != nil {
			return nil, err
		}
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("an agentd daemon is already serving on %s", path)
		}
		os.Remove(path)
	}
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

func checkOwned(path string, dir bool) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("%s is owned by uid %d, not by you (uid %d): refusing to use it", path, sys.Uid, os.Getuid())
	}
	if dir && st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is accessible by other users (mode %o): refusing to use it", path, st.Mode().Perm())
	}
	return nil
}

// stdioConn is the editor connection on stdin/stdout.
type stdioConn struct{}

func (stdioConn) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdioConn) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdioConn) Close() error {
	return errors.Join(os.Stdin.Close(), os.Stdout.Close())
}

var _ io.ReadWriteCloser = stdioConn{}
