package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/rpc"
)

// The first tests against a real inference engine: llama.cpp's llama-server (Debian sid's
// llama.cpp-tools, installed by editors/nvim/scripts/setup-e2e.sh into the sid root file system)
// runs the tiny deterministic model of gguf_test.go, and agentd talks to it through engine openai.

// llamaServerBin is the llama-server wrapper setup-e2e.sh writes. AGENTD_LLAMA_SERVER names it
// where it must be there (.ci/run sets it: the tests fail without it); otherwise the tests look
// in $AGENTD_E2E_DIR/bin (default /opt/agentd-e2e/bin) and are skipped when it is missing.
func llamaServerBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("AGENTD_LLAMA_SERVER"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("AGENTD_LLAMA_SERVER: %v (editors/nvim/scripts/setup-e2e.sh installs it)", err)
		}
		return p
	}
	dir := os.Getenv("AGENTD_E2E_DIR")
	if dir == "" {
		dir = "/opt/agentd-e2e"
	}
	p := filepath.Join(dir, "bin", "llama-server")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("llama-server is not installed at %s (editors/nvim/scripts/setup-e2e.sh installs it; AGENTD_LLAMA_SERVER makes it required)", p)
	}
	return p
}

// llamaServer is a running llama-server with the tiny model.
type llamaServer struct {
	url  string // the API base, ".../v1"
	root string
}

// startLlamaServer starts llama-server with the tiny model and `slots` slots of 16384 tokens,
// and returns once it says it listens (it prints that line after the model is loaded).
func startLlamaServer(t *testing.T, slots int) *llamaServer {
	t.Helper()
	bin := llamaServerBin(t)
	model := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := os.WriteFile(model, tinyModel(), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-m", model, "--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"-c", fmt.Sprint(16384*slots), "-np", fmt.Sprint(slots), "-t", "1", "--metrics")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	listening := make(chan struct{})
	var log strings.Builder
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !said && strings.Contains(sc.Text(), "listening on http://") {
				said = true
				close(listening)
			}
		}
	}()
	select {
	case <-listening:
	case <-logDone:
		t.Fatalf("llama-server exited:\n%s", log.String())
	case <-time.After(120 * time.Second):
		t.Fatalf("llama-server did not start:\n%s", log.String())
	}
	root := fmt.Sprintf("http://127.0.0.1:%d", port)
	return &llamaServer{url: root + "/v1", root: root}
}

func (s *llamaServer) env(e *runEnv) []string {
	return append(e.env(), "AGENTD_ENGINE=openai", "AGENTD_ENGINE_URL="+s.url)
}

// usages reads the usage entries of the session journals under the state directory.
func usages(t *testing.T, e *runEnv) []map[string]any {
	t.Helper()
	var out []map[string]any
	filepath.WalkDir(filepath.Join(e.home, "state"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		for _, line := range strings.Split(string(b), "\n") {
			var ent struct {
				Type  string         `json:"type"`
				Usage map[string]any `json:"usage"`
			}
			if json.Unmarshal([]byte(line), &ent) == nil && ent.Type == "usage" && ent.Usage != nil {
				out = append(out, ent.Usage)
			}
		}
		return nil
	})
	return out
}

// `agentd run` against llama-server: the model calls read, agentd runs it, the model answers
// from the result, and the follow-up request found the first one's prompt in the slot's cache.
func TestRunAgainstLlamaServer(t *testing.T) {
	srv := startLlamaServer(t, 1)
	e := newRunEnv(t)
	if err := os.WriteFile(filepath.Join(e.ws, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := e.runPTYEnv(srv.env(e), nil, "run", "what does hello.txt say?")
	if code != 0 {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
	for _, want := range []string{"hello.txt", strings.Join(tinyAnswer, "")} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	us := usages(t, e)
	t.Logf("usage per model call: %v", us)
	if len(us) != 2 {
		t.Fatalf("usage entries %v, want two model calls", us)
	}
	first, _ := us[0]["promptTokens"].(float64)
	cached, _ := us[1]["cachedTokens"].(float64)
	if first == 0 || cached < first-1 {
		// The slot keeps the first request's prompt; the second request starts with it (the
		// last token of a prompt is always evaluated again).
		t.Errorf("the follow-up request reused %v cached tokens of the first's %v: %v", cached, first, us)
	}
}

// The daemon against llama-server: an editor's prompt runs the same tool call, its result and
// the answer arrive as updates, the usage update of the follow-up says what was cached, and
// daemon/status names the engine.
func TestDaemonAgainstLlamaServer(t *testing.T) {
	srv := startLlamaServer(t, 1)
	e := newRunEnv(t)
	if err := os.WriteFile(filepath.Join(e.ws, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServeStdioEnv(t, e, srv.env(e))
	w := s.editor
	var st rpc.DaemonStatusResult
	w.call(rpc.MethodDaemonStatus, map[string]any{}, &st)
	if st.Engine != "openai "+srv.url || st.Ollama != "ok" {
		t.Errorf("daemon/status = %+v", st)
	}
	var ns rpc.SessionNewResult
	w.call(rpc.MethodSessionNew, map[string]any{}, &ns)
	w.call(rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: ns.Session.SessionID, Text: "what does hello.txt say?"}, nil)
	done := w.waitFor(`"toolCallCompleted"`)
	if !strings.Contains(done, `"tool":"read"`) || !strings.Contains(done, "hello") {
		t.Errorf("tool call: %s", done)
	}
	w.waitFor(`"turnCompleted"`)
	w.waitFor(strings.Join(tinyAnswer, ""))
	var cached []int
	w.mu.Lock()
	for _, n := range w.notes {
		var p rpc.SessionUpdateParams
		if json.Unmarshal([]byte(strings.TrimPrefix(n, rpc.MethodSessionUpdate+" ")), &p) == nil && p.Update.Usage != nil {
			cached = append(cached, p.Update.Usage.CachedTokens)
		}
	}
	w.mu.Unlock()
	t.Logf("cached tokens per model call: %v", cached)
	if len(cached) != 2 || cached[0] != 0 || cached[1] == 0 {
		t.Errorf("cached tokens per model call %v, want none then the first prompt", cached)
	}
}

// metric reads one value of llama-server's Prometheus metrics.
func (s *llamaServer) metric(name string) (float64, error) {
	resp, err := http.Get(s.root + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			_, err := fmt.Sscan(v, &f)
			return f, err
		}
	}
	return 0, fmt.Errorf("no metric %s in:\n%s", name, b)
}

// One llama-server with N slots serves N sessions at once and queues the next: N+1 daemon
// sessions whose model replies run long (the tiny model's LOOP script) are seen, in llama-server's
// own metrics, as N requests processing and one deferred. The sessions are then cancelled.
func TestLlamaServerSlotsServeSessionsThenQueue(t *testing.T) {
	for _, slots := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d slots", slots), func(t *testing.T) {
			srv := startLlamaServer(t, slots)
			e := newRunEnv(t)
			w := startServeStdioEnv(t, e, srv.env(e)).editor
			var ids []string
			for range slots + 1 {
				var ns rpc.SessionNewResult
				w.call(rpc.MethodSessionNew, map[string]any{}, &ns)
				ids = append(ids, ns.Session.SessionID)
				w.call(rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: ns.Session.SessionID, Text: "count forever: LOOP"}, nil)
			}
			// llama-server has no event to wait on: its gauges are read until they show every
			// slot busy and one request waiting, or the deadline passes.
			var processing, deferred float64
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for processing != float64(slots) || deferred != 1 {
				select {
				case <-ctx.Done():
					t.Fatalf("llama-server never had %d requests processing and 1 deferred (last: %v, %v)", slots, processing, deferred)
				case <-tick.C:
				}
				var err error
				if processing, err = srv.metric("llamacpp:requests_processing"); err != nil {
					t.Fatal(err)
				}
				if deferred, err = srv.metric("llamacpp:requests_deferred"); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%d slots: %v sessions generating at once, %v queued", slots, processing, deferred)
			for _, id := range ids {
				w.call(rpc.MethodSessionCancel, rpc.SessionCancelParams{SessionID: id}, nil)
			}
		})
	}
}
