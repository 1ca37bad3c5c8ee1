package ollama_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama"
)

// recording is one exchange recorded from a real Ollama server (testdata/wire, copied from
// /work/shared/ollama-wire): the request body, the raw response bytes, and from the meta file the
// status line, headers, and how the body ended.
type recording struct {
	name      string
	method    string
	path      string
	status    int
	header    http.Header
	request   []byte // nil when the request had no body
	body      []byte
	readError string // "context canceled", "unexpected EOF", … when the body read failed
	transport string // a transport error instead of a response (connection refused)
}

var (
	statusLineRE = regexp.MustCompile(`^< HTTP/1\.1 (\d{3}) `)
	requestRE    = regexp.MustCompile(`^> (GET|POST|HEAD|DELETE) (\S+)`)
	headerRE     = regexp.MustCompile(`^< ([A-Za-z-]+): (.*)$`)
	readErrRE    = regexp.MustCompile(`^body read error at \S+: (.*)$`)
)

func loadRecording(t testing.TB, name string) recording {
	t.Helper()
	dir := filepath.Join("testdata", "wire")
	meta, err := os.ReadFile(filepath.Join(dir, name+".meta.txt"))
	if err != nil {
		t.Fatalf("recording %s: %v", name, err)
	}
	r := recording{name: name, header: http.Header{}}
	sc := bufio.NewScanner(bytes.NewReader(meta))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case requestRE.MatchString(line):
			m := requestRE.FindStringSubmatch(line)
			r.method, r.path = m[1], m[2]
		case statusLineRE.MatchString(line):
			r.status, _ = strconv.Atoi(statusLineRE.FindStringSubmatch(line)[1])
		case headerRE.MatchString(line):
			m := headerRE.FindStringSubmatch(line)
			// The server sets these itself from what it sends.
			if k := http.CanonicalHeaderKey(m[1]); k != "Date" && k != "Content-Length" {
				r.header.Add(k, m[2])
			}
		case readErrRE.MatchString(line):
			r.readError = readErrRE.FindStringSubmatch(line)[1]
		case strings.HasPrefix(line, "transport error: "):
			r.transport = strings.TrimPrefix(line, "transport error: ")
		}
	}
	if req, err := os.ReadFile(filepath.Join(dir, name+".request.json")); err == nil {
		r.request = req
	}
	if body, err := os.ReadFile(filepath.Join(dir, name+".response.ndjson")); err == nil {
		r.body = body
	}
	if r.status == 0 && r.transport == "" {
		t.Fatalf("recording %s: no status line in the meta file", name)
	}
	return r
}

// replayServer serves recordings in order, one per request (the last one repeats), and keeps the
// request bodies it received.
type replayServer struct {
	*httptest.Server
	t    testing.TB
	recs []recording

	mu       sync.Mutex
	n        int
	requests [][]byte
}

func newReplayServer(t testing.TB, recs ...recording) *replayServer {
	t.Helper()
	rs := &replayServer{t: t, recs: recs}
	rs.Server = httptest.NewServer(rs)
	t.Cleanup(func() {
		rs.CloseClientConnections()
		rs.Close()
	})
	return rs
}

func (rs *replayServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rs.mu.Lock()
	rec := rs.recs[min(rs.n, len(rs.recs)-1)]
	rs.n++
	rs.requests = append(rs.requests, body)
	rs.mu.Unlock()
	if r.Method != rec.method || r.URL.Path != rec.path {
		rs.t.Errorf("replay %s: got %s %s, recorded %s %s", rec.name, r.Method, r.URL.Path, rec.method, rec.path)
		w.WriteHeader(http.StatusTeapot)
		return
	}
	for k, vs := range rec.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.status)
	flusher := w.(http.Flusher)
	// Line by line, flushed, as the real server streamed them.
	for line := range bytes.Lines(rec.body) {
		w.Write(line)
		flusher.Flush()
	}
	switch {
	case rec.readError == "unexpected EOF":
		panic(http.ErrAbortHandler) // the server died: the connection is cut
	case strings.HasPrefix(rec.readError, "context"):
		<-r.Context().Done() // the stream went on until the client gave up
	}
}

func (rs *replayServer) lastRequest() []byte {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.requests) == 0 {
		return nil
	}
	return rs.requests[len(rs.requests)-1]
}

func (rs *replayServer) count() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.n
}

func newClient(t testing.TB, url, model string, retry ollama.RetryPolicy) *ollama.Client {
	t.Helper()
	c, err := ollama.New(ollama.Config{Host: url, Model: model, Retry: retry})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fastRetry keeps retry tests quick.
var fastRetry = ollama.RetryPolicy{Attempts: 3, Initial: time.Millisecond, Max: 4 * time.Millisecond}

// chatResult is what one Chat call produced.
type chatResult struct {
	deltas []agent.Delta
	resp   *agent.ModelResponse
	err    error
}

func (r chatResult) text() string {
	var b strings.Builder
	for _, d := range r.deltas {
		b.WriteString(d.Text)
	}
	return b.String()
}

func (r chatResult) thinking() string {
	var b strings.Builder
	for _, d := range r.deltas {
		b.WriteString(d.Thinking)
	}
	return b.String()
}

func runChat(ctx context.Context, c *ollama.Client, req *agent.ModelRequest) chatResult {
	var res chatResult
	res.resp, res.err = c.Chat(ctx, req, func(d agent.Delta) { res.deltas = append(res.deltas, d) })
	return res
}

// modelError asserts err is a *agent.ModelError of the kind.
func modelError(t testing.TB, err error, kind agent.ModelErrorKind) *agent.ModelError {
	t.Helper()
	var me *agent.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T), want a *agent.ModelError of kind %s", err, err, kind)
	}
	if me.Kind != kind {
		t.Fatalf("kind %s (%v), want %s", me.Kind, me, kind)
	}
	return me
}
