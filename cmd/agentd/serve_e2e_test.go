package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
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

func TestServeStdioWithTrailingStdioFlag(t *testing.T) {
	e := newRunEnv(t)
	cmd := exec.Command(agentdBin, "serve", "--stdio") // vscode-languageclient appends --stdio
	cmd.Args = append(cmd.Args, "--stdio")
	cmd.Env = e.env()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := newWireEditor(t, procConn{stdout, stdin}, e.ws)
	scenario(t, e, w)
	w.call("shutdown", nil, nil)
	w.conn.Notify(context.Background(), "exit", nil)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("agentd serve exited with %v", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("agentd serve did not exit after exit")
	}
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
	// With every editor gone and no turn running, the daemon started by connect exits. A probe
	// is a connection too, so probe less often than the idle timeout.
	a.conn.Close()
	b.conn.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		time.Sleep(3 * time.Second)
		if c, err := net.Dial("unix", sock); err != nil {
			break
		} else {
			c.Close()
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(filepath.Dir(sock), "agentd.log"))
			t.Fatalf("the shared daemon did not exit when idle; its log:\n%s", log)
		}
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
