package ollamatest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
)

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, req, ok := readRequest[api.ChatRequest](w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	n := len(s.chats)
	s.chats = append(s.chats, ChatRecord{Body: body, Request: req, Turn: -1})
	if s.newChat != nil {
		close(s.newChat)
		s.newChat = nil
	}
	s.mu.Unlock()

	// The checks a real server makes before it looks at the conversation.
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "model is required")
		return
	}
	m, ok, declared := s.model(req.Model)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found", req.Model))
		return
	}
	if declared && len(req.Tools) > 0 && !m.has("tools") {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("registry.ollama.ai/library/%s does not support tools", normalizeName(req.Model)))
		return
	}
	if declared && req.Think != nil && req.Think.Bool() && !m.has("thinking") {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q does not support thinking", req.Model))
		return
	}
	s.touch(n, &req)
	if len(req.Messages) == 0 {
		// Preload (or unload with keep_alive 0), as Ollama answers it.
		reason := "load"
		if req.KeepAlive != nil && req.KeepAlive.Duration == 0 {
			reason = "unload"
		}
		writeJSON(w, http.StatusOK, api.ChatResponse{
			Model: req.Model, CreatedAt: fixedTime,
			Message: api.Message{Role: "assistant"}, Done: true, DoneReason: reason,
		})
		return
	}

	reply, ok := s.pick(n, &req)
	if !ok {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("fakeollama: no scripted turn matches chat request #%d", n))
		return
	}
	s.serve(w, r, &req, reply)
}

// pick finds the reply for chat request n.
func (s *Server) pick(n int, req *api.ChatRequest) (Reply, bool) {
	s.mu.Lock()
	for i, t := range s.script.Turns {
		if s.used[i] || !t.When.matches(req) {
			continue
		}
		if !t.Repeat {
			s.used[i] = true
		}
		s.chats[n].Turn = i
		s.mu.Unlock()
		return t.Reply, true
	}
	fallback := s.fallback
	if fallback == nil {
		s.unmatched = append(s.unmatched, describe(n, req))
	}
	s.mu.Unlock()
	if fallback == nil {
		return Reply{}, false
	}
	return fallback(req), true
}

func describe(n int, req *api.ChatRequest) string {
	last := "(no messages)"
	if k := len(req.Messages); k > 0 {
		m := req.Messages[k-1]
		c := m.Content
		if len(c) > 80 {
			c = c[:80] + "…"
		}
		last = fmt.Sprintf("%s: %q", m.Role, c)
	}
	return fmt.Sprintf("chat request #%d (model %q, %d messages, %d tools): last message %s", n, req.Model, len(req.Messages), len(req.Tools), last)
}

func (m *Match) matches(req *api.ChatRequest) bool {
	if m == nil {
		return true
	}
	if m.Model != "" && normalizeName(m.Model) != normalizeName(req.Model) {
		return false
	}
	var last *api.Message
	if k := len(req.Messages); k > 0 {
		last = &req.Messages[k-1]
	}
	if m.LastRole != "" && (last == nil || last.Role != m.LastRole) {
		return false
	}
	if m.LastContains != "" && (last == nil || !strings.Contains(last.Content, m.LastContains)) {
		return false
	}
	if m.LastUserContains != "" {
		found := false
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "user" {
				found = strings.Contains(req.Messages[i].Content, m.LastUserContains)
				break
			}
		}
		if !found {
			return false
		}
	}
	if m.HasTools != nil && *m.HasTools != (len(req.Tools) > 0) {
		return false
	}
	if m.Think != nil && *m.Think != (req.Think != nil && req.Think.Bool()) {
		return false
	}
	if m.Func != nil && !m.Func(req) {
		return false
	}
	return true
}

// messages expands a reply into the messages of its stream lines.
func (s *Server) messages(reply Reply) ([]api.Message, error) {
	var out []api.Message
	index := 0
	addCalls := func(calls []ToolCall) error {
		for _, c := range calls {
			args, err := c.arguments()
			if err != nil {
				return fmt.Errorf("tool call %q: %w", c.Name, err)
			}
			id := c.ID
			if id == "" {
				s.mu.Lock()
				s.nextID++
				id = callID(s.nextID)
				s.mu.Unlock()
			}
			tc := api.ToolCall{ID: id}
			tc.Function.Index = index
			tc.Function.Name = c.Name
			tc.Function.Arguments = args
			index++
			out = append(out, api.Message{Role: "assistant", ToolCalls: []api.ToolCall{tc}})
		}
		return nil
	}
	for _, t := range splitTokens(reply.Thinking) {
		out = append(out, api.Message{Role: "assistant", Thinking: t})
	}
	for _, t := range splitTokens(reply.Text) {
		out = append(out, api.Message{Role: "assistant", Content: t})
	}
	if err := addCalls(reply.ToolCalls); err != nil {
		return nil, err
	}
	for _, ch := range reply.Chunks {
		if ch.Content != "" || ch.Thinking != "" || len(ch.ToolCalls) == 0 {
			out = append(out, api.Message{Role: "assistant", Content: ch.Content, Thinking: ch.Thinking})
		}
		if err := addCalls(ch.ToolCalls); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, req *api.ChatRequest, reply Reply) {
	if !s.sleep(r, time.Duration(reply.Delay)) {
		return
	}
	if reply.Status >= 400 {
		if reply.EmptyBody {
			w.WriteHeader(reply.Status)
			return
		}
		msg := reply.Error
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		writeError(w, reply.Status, msg)
		return
	}
	msgs, err := s.messages(reply)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "fakeollama: "+err.Error())
		return
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	done := s.doneChunk(req, reply, len(msgs))
	if req.Stream != nil && !*req.Stream {
		s.serveWhole(w, r, req, reply, status, msgs, done)
		return
	}

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(status)
	flusher, _ := w.(http.Flusher)
	line := func(v any) {
		b, _ := json.Marshal(v)
		w.Write(append(b, '\n'))
		if flusher != nil {
			flusher.Flush()
		}
	}
	for i, m := range msgs {
		if i > 0 && !s.sleep(r, time.Duration(reply.ChunkDelay)) {
			return
		}
		line(api.ChatResponse{Model: req.Model, CreatedAt: fixedTime.Add(time.Duration(i+1) * time.Millisecond), Message: m})
	}
	switch {
	case reply.Error != "":
		line(errorBody{reply.Error})
	case reply.Abort:
		panic(http.ErrAbortHandler) // net/http cuts the connection: the client reads an unexpected EOF
	case reply.Hang:
		select {
		case <-r.Context().Done():
		case <-s.closing:
			panic(http.ErrAbortHandler)
		}
	case reply.NoDone:
	default:
		line(done)
	}
}

// serveWhole answers a request with "stream": false: one object with the whole message.
func (s *Server) serveWhole(w http.ResponseWriter, r *http.Request, req *api.ChatRequest, reply Reply, status int, msgs []api.Message, done api.ChatResponse) {
	switch {
	case reply.Error != "":
		writeError(w, http.StatusInternalServerError, reply.Error)
		return
	case reply.Abort:
		panic(http.ErrAbortHandler)
	case reply.Hang:
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			panic(http.ErrAbortHandler)
		}
	case reply.NoDone:
		w.WriteHeader(status)
		return
	}
	var whole api.Message
	whole.Role = "assistant"
	for _, m := range msgs {
		whole.Content += m.Content
		whole.Thinking += m.Thinking
		whole.ToolCalls = append(whole.ToolCalls, m.ToolCalls...)
	}
	done.Message = whole
	writeJSON(w, status, done)
}

func (s *Server) doneChunk(req *api.ChatRequest, reply Reply, chunks int) api.ChatResponse {
	reason := reply.DoneReason
	if reason == "" {
		reason = "stop"
	}
	numCtx, _ := req.Options["num_ctx"].(float64)
	prompt := reply.PromptEvalCount
	switch {
	case reply.FillContext:
		prompt = int(numCtx)
		if prompt <= 0 {
			prompt = 4096 // the server's default window
		}
	case prompt == 0:
		prompt = estimateTokens(req)
		if numCtx > 1 && prompt >= int(numCtx) {
			prompt = int(numCtx) - 1 // an estimate must not look like a truncation
		}
	}
	eval := reply.EvalCount
	if eval == 0 {
		eval = max(chunks, 1)
	}
	promptDur, evalDur := 2*time.Millisecond, 3*time.Millisecond
	if m, ok, _ := s.model(req.Model); ok && m.PromptRate > 0 && m.EvalRate > 0 {
		promptDur = time.Duration(float64(prompt) / m.PromptRate * float64(time.Second))
		evalDur = time.Duration(float64(eval) / m.EvalRate * float64(time.Second))
	}
	return api.ChatResponse{
		Model:      req.Model,
		CreatedAt:  fixedTime.Add(time.Duration(chunks+1) * time.Millisecond),
		Message:    api.Message{Role: "assistant"},
		Done:       true,
		DoneReason: reason,
		Metrics: api.Metrics{
			TotalDuration:      time.Millisecond + promptDur + evalDur,
			LoadDuration:       time.Millisecond,
			PromptEvalCount:    prompt,
			PromptEvalDuration: promptDur,
			EvalCount:          eval,
			EvalDuration:       evalDur,
		},
	}
}

// estimateTokens is a rough prompt size: four bytes a token, a few tokens of framing a message.
func estimateTokens(req *api.ChatRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += 4 + (len(m.Content)+len(m.Thinking))/4
		for _, tc := range m.ToolCalls {
			n += 8 + len(tc.Function.Arguments.String())/4
		}
	}
	if len(req.Tools) > 0 {
		n += len(req.Tools.String()) / 4
	}
	return max(n, 1)
}

// sleep waits d, and reports false when the client left or the server is closing first.
func (s *Server) sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.closing:
		return false
	}
}

// readRequest reads a request body as T, answering 400 (as Ollama does) when it is missing or not T.
func readRequest[T any](w http.ResponseWriter, r *http.Request) (body []byte, req T, ok bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, req, false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		writeError(w, http.StatusBadRequest, "missing request body")
		return nil, req, false
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, req, false
	}
	return body, req, true
}
