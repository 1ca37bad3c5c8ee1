package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

// BenchmarkColdStartInitialize measures `agentd serve --stdio` from exec to the initialize
// response, and reports the resident memory right after initialize.
func BenchmarkColdStartInitialize(b *testing.B) {
	e := newRunEnv(&testing.T{})
	defer e.ollama.Close()
	var rss []float64
	for b.Loop() {
		cmd := exec.Command(agentdBin, "serve", "--stdio")
		cmd.Env = e.env()
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		c := rpc.NewConn(procConn{stdout, stdin})
		c.Go(nopHandler{})
		var res json.RawMessage
		if err := c.Call(context.Background(), "initialize", map[string]any{"processId": nil, "capabilities": map[string]any{}}, &res); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		rss = append(rss, residentMB(cmd.Process.Pid))
		c.Close()
		cmd.Process.Kill()
		cmd.Wait()
		b.StartTimer()
	}
	slices.Sort(rss)
	b.ReportMetric(rss[len(rss)/2], "MB-idle-RSS")
}

// residentMB reads VmRSS of a process.
func residentMB(pid int) float64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	return 0
}

type nopHandler struct{}

func (nopHandler) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return nil, nil
}
func (nopHandler) Notify(ctx context.Context, method string, params json.RawMessage) {}

// benchEditor auto-accepts every review and timestamps tool calls.
type benchEditor struct {
	conn    *rpc.Conn
	mu      sync.Mutex
	started map[string]time.Time
	trips   []time.Duration
	// stage timings of reviewed calls: start → review requested → decision answered → completed
	requested, decided map[string]time.Time
	prep, wait, exec   []time.Duration
	updates            int
	text               int
	done               chan struct{}
}

func (be *benchEditor) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return nil, nil
}

func (be *benchEditor) Notify(ctx context.Context, method string, params json.RawMessage) {
	switch method {
	case rpc.MethodReviewRequested:
		var r rpc.ReviewRequestedParams
		json.Unmarshal(params, &r)
		be.mu.Lock()
		be.requested[r.CallID] = time.Now()
		be.mu.Unlock()
		go func() {
			be.conn.Call(context.Background(), rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: "accept"}}, nil)
			be.mu.Lock()
			be.decided[r.CallID] = time.Now()
			be.mu.Unlock()
		}()
	case rpc.MethodSessionUpdate:
		var u rpc.SessionUpdateParams
		json.Unmarshal(params, &u)
		be.mu.Lock()
		defer be.mu.Unlock()
		be.updates++
		switch u.Update.Type {
		case rpc.UpdateTextDelta:
			be.text += len(u.Update.Text)
		case rpc.UpdateToolCallStarted:
			be.started[u.Update.ToolCall.CallID] = time.Now()
		case rpc.UpdateToolCallCompleted:
			id := u.Update.ToolCall.CallID
			if t, ok := be.started[id]; ok {
				be.trips = append(be.trips, time.Since(t))
				if rq, ok := be.requested[id]; ok {
					be.prep = append(be.prep, rq.Sub(t))
					if d, ok := be.decided[id]; ok {
						be.wait = append(be.wait, d.Sub(rq))
						be.exec = append(be.exec, time.Since(d))
					}
				}
			}
		case rpc.UpdateTurnCompleted, rpc.UpdateTurnFailed:
			if u.Update.Error != nil {
				fmt.Fprintln(os.Stderr, "turn failed:", u.Update.Error.Message)
			}
			be.done <- struct{}{}
		}
	}
}

// socketDaemon starts `agentd serve --listen` and connects an auto-accepting editor.
func socketDaemon(b *testing.B, e *runEnv, mode string) (*benchEditor, string) {
	sock := filepath.Join(e.home, "sock", "bench.sock") // the daemon creates the directory 0700
	cmd := exec.Command(agentdBin, "serve", "--listen", "--socket", sock, "--approval", mode)
	cmd.Env = e.env()
	if logf, err := os.Create(filepath.Join(e.home, "daemon.log")); err == nil {
		cmd.Stderr = logf // keep the benchmark output clean
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var nc net.Conn
	for i := 0; ; i++ {
		var err error
		if nc, err = net.Dial("unix", sock); err == nil {
			break
		}
		if i > 500 {
			b.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	be := &benchEditor{started: map[string]time.Time{}, requested: map[string]time.Time{}, decided: map[string]time.Time{}, done: make(chan struct{}, 4)}
	be.conn = rpc.NewConn(nc)
	be.conn.Go(be)
	ctx := context.Background()
	var res json.RawMessage
	be.conn.Call(ctx, "initialize", map[string]any{"processId": nil, "capabilities": map[string]any{},
		"workspaceFolders":      []map[string]any{{"uri": "file://" + e.ws, "name": "ws"}},
		"initializationOptions": map[string]any{"protocolVersion": 1, "reviews": true}}, &res)
	var s rpc.SessionNewResult
	if err := be.conn.Call(ctx, rpc.MethodSessionNew, map[string]any{}, &s); err != nil {
		b.Fatal(err)
	}
	return be, s.Session.SessionID
}

// BenchmarkToolRoundTripSocket measures one tool call that needs a review, answered at once by an
// editor over the Unix socket: from toolCallStarted to toolCallCompleted as the editor sees them
// (validation, preview, review round trip, revalidation, atomic write, checkpoint, audit).
func BenchmarkToolRoundTripSocket(b *testing.B) {
	b.Run("disk", func(b *testing.B) { toolRoundTrip(b, "") })
	// On tmpfs fsync costs nothing: what remains is agentd's own work.
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		b.Run("tmpfs", func(b *testing.B) { toolRoundTrip(b, "/dev/shm") })
	}
}

func toolRoundTrip(b *testing.B, base string) {
	if base != "" {
		old := os.Getenv("TMPDIR")
		os.Setenv("TMPDIR", base)
		defer os.Setenv("TMPDIR", old)
	}
	e := newRunEnv(&testing.T{})
	defer e.ollama.Close()
	be, session := socketDaemon(b, e, "ask")
	const calls = 40
	e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("read", `{"path":"answer.go"}`)))
	for i := range calls {
		e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("edit", fmt.Sprintf(`{"path":"answer.go","old_string":"return %d","new_string":"return %d"}`, i+1, i+2))))
	}
	e.ollama.Enqueue(ollamatest.Text("done"))
	b.ResetTimer()
	if err := be.conn.Call(context.Background(), rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: session, Text: "go"}, nil); err != nil {
		b.Fatal(err)
	}
	<-be.done
	b.StopTimer()
	be.mu.Lock()
	trips := slices.Clone(be.trips[1:]) // the edits (the first call is the read)
	be.mu.Unlock()
	if len(trips) != calls {
		b.Fatalf("%d round trips", len(trips))
	}
	slices.Sort(trips)
	b.ReportMetric(float64(trips[len(trips)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(trips[len(trips)*9/10].Microseconds())/1000, "ms-p90")
	be.mu.Lock()
	defer be.mu.Unlock()
	for _, st := range []struct {
		name string
		d    []time.Duration
	}{{"prepare", be.prep}, {"review", be.wait}, {"apply", be.exec}} {
		if len(st.d) > 0 {
			slices.Sort(st.d)
			b.ReportMetric(float64(st.d[len(st.d)/2].Microseconds())/1000, "ms-p50-"+st.name)
		}
	}
}

// BenchmarkNotificationThroughput streams a 10,000-token answer to one editor over the Unix
// socket and reports the rate at which text reaches it.
func BenchmarkNotificationThroughput(b *testing.B) {
	e := newRunEnv(&testing.T{})
	defer e.ollama.Close()
	be, session := socketDaemon(b, e, "ask")
	var chunks []ollamatest.Chunk
	total := 0
	for i := range 10000 {
		s := fmt.Sprintf("tok%d ", i)
		total += len(s)
		chunks = append(chunks, ollamatest.Chunk{Content: s})
	}
	e.ollama.AddTurns(ollamatest.Turn{Repeat: true, Reply: ollamatest.Reply{Chunks: chunks}})
	for b.Loop() {
		be.mu.Lock()
		be.text, be.updates = 0, 0
		be.mu.Unlock()
		start := time.Now()
		if err := be.conn.Call(context.Background(), rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: session, Text: "stream"}, nil); err != nil {
			b.Fatal(err)
		}
		<-be.done
		el := time.Since(start)
		be.mu.Lock()
		if be.text != total {
			b.Fatalf("received %d bytes of text, want %d", be.text, total)
		}
		b.ReportMetric(10000/el.Seconds(), "tokens/s")
		b.ReportMetric(float64(be.updates), "notifications")
		be.mu.Unlock()
	}
}
