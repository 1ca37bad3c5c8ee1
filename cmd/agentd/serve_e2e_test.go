package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

// wireEditor is a minimal editor speaking to a real agentd process.
type wireEditor struct {
	t     *testing.T
	conn  *rpc.Conn
	mu    sync.Mutex
	notes []string
	wake  chan struct{}
}

func (w *wireEditor) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "window/workDoneProgress/create":
		return nil, nil
	}
	return nil, rpc.ErrMethodNotFound
}

func (w *wireEditor) Notify(ctx context.Context, method string, params json.RawMessage) {
	w.mu.Lock()
	w.notes = append(w.notes, method+" "+string(params))
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func newWireEditor(t *testing.T, rwc io.ReadWriteCloser, ws string) *wireEditor {
	w := &wireEditor{t: t, wake: make(chan struct{}, 1)}
	w.conn = rpc.NewConn(rwc)
	w.conn.Go(w)
	t.Cleanup(func() { w.conn.Close() })
	var res map[string]any
	w.call("initialize", map[string]any{"processId": nil, "capabilities": map[string]any{},
		"workspaceFolders":      []map[string]any{{"uri": "file://" + ws, "name": "ws"}},
		"initializationOptions": map[string]any{"protocolVersion": 1, "reviews": true}}, &res)
	caps, _ := res["capabilities"].(map[string]any)
	if caps["experimental"] == nil {
		t.Fatalf("initialize result = %v", res)
	}
	w.conn.Notify(context.Background(), "initialized", map[string]any{})
	return w
}

func (w *wireEditor) call(method string, params, result any) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.conn.Call(ctx, method, params, result); err != nil {
		w.t.Fatalf("%s: %v", method, err)
	}
}

func (w *wireEditor) waitFor(substr string) string {
	w.t.Helper()
	deadline := time.After(30 * time.Second)
	seen := 0
	for {
		w.mu.Lock()
		notes := w.notes
		w.mu.Unlock()
		for ; seen < len(notes); seen++ {
			if strings.Contains(notes[seen], substr) {
				return notes[seen]
			}
		}
		select {
		case <-w.wake:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			w.t.Fatalf("no notification with %q; got:\n%s", substr, strings.Join(notes, "\n"))
		}
	}
}

// scenario runs prompt → review → accept → done against a connected editor.
func scenario(t *testing.T, e *runEnv, w *wireEditor) {
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"answer.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"answer.go","old_string":"return 1","new_string":"return 2"}`)),
		ollamatest.Text("Changed."),
	)
	var s rpc.SessionNewResult
	w.call(rpc.MethodSessionNew, map[string]any{}, &s)
	w.call(rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: s.Session.SessionID, Text: "make it 2"}, nil)
	note := w.waitFor(rpc.MethodReviewRequested)
	var r rpc.ReviewRequestedParams
	json.Unmarshal([]byte(strings.TrimPrefix(note, rpc.MethodReviewRequested+" ")), &r)
	w.call(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: "accept"}}, nil)
	w.waitFor(`"turnCompleted"`)
	if !strings.Contains(e.read("answer.go"), "return 2") {
		t.Errorf("answer.go =\n%s", e.read("answer.go"))
	}
}

type procConn struct {
	io.ReadCloser
	io.WriteCloser
}

func (p procConn) Close() error { p.WriteCloser.Close(); return p.ReadCloser.Close() }

// stdioServer is `agentd serve --stdio` with an editor on its stdio. The test holds the write end of
// its stdin open until the test ends: closing it would end the daemon by EOF, not by exit.
type stdioServer struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   *os.File
	editor  *wireEditor
	exited  chan struct{} // closed when the process has exited; then waitErr is set
	waitErr error
}

func startServeStdio(t *testing.T, e *runEnv, args ...string) *stdioServer {
	t.Helper()
	return startServeStdioEnv(t, e, e.env(), args...)
}

// startServeStdioEnv is startServeStdio with the environment env.
func startServeStdioEnv(t *testing.T, e *runEnv, env []string, args ...string) *stdioServer {
	t.Helper()
	cmd := exec.Command(agentdBin, append([]string{"serve", "--stdio"}, args...)...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = inR // an *os.File: the child gets it as is, with no copying goroutine
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close() // the child holds the only read end
	s := &stdioServer{t: t, cmd: cmd, stdin: inW, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-s.exited:
		default:
			cmd.Process.Kill()
			<-s.exited
		}
	})
	// The editor writes to the pipe through a wrapper whose Close leaves stdin open.
	s.editor = newWireEditor(t, procConn{stdout, keepOpen{inW}}, e.ws)
	return s
}

// keepOpen writes to a file and does not close it.
type keepOpen struct{ *os.File }

func (keepOpen) Close() error { return nil }

// exit sends the exit notification and returns the process's exit code. It fails the test if the
// process does not exit, or if it only exited because stdin was closed.
func (s *stdioServer) exit() int {
	s.t.Helper()
	sent := time.Now()
	if err := s.editor.conn.Notify(context.Background(), "exit", nil); err != nil {
		s.t.Fatalf("sending exit: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.t.Fatal("timed out waiting for agentd serve --stdio to exit after the exit notification, stdin open")
	}
	s.t.Logf("agentd serve --stdio exited %v after exit was sent", time.Since(sent))
	// The only write end of agentd's stdin is ours, and it is still open: agentd cannot have seen
	// the end of its input. (A write would not tell: a child agentd forked a moment before it
	// exited may still hold the read end until its exec.)
	if _, serr := s.stdin.Stat(); serr != nil {
		s.t.Errorf("agentd's stdin was closed before it exited (%v): it may have ended on EOF, not on exit", serr)
	}
	err := s.waitErr
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.Exited():
		return ee.ExitCode()
	}
	s.t.Fatalf("agentd serve --stdio ended with %v", err)
	return -1
}

func TestServeStdioWithTrailingStdioFlag(t *testing.T) {
	e := newRunEnv(t)
	s := startServeStdio(t, e, "--stdio") // vscode-languageclient appends --stdio
	scenario(t, e, s.editor)
	s.editor.call("shutdown", nil, nil)
	if code := s.exit(); code != 0 {
		t.Errorf("exit code after shutdown and exit = %d, want 0", code)
	}
}

// The LSP's exit ends the process at once, whatever the state of stdin: 0 after shutdown, 1
// without.
func TestServeStdioExitEndsTheProcessWhileStdinIsOpen(t *testing.T) {
	t.Run("after shutdown", func(t *testing.T) {
		e := newRunEnv(t)
		s := startServeStdio(t, e)
		var sess rpc.SessionNewResult
		s.editor.call(rpc.MethodSessionNew, map[string]any{}, &sess) // a live session to shut down
		s.editor.call("shutdown", nil, nil)
		if code := s.exit(); code != 0 {
			t.Errorf("exit code after shutdown and exit = %d, want 0", code)
		}
	})
	t.Run("without shutdown", func(t *testing.T) {
		e := newRunEnv(t)
		s := startServeStdio(t, e)
		if code := s.exit(); code != 1 {
			t.Errorf("exit code after exit without shutdown = %d, want 1", code)
		}
	})
}

func TestConnectStartsTheSharedDaemonAndEditorsShareSessions(t *testing.T) {
	e := newRunEnv(t)
	sock := filepath.Join(e.home, "run", "agentd", "agentd.sock")
	start := func() (*exec.Cmd, *wireEditor) {
		cmd := exec.Command(agentdBin, "connect", "--idle-timeout", "2s")
		cmd.Env = e.env()
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, newWireEditor(t, procConn{stdout, stdin}, e.ws)
	}
	_, a := start()
	// The socket is private: 0600 in a 0700 directory.
	st, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := os.Stat(filepath.Dir(sock))
	if st.Mode().Perm() != 0o600 || dir.Mode().Perm() != 0o700 || st.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket mode %v, dir mode %v", st.Mode(), dir.Mode())
	}
	scenario(t, e, a)
	// A second editor, through a second connect, sees the same session.
	_, b := start()
	var list rpc.SessionListResult
	b.call(rpc.MethodSessionList, map[string]any{}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Attached != 1 {
		t.Fatalf("second editor sees %+v", list.Sessions)
	}
	var att rpc.SessionAttachResult
	b.call(rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: list.Sessions[0].SessionID}, &att)
	if att.Session.Attached != 2 || len(att.History) == 0 {
		t.Errorf("attach = %+v", att)
	}
	// With every editor gone and no turn running, the daemon started by connect exits: it says so
	// in its log and its listener removes the socket. (Probing with a connection would count as an
	// editor and keep it alive.)
	a.conn.Close()
	b.conn.Close()
	logPath := filepath.Join(filepath.Dir(sock), "agentd.log")
	deadline := time.Now().Add(30 * time.Second)
	for {
		log, _ := os.ReadFile(logPath)
		_, err := os.Lstat(sock)
		if os.IsNotExist(err) && strings.Contains(string(log), "no editor for a while: exiting") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the idle shared daemon to log its exit and remove %s (stat: %v); its log:\n%s", sock, err, log)
		}
		time.Sleep(50 * time.Millisecond) // polling files: nothing to wake on
	}
}

func TestListenRefusesASocketDirectoryOwnedBySomeoneElse(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to create a directory owned by another user")
	}
	e := newRunEnv(t)
	dir := filepath.Join(e.home, "foreign")
	os.MkdirAll(dir, 0o700)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(agentdBin, "serve", "--listen", "--socket", filepath.Join(dir, "agentd.sock"))
	cmd.Env = e.env()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not by you") {
		t.Errorf("serve --listen in a foreign directory: %v\n%s", err, out)
	}
	// A world-accessible directory of ours is refused too.
	open := filepath.Join(e.home, "open")
	os.MkdirAll(open, 0o700)
	os.Chmod(open, 0o777)
	cmd = exec.Command(agentdBin, "serve", "--listen", "--socket", filepath.Join(open, "agentd.sock"))
	cmd.Env = e.env()
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "accessible by other users") {
		t.Errorf("serve --listen in a 0777 directory: %v\n%s", err, out)
	}
}
