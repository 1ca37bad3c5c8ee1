package ollamatest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
)

// GenerateTurn is one scripted answer to /api/generate (fill-in-the-middle completion).
type GenerateTurn struct {
	Name string `json:"name,omitzero"`
	// When restricts the requests this turn answers; nil answers any request.
	When *GenerateMatch `json:"when,omitzero"`
	// Repeat keeps the turn after it answered.
	Repeat bool `json:"repeat,omitzero"`
	// Reply is sent as for chat, its text in the "response" field of each line. ToolCalls and
	// Thinking are not used.
	Reply Reply `json:"reply"`
}

// GenerateMatch selects generate requests. Every field that is set must hold.
type GenerateMatch struct {
	Model string `json:"model,omitzero"`
	// PromptSuffix: the prompt (the text before the cursor) ends with this text.
	PromptSuffix string `json:"promptSuffix,omitzero"`
	// PromptContains and SuffixContains: the prompt, or the suffix, contains this text.
	PromptContains string `json:"promptContains,omitzero"`
	SuffixContains string `json:"suffixContains,omitzero"`
}

func (m *GenerateMatch) matches(req *api.GenerateRequest) bool {
	if m == nil {
		return true
	}
	return (m.Model == "" || normalizeName(m.Model) == normalizeName(req.Model)) &&
		strings.HasSuffix(req.Prompt, m.PromptSuffix) &&
		strings.Contains(req.Prompt, m.PromptContains) &&
		strings.Contains(req.Suffix, m.SuffixContains)
}

// GenerateRecord is one /api/generate request the server received.
type GenerateRecord struct {
	Body    json.RawMessage     `json:"body"`
	Request api.GenerateRequest `json:"-"`
	// Turn is the index of the generate turn that answered; -1 when none did.
	Turn int `json:"turn"`
	// Load, PromptTokens and CachedTokens are as for chat (ChatRecord): the runner's prompt cache
	// holds the prefix this request's rendered prompt shares with the previous one.
	Load         string `json:"load,omitzero"`
	PromptTokens int    `json:"promptTokens,omitzero"`
	CachedTokens int    `json:"cachedTokens,omitzero"`
	// Received is when the request arrived; Ended when its handler returned (zero before).
	Received time.Time `json:"received"`
	Ended    time.Time `json:"ended,omitzero"`
	// ClientGone: the client closed the request before the reply was complete.
	ClientGone bool `json:"clientGone,omitzero"`
	// DoneSent is when the done line was written (zero if none was).
	DoneSent time.Time `json:"doneSent,omitzero"`
}

// Option returns an option of the request as an int (options decode as float64), 0 when absent.
func (r GenerateRecord) Option(name string) int {
	f, _ := r.Request.Options[name].(float64)
	return int(f)
}

// AddGenerates appends generate turns to the script.
func (s *Server) AddGenerates(turns ...GenerateTurn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script.Generates = append(s.script.Generates, turns...)
	s.genUsed = append(s.genUsed, make([]bool, len(turns))...)
}

// Generates returns the generate requests received so far.
func (s *Server) Generates() []GenerateRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.generates)
}

// WaitGenerates waits until at least n generate requests arrived and, with ended, until the first
// n of them have ended; it returns the records, or ctx's error.
func (s *Server) WaitGenerates(ctx context.Context, n int, ended bool) ([]GenerateRecord, error) {
	for {
		s.mu.Lock()
		ok := len(s.generates) >= n
		for i := 0; ok && ended && i < n; i++ {
			ok = !s.generates[i].Ended.IsZero()
		}
		if ok {
			out := slices.Clone(s.generates)
			s.mu.Unlock()
			return out, nil
		}
		ch := s.genChanged
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("ollamatest: waiting for %d generate requests: %w", n, ctx.Err())
		}
	}
}

// genNotifyLocked wakes WaitGenerates.
func (s *Server) genNotifyLocked() {
	close(s.genChanged)
	s.genChanged = make(chan struct{})
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request) {
	body, req, ok := readRequest[api.GenerateRequest](w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	n := len(s.generates)
	s.generates = append(s.generates, GenerateRecord{Body: body, Request: req, Turn: -1, Received: time.Now()})
	s.genNotifyLocked()
	s.mu.Unlock()
	gone, doneAt := false, time.Time{}
	defer func() {
		s.mu.Lock()
		if n < len(s.generates) {
			g := &s.generates[n]
			g.Ended, g.ClientGone, g.DoneSent = time.Now(), gone || r.Context().Err() != nil, doneAt
		}
		s.genNotifyLocked()
		s.mu.Unlock()
	}()

	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "model is required")
		return
	}
	m, ok, declared := s.model(req.Model)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found", req.Model))
		return
	}
	if declared && req.Suffix != "" && !m.has("insert") {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("registry.ollama.ai/library/%s does not support insert", normalizeName(req.Model)))
		return
	}
	s.touchGenerate(n, &req)
	reply, ok := s.pickGenerate(n, &req)
	if !ok {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("fakeollama: no scripted generate turn matches request #%d", n))
		return
	}
	if !s.sleep(r, time.Duration(reply.Delay)) {
		gone = true
		return
	}
	if reply.Status >= 400 {
		writeError(w, reply.Status, cmpOr(reply.Error, http.StatusText(reply.Status)))
		return
	}
	pieces := splitTokens(reply.Text)
	for _, ch := range reply.Chunks {
		pieces = append(pieces, ch.Content)
	}
	doneLine := api.GenerateResponse{Model: req.Model, CreatedAt: fixedTime.Add(time.Duration(len(pieces)+1) * time.Millisecond),
		Done: true, DoneReason: cmpOr(reply.DoneReason, "stop"),
		Metrics: api.Metrics{TotalDuration: 5 * time.Millisecond, PromptEvalCount: max(1, (len(req.Prompt)+len(req.Suffix))/4),
			PromptEvalDuration: 2 * time.Millisecond, EvalCount: max(1, len(pieces)), EvalDuration: 3 * time.Millisecond}}
	if req.Stream != nil && !*req.Stream {
		doneLine.Response = strings.Join(pieces, "")
		writeJSON(w, http.StatusOK, doneLine)
		doneAt = time.Now()
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	line := func(v any) {
		b, _ := json.Marshal(v)
		w.Write(append(b, '\n'))
		if flusher != nil {
			flusher.Flush()
		}
	}
	for i, p := range pieces {
		if i > 0 && !s.sleep(r, time.Duration(reply.ChunkDelay)) {
			gone = true
			return
		}
		line(api.GenerateResponse{Model: req.Model, CreatedAt: fixedTime.Add(time.Duration(i+1) * time.Millisecond), Response: p})
	}
	switch {
	case reply.Error != "":
		line(errorBody{reply.Error})
	case reply.Abort:
		panic(http.ErrAbortHandler)
	case reply.Hang:
		select {
		case <-r.Context().Done():
			gone = true
		case <-s.closing:
			panic(http.ErrAbortHandler)
		}
	case reply.NoDone:
	default:
		doneAt = time.Now()
		line(doneLine)
	}
}

func (s *Server) pickGenerate(n int, req *api.GenerateRequest) (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range s.script.Generates {
		if s.genUsed[i] || !t.When.matches(req) {
			continue
		}
		if !t.Repeat {
			s.genUsed[i] = true
		}
		if n < len(s.generates) {
			s.generates[n].Turn = i
		}
		return t.Reply, true
	}
	s.unmatched = append(s.unmatched, fmt.Sprintf("generate request #%d (model %q): prompt ends %q", n, req.Model, tail(req.Prompt, 40)))
	return Reply{}, false
}

// touchGenerate applies generate request n to the loaded runners as touch does for chat: the
// rendered prompt is the fill-in-the-middle layout of a FIM template (prefix, suffix, middle).
func (s *Server) touchGenerate(n int, req *api.GenerateRequest) {
	rendered := req.Prompt
	if req.Suffix != "" {
		rendered = "<|fim_prefix|>" + req.Prompt + "<|fim_suffix|>" + req.Suffix + "<|fim_middle|>"
	}
	numCtx := defaultNumCtx
	if f, ok := req.Options["num_ctx"].(float64); ok {
		numCtx = int(f)
	}
	load, prompt, cached := s.runnerServe(req.Model, numCtx, req.Shift == nil || *req.Shift, req.KeepAlive, rendered)
	s.mu.Lock()
	if n < len(s.generates) {
		g := &s.generates[n]
		g.Load, g.PromptTokens, g.CachedTokens = load, prompt, cached
	}
	s.mu.Unlock()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
