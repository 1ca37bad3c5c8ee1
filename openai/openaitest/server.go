// Package openaitest is a fake OpenAI-compatible server for tests: it answers /v1/models,
// llama-server's /props and streamed /v1/chat/completions from a script, with replies cut into
// as many writes as a test wants, and records every request body.
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Server is a running fake. URL is its API base (".../v1").
type Server struct {
	*httptest.Server
	URL string

	mu       sync.Mutex
	models   []Model
	props    string // /props body, "" answers 404 (not llama-server)
	reply    func(Request) Reply
	requests [][]byte
}

// Model is one served model; ContextLength goes out as vLLM's max_model_len.
type Model struct {
	ID            string
	ContextLength int
}

// Request is a chat request as the fake decoded it.
type Request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools  []json.RawMessage `json:"tools"`
	Stream bool              `json:"stream"`
}

// Reply is the fake's answer to one chat request.
type Reply struct {
	// Status other than 0 or 200 answers with Body and no stream.
	Status int
	Body   string
	// Events are the data of the server-sent events, "[DONE]" included when wanted.
	Events []string
	// Split cuts the stream into writes of this many bytes, each flushed (0: one write per event).
	Split int
}

// NewServer starts a fake serving models; props is llama-server's /props body ("" for none).
func NewServer(models []Model, props string) *Server {
	s := &Server{models: models, props: props}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /props", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		p := s.props
		s.mu.Unlock()
		if p == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, p)
	})
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	s.Server = httptest.NewServer(mux)
	s.URL = s.Server.URL + "/v1"
	return s
}

// HandleChat sets the script of chat replies.
func (s *Server) HandleChat(f func(Request) Reply) {
	s.mu.Lock()
	s.reply = f
	s.mu.Unlock()
}

// Requests returns the raw bodies of the chat requests so far.
func (s *Server) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.requests...)
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	type entry struct {
		ID          string `json:"id"`
		Object      string `json:"object"`
		MaxModelLen int    `json:"max_model_len,omitempty"`
	}
	s.mu.Lock()
	out := struct {
		Object string  `json:"object"`
		Data   []entry `json:"data"`
	}{Object: "list", Data: []entry{}}
	for _, m := range s.models {
		out.Data = append(out.Data, entry{ID: m.ID, Object: "model", MaxModelLen: m.ContextLength})
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"code":400,"message":"bad JSON","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, body)
	f := s.reply
	s.mu.Unlock()
	rep := Reply{Events: Text("ok")}
	if f != nil {
		rep = f(req)
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		io.WriteString(w, rep.Body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	var stream strings.Builder
	for _, e := range rep.Events {
		fmt.Fprintf(&stream, "data: %s\n\n", e)
	}
	out := stream.String()
	n := rep.Split
	if n <= 0 {
		n = len(out)
	}
	fl, _ := w.(http.Flusher)
	for len(out) > 0 {
		k := min(n, len(out))
		io.WriteString(w, out[:k])
		out = out[k:]
		if fl != nil {
			fl.Flush()
		}
	}
}

// Chunk is the data of one chat.completion.chunk event with delta (a JSON object) and
// finish_reason ("" for none).
func Chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, delta, f)
}

// Usage is the final usage event llama-server sends, timings included.
func Usage(prompt, completion, cached int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}},"timings":{"cache_n":%d,"prompt_n":%d,"prompt_ms":12.5,"predicted_n":%d,"predicted_ms":40}}`,
		prompt, completion, prompt+completion, cached, cached, prompt-cached, completion)
}

// Text is a whole streamed text reply: one delta per piece, then stop, usage and [DONE].
func Text(pieces ...string) []string {
	ev := []string{Chunk(`{"role":"assistant","content":null}`, "")}
	for _, p := range pieces {
		b, _ := json.Marshal(p)
		ev = append(ev, Chunk(`{"content":`+string(b)+`}`, ""))
	}
	return append(ev, Chunk(`{}`, "stop"), Usage(100, len(pieces), 0), "[DONE]")
}

// CallDelta is a tool-call delta: id and name for a call's first piece, "" after. args is the
// inside of the JSON string as it goes on the wire (escape quotes and backslashes yourself);
// its bytes are sent as they are, half a UTF-8 sequence or half an escape included.
func CallDelta(index int, id, name, args string) string {
	a := `"` + args + `"`
	head := ""
	if id != "" {
		head = fmt.Sprintf(`"id":%q,"type":"function",`, id)
	}
	fn := `"arguments":` + a
	if name != "" {
		fn = fmt.Sprintf(`"name":%q,%s`, name, fn)
	}
	return Chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,%s"function":{%s}}]}`, index, head, fn), "")
}

// OverflowLlama and OverflowVLLM are the two servers' answers to a prompt longer than the window
// (HTTP 400).
const (
	OverflowLlama = `{"error":{"code":400,"message":"request (40002 tokens) exceeds the available context size (16384 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":40002,"n_ctx":16384}}`
	OverflowVLLM  = `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`
)
