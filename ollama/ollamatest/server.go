// Package ollamatest is a scriptable fake Ollama server for tests: it speaks /api/chat (streaming
// and not), /api/generate (fill-in-the-middle), /api/show, /api/tags, /api/version and /api/ps
// with the api package's own types, answers chat and generate requests from a Script, and records
// every one of them.
//
// Go tests use NewServer; other languages run cmd/fakeollama with a JSON script (see its README.md).
package ollamatest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"
)

// Server is a running fake Ollama server. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL ("http://127.0.0.1:port"), for ollama.Config.Host.
	URL string

	srv     *httptest.Server
	closing chan struct{} // closed by Close: hanging replies end

	mu        sync.Mutex
	script    Script
	used      []bool // used[i]: Turns[i] answered and is not Repeat
	fallback  func(*api.ChatRequest) Reply
	chats     []ChatRecord
	newChat   chan struct{} // closed and forgotten when a chat request is recorded (WaitChats)
	calls     []string
	unmatched []string
	nextID    int
	loaded    map[string]*runner // model (normalized name) → its runner, as /api/ps reports it
	// generates are the /api/generate requests; genUsed[i]: Generates[i] answered and is not
	// Repeat; genChanged is closed and replaced when a generate request arrives or ends.
	generates  []GenerateRecord
	genUsed    []bool
	genChanged chan struct{}
	keepAlive  time.Duration // the server's own keep-alive (OLLAMA_KEEP_ALIVE); 0: 5 minutes
}

// runner is a loaded model as Ollama's scheduler keeps it.
type runner struct {
	until  time.Time     // when it unloads
	keep   time.Duration // its keep-alive, counted from each request
	numCtx int           // runner options: a request with other values reloads the model
	shift  bool
	prompt string // the last prompt it evaluated, rendered: its prompt cache
	size   int64  // its memory: weights and KV cache (Model.Weights)
	vram   int64  // the part in GPU memory (Script.GPUMemory)
}

// ChatRecord is one chat request the server received.
type ChatRecord struct {
	// Body is the request body, byte for byte.
	Body json.RawMessage `json:"body"`
	// Request is Body decoded.
	Request api.ChatRequest `json:"-"`
	// Turn is the index of the turn that answered; -1 when none did (a model check, a preload, the
	// fallback function, or no match).
	Turn int `json:"turn"`
	// Load says what the request did to the model, as Ollama's scheduler would: "load" (it was not
	// loaded), "reload" (it was, with other runner options: num_ctx or shift — its prompt cache
	// is lost), or "" (the loaded runner served it).
	Load string `json:"load,omitzero"`
	// PromptTokens and CachedTokens estimate (four bytes a token) the rendered prompt and the part
	// of it the runner's prompt cache held: the prefix it shares with the runner's previous prompt.
	PromptTokens int `json:"promptTokens,omitzero"`
	CachedTokens int `json:"cachedTokens,omitzero"`
}

// Option returns an option of the request as an int (options decode as float64), 0 when absent.
func (r ChatRecord) Option(name string) int {
	f, _ := r.Request.Options[name].(float64)
	return int(f)
}

// NumCtx is the request's options.num_ctx, 0 when absent.
func (r ChatRecord) NumCtx() int { return r.Option("num_ctx") }

// NumPredict is the request's options.num_predict, 0 when absent.
func (r ChatRecord) NumPredict() int { return r.Option("num_predict") }

// NewServer starts a fake server on a local port. script may be nil (no models declared: every name
// exists; no turns yet). Close it when done.
func NewServer(script *Script) *Server {
	s := newServer(script)
	s.srv = httptest.NewServer(s)
	s.URL = s.srv.URL
	return s
}

// Start is NewServer on a given address ("127.0.0.1:0" picks a free port).
func Start(addr string, script *Script) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ollamatest: %w", err)
	}
	s := newServer(script)
	s.srv = httptest.NewUnstartedServer(s)
	s.srv.Listener.Close()
	s.srv.Listener = l
	s.srv.Start()
	s.URL = s.srv.URL
	return s, nil
}

// ServeScriptFile loads a JSON script and starts a server for it on addr.
func ServeScriptFile(addr, path string) (*Server, error) {
	script, err := LoadScript(path)
	if err != nil {
		return nil, err
	}
	return Start(addr, script)
}

func newServer(script *Script) *Server {
	s := &Server{closing: make(chan struct{}), genChanged: make(chan struct{})}
	if script != nil {
		s.script = *script
		s.script.Models = slices.Clone(script.Models)
		s.script.Turns = slices.Clone(script.Turns)
		s.script.Generates = slices.Clone(script.Generates)
	}
	s.used = make([]bool, len(s.script.Turns))
	s.genUsed = make([]bool, len(s.script.Generates))
	return s
}

// Close ends hanging replies and shuts the server down.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Client is an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// AddTurns appends turns to the script.
func (s *Server) AddTurns(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script.Turns = append(s.script.Turns, turns...)
	s.used = append(s.used, make([]bool, len(turns))...)
}

// Enqueue appends turns that answer any request, in order.
func (s *Server) Enqueue(replies ...Reply) {
	turns := make([]Turn, len(replies))
	for i, r := range replies {
		turns[i] = Turn{Reply: r}
	}
	s.AddTurns(turns...)
}

// HandleChat sets a function that answers the requests no turn matches.
func (s *Server) HandleChat(f func(*api.ChatRequest) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = f
}

// AddModel declares a model (see Script.Models).
func (s *Server) AddModel(m Model) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script.Models = append(s.script.Models, m)
}

// Chats returns the chat requests received so far.
func (s *Server) Chats() []ChatRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.chats)
}

// WaitChats waits until at least n chat requests were received and returns them, or returns
// ctx's error.
func (s *Server) WaitChats(ctx context.Context, n int) ([]ChatRecord, error) {
	for {
		s.mu.Lock()
		if len(s.chats) >= n {
			out := slices.Clone(s.chats)
			s.mu.Unlock()
			return out, nil
		}
		if s.newChat == nil {
			s.newChat = make(chan struct{})
		}
		ch := s.newChat
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("ollamatest: waiting for %d chat requests: %w", n, ctx.Err())
		}
	}
}

// LastChat returns the last chat request, and false when there was none.
func (s *Server) LastChat() (ChatRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.chats) == 0 {
		return ChatRecord{}, false
	}
	return s.chats[len(s.chats)-1], true
}

// Calls returns every request received, as "METHOD /path".
func (s *Server) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Unmatched describes the chat requests no turn answered (each got a 500).
func (s *Server) Unmatched() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.unmatched)
}

// Pending is the number of turns not used yet (Repeat turns do not count).
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i, t := range s.script.Turns {
		if !t.Repeat && !s.used[i] {
			n++
		}
	}
	return n
}

// Reset replaces the script and forgets the recorded requests.
func (s *Server) Reset(script *Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = Script{}
	if script != nil {
		s.script = *script
		s.script.Models = slices.Clone(script.Models)
		s.script.Turns = slices.Clone(script.Turns)
		s.script.Generates = slices.Clone(script.Generates)
	}
	s.used = make([]bool, len(s.script.Turns))
	s.genUsed = make([]bool, len(s.script.Generates))
	s.chats, s.calls, s.unmatched, s.generates = nil, nil, nil, nil
}

// ServeHTTP routes like Ollama, plus /_fake/ endpoints for tests in other languages.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls = append(s.calls, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	switch {
	case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "Ollama is running")
	case r.URL.Path == "/api/chat" && r.Method == http.MethodPost:
		s.chat(w, r)
	case r.URL.Path == "/api/generate" && r.Method == http.MethodPost:
		s.generate(w, r)
	case r.URL.Path == "/api/show" && r.Method == http.MethodPost:
		s.show(w, r)
	case r.URL.Path == "/api/tags" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.tags(w)
	case r.URL.Path == "/api/version" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.mu.Lock()
		v := s.script.Version
		s.mu.Unlock()
		if v == "" {
			v = "0.17.4"
		}
		writeJSON(w, http.StatusOK, struct {
			Version string `json:"version"`
		}{v})
	case r.URL.Path == "/api/ps" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, api.ProcessResponse{Models: s.running()})
	case r.URL.Path == "/_fake/requests" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.Chats())
	case r.URL.Path == "/_fake/generates" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.Generates())
	case r.URL.Path == "/_fake/unmatched" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.Unmatched())
	case r.URL.Path == "/_fake/reset" && r.Method == http.MethodPost:
		s.reset(w, r)
	default:
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "404 page not found")
	}
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var script *Script
	if len(bytes.TrimSpace(body)) > 0 {
		if script, err = ParseScript(body); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	s.Reset(script)
	writeJSON(w, http.StatusOK, struct{}{})
}

// model finds a declared model; with none declared every name exists with the defaults, and
// declared reports false.
func (s *Server) model(name string) (m Model, ok, declared bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script.Models) == 0 {
		return Model{Name: name}, true, false
	}
	for _, m := range s.script.Models {
		if normalizeName(m.Name) == normalizeName(name) {
			return m, true, true
		}
	}
	return Model{}, false, true
}

// SetKeepAlive sets the server's own keep-alive (OLLAMA_KEEP_ALIVE): what a model loaded by a
// request without keep_alive gets. The default is Ollama's, 5 minutes.
func (s *Server) SetKeepAlive(d time.Duration) {
	s.mu.Lock()
	s.keepAlive = d
	s.mu.Unlock()
}

// defaultNumCtx is the window a request without num_ctx loads a model with (Ollama's default on
// machines with less than 24 GiB of VRAM).
const defaultNumCtx = 4096

// touch applies chat request n to the loaded models as Ollama's scheduler does, and records the
// effect in its ChatRecord. A model that is not loaded, or whose runner options (num_ctx, shift)
// differ from the request's, is (re)loaded with an empty prompt cache and the request's keep_alive
// or the server's own; a loaded runner with the same options serves the request and keeps its
// keep-alive unless the request sends one (a request without keep_alive does not change it). The
// model unloads once idle for its keep-alive: at once for 0, never for a negative one. A request
// without messages and with keep_alive 0 only unloads.
func (s *Server) touch(n int, req *api.ChatRequest) {
	numCtx := defaultNumCtx
	if f, ok := req.Options["num_ctx"].(float64); ok {
		numCtx = int(f)
	}
	shift := req.Shift == nil || *req.Shift
	if len(req.Messages) == 0 && req.KeepAlive != nil && req.KeepAlive.Duration == 0 {
		s.mu.Lock()
		delete(s.loaded, normalizeName(req.Model))
		s.mu.Unlock()
		return
	}
	rendered := ""
	if len(req.Messages) > 0 {
		rendered = render(req)
	}
	load, prompt, cached := s.runnerServe(req.Model, numCtx, shift, req.KeepAlive, rendered)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < len(s.chats) { // a reset may have come in between
		rec := &s.chats[n]
		rec.Load, rec.PromptTokens, rec.CachedTokens = load, prompt, cached
	}
}

// runnerServe has model's runner serve one request as Ollama's scheduler does (see touch) and
// returns what it did to the runner, the rendered prompt's estimated tokens and the part of them
// its prompt cache held. An empty rendered prompt (a preload) leaves the cache as it is.
func (s *Server) runnerServe(model string, numCtx int, shift bool, keepAlive *api.Duration, rendered string) (load string, promptTokens, cachedTokens int) {
	name := normalizeName(model)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded == nil {
		s.loaded = map[string]*runner{}
	}
	r := s.loaded[name]
	switch {
	case r == nil || !r.until.After(now):
		load = "load"
	case r.numCtx != numCtx || r.shift != shift:
		load = "reload"
	}
	if load != "" {
		keep := s.keepAlive
		if keep == 0 {
			keep = 5 * time.Minute
		}
		m := Model{Name: name}
		for _, dm := range s.script.Models {
			if normalizeName(dm.Name) == name {
				m = dm
			}
		}
		size := m.size(numCtx)
		r = &runner{keep: keep, numCtx: numCtx, shift: shift, size: size, vram: min(size, s.script.GPUMemory)}
		s.loaded[name] = r
	}
	if keepAlive != nil {
		r.keep = keepAlive.Duration
	}
	switch {
	case r.keep == 0:
		delete(s.loaded, name)
	case r.keep < 0:
		r.until = time.Date(2318, 8, 14, 0, 0, 0, 0, time.UTC) // what Ollama reports for "forever"
	default:
		r.until = now.Add(r.keep)
	}
	if rendered != "" {
		promptTokens = len(rendered) / 4
		cachedTokens = commonPrefix(r.prompt, rendered) / 4
		r.prompt = rendered
	}
	return load, promptTokens, cachedTokens
}

// render lays a request out as a chat template does — the system message, then the tools, then the
// other messages — for the prompt cache's prefix comparison.
func render(req *api.ChatRequest) string {
	var b strings.Builder
	msgs := req.Messages
	if len(msgs) > 0 && msgs[0].Role == "system" {
		b.WriteString("system\n" + msgs[0].Content + "\n")
		msgs = msgs[1:]
	}
	if len(req.Tools) > 0 {
		t, _ := json.Marshal(req.Tools)
		b.Write(t)
		b.WriteString("\n")
	}
	for _, m := range msgs {
		b.WriteString(m.Role + "\n" + m.Thinking + m.Content)
		for _, tc := range m.ToolCalls {
			b.WriteString(tc.Function.Name + tc.Function.Arguments.String())
		}
		b.WriteString("\n")
	}
	return b.String()
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// running lists the loaded models for /api/ps.
func (s *Server) running() []api.ProcessModelResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []api.ProcessModelResponse{}
	now := time.Now()
	for name, r := range s.loaded {
		if r.until.After(now) {
			out = append(out, api.ProcessModelResponse{Name: name, Model: name, ExpiresAt: r.until, ContextLength: r.numCtx,
				Size: r.size, SizeVRAM: r.vram})
		}
	}
	slices.SortFunc(out, func(a, b api.ProcessModelResponse) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func normalizeName(n string) string {
	n = strings.TrimSpace(n)
	last := n[strings.LastIndex(n, "/")+1:]
	if !strings.Contains(last, ":") {
		n += ":latest"
	}
	return n
}

func (m Model) capabilities() []string {
	if len(m.Capabilities) == 0 {
		return []string{"completion", "tools"}
	}
	return m.Capabilities
}

func (m Model) has(capability string) bool { return slices.Contains(m.capabilities(), capability) }

func (m Model) arch() string {
	if m.Architecture == "" {
		return "qwen3"
	}
	return m.Architecture
}

func (m Model) details() api.ModelDetails {
	d := api.ModelDetails{Format: "gguf", Family: m.arch(), Families: []string{m.arch()}, ParameterSize: m.ParameterSize, QuantizationLevel: m.Quantization}
	if d.ParameterSize == "" {
		d.ParameterSize = "8.2B"
	}
	if d.QuantizationLevel == "" {
		d.QuantizationLevel = "Q4_K_M"
	}
	return d
}

// fixedTime keeps the fake's answers deterministic.
var fixedTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// setCapabilities fills a []model.Capability field through JSON: this package imports only the api
// package, and the element type lives in another package of the ollama module.
func setCapabilities(dst any, caps []string) {
	b, _ := json.Marshal(caps)
	_ = json.Unmarshal(b, dst)
}

func (s *Server) show(w http.ResponseWriter, r *http.Request) {
	var req api.ShowRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	name := req.Model
	if name == "" {
		writeError(w, http.StatusBadRequest, "model is required")
		return
	}
	m, ok, _ := s.model(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found", name))
		return
	}
	ctxLen := m.ContextLength
	if ctxLen == 0 {
		ctxLen = 32768
	}
	resp := api.ShowResponse{
		Template: "{{ .Prompt }}",
		Details:  m.details(),
		ModelInfo: map[string]any{
			"general.architecture":             m.arch(),
			m.arch() + ".context_length":       ctxLen,
			m.arch() + ".embedding_length":     4096,
			"general.parameter_count":          8190735360,
			"tokenizer.ggml.model":             "gpt2",
			"general.basename":                 strings.Split(normalizeName(name), ":")[0],
			"general.quantization_version":     2,
			m.arch() + ".attention.head_count": 32,
		},
		ModifiedAt: fixedTime,
	}
	setCapabilities(&resp.Capabilities, m.capabilities())
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) tags(w http.ResponseWriter) {
	s.mu.Lock()
	models := slices.Clone(s.script.Models)
	s.mu.Unlock()
	resp := api.ListResponse{Models: []api.ListModelResponse{}}
	for i, m := range models {
		lm := api.ListModelResponse{
			Name:       normalizeName(m.Name),
			Model:      normalizeName(m.Name),
			ModifiedAt: fixedTime,
			Size:       int64(5_000_000_000 + i),
			Digest:     fmt.Sprintf("%064x", i+1),
			Details:    m.details(),
		}
		setCapabilities(&lm.Capabilities, m.capabilities())
		resp.Models = append(resp.Models, lm)
	}
	writeJSON(w, http.StatusOK, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}

// errorBody is Ollama's error shape. The api package has no type for it that marshals this way
// (api.StatusError has untagged fields), and the server itself writes gin.H{"error": …}.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{msg})
}
