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
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

// BenchmarkColdStartInitialize measures `agentd serve --stdio` from exec to the initialize
// response (ns/op is the mean, ms-median the median), and reports the resident memory right
// after initialize. The reference, measured alternately in the same run (these machines are
// noisy: compare ratios), is exec to exit of /bin/true (ms-median-true).
func BenchmarkColdStartInitialize(b *testing.B) {
	e := newRunEnv(&testing.T{})
	defer e.ollama.Close()
	var rss, anon, took, truth []float64
	for b.Loop() {
		b.StopTimer()
		t1 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		truth = append(truth, float64(time.Since(t1).Microseconds())/1000)
		b.StartTimer()
		t0 := time.Now()
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
		took = append(took, float64(time.Since(t0).Microseconds())/1000)
		rss = append(rss, residentMB(cmd.Process.Pid, "VmRSS:"))
		anon = append(anon, residentMB(cmd.Process.Pid, "RssAnon:"))
		c.Close()
		cmd.Process.Kill()
		cmd.Wait()
		b.StartTimer()
	}
	slices.Sort(rss)
	slices.Sort(took)
	slices.Sort(anon)
	slices.Sort(truth)
	b.ReportMetric(truth[len(truth)/2], "ms-median-true")
	b.ReportMetric(rss[len(rss)/2], "MB-idle-RSS")
	b.ReportMetric(anon[len(anon)/2], "MB-idle-RSS-anon")
	b.ReportMetric(took[len(took)/2], "ms-median")
}

// residentMB reads a field of a process's status in MB: VmRSS (all resident memory, including the
// pages of the binary itself, shared through the page cache) or RssAnon (its own memory).
func residentMB(pid int, field string) float64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
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
	// completed are the times tool calls completed, in order.
	completed []time.Time
	// pid is the process started by socketDaemonStop (the wrapper's, when wrapped), and
	// cpuAtFirst its CPU time (cpuSeconds) when the first tool call completed.
	pid        int
	cpuAtFirst float64
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
			be.completed = append(be.completed, time.Now())
			if len(be.completed) == 1 {
				be.cpuAtFirst = cpuSeconds(be.pid)
			}
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

// stopDaemon ends a daemon started by socketDaemon and waits for it. Under a wrapper (strace) the
// signal goes to the wrapper's child, the daemon, and the wrapper exits after it.
func stopDaemon(cmd *exec.Cmd) {
	pid := cmd.Process.Pid
	if kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil && filepath.Base(cmd.Path) != "agentd" {
		if f := strings.Fields(string(kids)); len(f) > 0 {
			pid, _ = strconv.Atoi(f[0])
		}
	}
	syscall.Kill(pid, syscall.SIGTERM)
	cmd.Wait()
}

// socketDaemon starts `agentd serve --listen` and connects an auto-accepting editor.
func socketDaemon(b *testing.B, e *runEnv, mode string, wrap ...string) (*benchEditor, string) {
	be, id, _ := socketDaemonStop(b, e, mode, wrap...)
	return be, id
}

// socketDaemonStop is socketDaemon that also returns a function stopping the daemon.
func socketDaemonStop(b *testing.B, e *runEnv, mode string, wrap ...string) (*benchEditor, string, func()) {
	sock := filepath.Join(e.home, "sock", "bench.sock") // the daemon creates the directory 0700
	argv := append(slices.Clone(wrap), agentdBin, "serve", "--listen", "--socket", sock, "--approval", mode)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = e.env()
	if logf, err := os.Create(filepath.Join(e.home, "daemon.log")); err == nil {
		cmd.Stderr = logf // keep the benchmark output clean
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := sync.OnceFunc(func() { stopDaemon(cmd) })
	b.Cleanup(stop)
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
	be := &benchEditor{started: map[string]time.Time{}, requested: map[string]time.Time{}, decided: map[string]time.Time{}, done: make(chan struct{}, 4),
		pid: cmd.Process.Pid}
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
	return be, s.Session.SessionID, stop
}

// BenchmarkToolRoundTripSocket measures one tool call that needs a review, answered at once by an
// editor over the Unix socket: from toolCallStarted to toolCallCompleted as the editor sees them
// (validation, preview, review round trip, revalidation, atomic write, checkpoint, audit).
func BenchmarkToolRoundTripSocket(b *testing.B) {
	b.Run("disk", func(b *testing.B) { toolRoundTrip(b, "", nil) })
	// On tmpfs fsync costs nothing: what remains is agentd's own work.
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		b.Run("tmpfs", func(b *testing.B) { toolRoundTrip(b, "/dev/shm", nil) })
	}
	// The daemon under strace: how many fsync/fdatasync calls one edit makes (in the daemon's
	// whole life, divided by the edits), and how many system calls other than the Go runtime's
	// own (scheduling, memory, signals) the daemon makes per edit while the turn runs (from the
	// read's completion to the last edit's: each edit and the model request before it). No
	// timing: strace slows every system call.
	if _, err := exec.LookPath("strace"); err == nil {
		b.Run("fsyncs", func(b *testing.B) {
			out := filepath.Join(b.TempDir(), "strace.out")
			var from, to time.Time
			stop := toolRoundTripWindow(b, "", []string{"strace", "-f", "-qq", "-ttt", "-o", out}, &from, &to)
			stop() // strace's output is complete once the daemon is gone
			data, err := os.ReadFile(out)
			if err != nil {
				b.Fatal(err)
			}
			fsyncs, calls := countSyscalls(string(data), from, to)
			b.ReportMetric(float64(fsyncs)/roundTripEdits, "fsyncs/edit")
			b.ReportMetric(float64(calls)/roundTripEdits, "syscalls/edit")
		})
	}
}

// runtimeSyscalls are the Go runtime's own system calls (scheduling, memory, signals, threads),
// left out of syscalls/edit: they count waits, not work.
var runtimeSyscalls = map[string]bool{"futex": true, "nanosleep": true, "epoll_pwait": true, "epoll_wait": true,
	"sched_yield": true, "rt_sigreturn": true, "rt_sigprocmask": true, "rt_sigaction": true, "tgkill": true,
	"getpid": true, "gettid": true, "madvise": true, "mmap": true, "munmap": true, "mprotect": true,
	"sigaltstack": true, "clone": true, "clone3": true, "sched_getaffinity": true, "pread64": true}

// countSyscalls reads `strace -f -ttt` output: the fsync/fdatasync calls of the whole run, and
// the system calls other than runtimeSyscalls that started between from and to. pread64 is
// left out too: the runtime reads the cgroup CPU quota with it.
func countSyscalls(trace string, from, to time.Time) (fsyncs, calls int) {
	lo, hi := float64(from.UnixMicro())/1e6, float64(to.UnixMicro())/1e6
	for line := range strings.Lines(trace) {
		f := strings.Fields(line) // pid, time, call
		if len(f) < 3 {
			continue
		}
		name, _, ok := strings.Cut(f[2], "(")
		if !ok || strings.HasPrefix(f[2], "<...") {
			continue // a resumed call (counted where it started), a signal, an exit
		}
		if name == "fsync" || name == "fdatasync" {
			fsyncs++
		}
		if t, err := strconv.ParseFloat(f[1], 64); err == nil && t >= lo && t <= hi && !runtimeSyscalls[name] {
			calls++
		}
	}
	return fsyncs, calls
}

// roundTripEdits is the number of reviewed edits in one toolRoundTrip run, all in one turn.
const roundTripEdits = 40

// toolRoundTrip returns a function that stops the daemon (also called at cleanup).
func toolRoundTrip(b *testing.B, base string, wrap []string) (stop func()) {
	var from, to time.Time
	return toolRoundTripWindow(b, base, wrap, &from, &to)
}

// toolRoundTripWindow is toolRoundTrip that also returns when the first call (the read) and the
// last edit completed. Without a wrapper it reports the daemon's CPU time per edit
// (cpu-ms/edit: user and system, in that window; clock ticks, so ±10 ms over the 40 edits).
func toolRoundTripWindow(b *testing.B, base string, wrap []string, from, to *time.Time) (stop func()) {
	if base != "" {
		old := os.Getenv("TMPDIR")
		os.Setenv("TMPDIR", base)
		defer os.Setenv("TMPDIR", old)
	}
	e := newRunEnv(&testing.T{})
	defer e.ollama.Close()
	be, session, stop := socketDaemonStop(b, e, "ask", wrap...)
	const calls = roundTripEdits
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
	if n := len(be.completed); n > 0 {
		*from, *to = be.completed[0], be.completed[n-1]
	}
	be.mu.Unlock()
	if len(wrap) == 0 {
		be.mu.Lock()
		cpu0 := be.cpuAtFirst
		be.mu.Unlock()
		b.ReportMetric((cpuSeconds(be.pid)-cpu0)*1000/roundTripEdits, "cpu-ms/edit")
	}
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
	return stop
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

// BenchmarkSandboxCost measures what agentd adds to `bash -c true` — a bash call through the
// daemon (yolo mode: no review), from toolCallStarted to toolCallCompleted as the editor sees it:
// policy, the per-command cgroup, the git guard, the sandbox and the result — beside what a bare
// `bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent` adds, both
// against a plain `bash -c true`, in rounds so that all three see the same load. Reported: the
// medians, and agentd's added time as a ratio of bare bubblewrap's.
func BenchmarkSandboxCost(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("no bubblewrap on this machine: nothing to compare agentd's sandbox with")
	}
	e := newRunEnv(&testing.T{})
	defer e.ollama.Close()
	// SANDBOXCOST_WRAP runs the daemon under a profiler, e.g. "strace -f -tt -o /tmp/trace".
	be, session := socketDaemon(b, e, "yolo", strings.Fields(os.Getenv("SANDBOXCOST_WRAP"))...)
	const perRound = 5
	run := func(argv ...string) time.Duration {
		t0 := time.Now()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = e.ws
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", argv, err, out)
		}
		return time.Since(t0)
	}
	var plain, bare []time.Duration
	first := 0
	for b.Loop() {
		for range perRound {
			e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("bash", `{"command":"true"}`)))
		}
		e.ollama.Enqueue(ollamatest.Text("done"))
		if err := be.conn.Call(context.Background(), rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: session, Text: "go"}, nil); err != nil {
			b.Fatal(err)
		}
		<-be.done
		for range perRound {
			plain = append(plain, run("bash", "-c", "true"))
			bare = append(bare, run(bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "bash", "-c", "true"))
		}
		if first == 0 {
			be.mu.Lock()
			first = len(be.trips) // the first round warms the daemon (sandbox probe, caches)
			be.mu.Unlock()
		}
	}
	be.mu.Lock()
	agentd := slices.Clone(be.trips)
	be.mu.Unlock()
	if len(agentd) != perRound*b.N {
		b.Fatalf("%d bash calls completed, want %d", len(agentd), perRound*b.N)
	}
	if b.N > 1 {
		agentd, plain, bare = agentd[first:], plain[first:], bare[first:]
	}
	ms := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	p, a, w := ms(plain), ms(agentd), ms(bare)
	b.ReportMetric(p, "ms-plain")
	b.ReportMetric(a, "ms-agentd")
	b.ReportMetric(w, "ms-bare-bwrap")
	b.ReportMetric((a-p)/(w-p), "x-added-vs-bare")
}

// cpuSeconds is the CPU time (user and system) process pid has used, from /proc/<pid>/stat.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses: utime and stime are the 12th and
	// 13th (fields 14 and 15 of the whole line), in clock ticks of 1/100 s.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100
}
