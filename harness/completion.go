package harness

import (
	"context"
	"sync"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama"
)

// DefaultCompletionModel is the model inline completion uses when none is configured:
// qwen2.5-coder's 1.5B base model has Ollama's insert capability (it was trained for
// fill-in-the-middle; instruction-tuned chat models usually lack it), is small enough (1 GB at Q4)
// to answer within a keystroke or two on a laptop next to the chat model, and comes from the same
// family as the chat default, qwen3, which it shares its tokenizer with.
const DefaultCompletionModel = "qwen2.5-coder:1.5b-base"

// CompletionKeepAlive is how long Ollama keeps the completion model loaded after each completion:
// long enough to stay warm through a pause in typing, independent of the chat model's keep-alive.
const CompletionKeepAlive = 30 * time.Minute

// Infiller fills in the middle: the text between a prefix and a suffix. ollama.Client implements it
// with /api/generate; an OpenAI-compatible engine would with llama-server's /infill.
type Infiller interface {
	Infill(ctx context.Context, req *agent.InfillRequest) (*agent.InfillResponse, error)
}

// InfillerFactory makes the completion client for a model on a host.
type InfillerFactory func(host, model string) (Infiller, error)

// ollamaInfillers makes Ollama completion clients with the completion keep-alive.
func ollamaInfillers(host, model string) (Infiller, error) {
	keep := CompletionKeepAlive
	return ollama.New(ollama.Config{Host: host, Model: model, KeepAlive: &keep})
}

// CompletionModel is the completion model in use, and whether it was configured (a configured
// model turns completion on in the editors by default).
func (rt *Runtime) CompletionModel() (model string, configured bool) {
	if rt.opts.CompletionModel != "" {
		return rt.opts.CompletionModel, true
	}
	return DefaultCompletionModel, false
}

// Infiller returns the completion client for model on host ("" : the runtime's), one per pair,
// kept for the runtime's life so that its connections are reused between keystrokes.
func (rt *Runtime) Infiller(host, model string) (Infiller, error) {
	if host == "" {
		host = rt.opts.OllamaHost
	}
	key := host + "\x00" + model
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if inf, ok := rt.infillers[key]; ok {
		return inf, nil
	}
	inf, err := rt.opts.Infillers(host, model)
	if err != nil {
		return nil, err
	}
	if rt.infillers == nil {
		rt.infillers = map[string]Infiller{}
	}
	rt.infillers[key] = inf
	return inf, nil
}

// chatState tracks the sessions whose model is streaming a reply, so that completions give way
// to chat turns on the same server: they wait while a reply streams (ChatBusy).
type chatState struct {
	mu        sync.Mutex
	streaming map[*Harness]bool
	changed   chan struct{} // closed (and forgotten) when streaming goes from empty to not, or back
}

// ChatBusy reports whether a session's model is streaming a reply now, and returns a channel that
// is closed when that changes.
func (rt *Runtime) ChatBusy() (busy bool, changed <-chan struct{}) {
	rt.chat.mu.Lock()
	defer rt.chat.mu.Unlock()
	if rt.chat.changed == nil {
		rt.chat.changed = make(chan struct{})
	}
	return len(rt.chat.streaming) > 0, rt.chat.changed
}

// observeChat follows a session's model calls: a reply streams from MessageStart to MessageEnd
// (or the turn's end, or the session's close: e == nil).
func (rt *Runtime) observeChat(h *Harness, e agent.Event) {
	var streaming bool
	switch e.(type) {
	case agent.MessageStart:
		streaming = true
	case agent.MessageEnd, agent.TurnEnd, nil:
	default:
		return
	}
	rt.chat.mu.Lock()
	defer rt.chat.mu.Unlock()
	before := len(rt.chat.streaming) > 0
	if streaming {
		if rt.chat.streaming == nil {
			rt.chat.streaming = map[*Harness]bool{}
		}
		rt.chat.streaming[h] = true
	} else {
		delete(rt.chat.streaming, h)
	}
	if after := len(rt.chat.streaming) > 0; after != before && rt.chat.changed != nil {
		close(rt.chat.changed)
		rt.chat.changed = nil
	}
}
