package harness

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama"
	"github.com/agentd/agentd/openai"
)

// ModelClient is what the harness needs of a model server.
type ModelClient interface {
	agent.Model
	ListModels(ctx context.Context) ([]ollama.ModelSummary, error)
	Version(ctx context.Context) (string, error)
}

// ModelFactory makes a client for a model on a host.
type ModelFactory func(host, model string) (ModelClient, error)

// The engines: the model server's API.
const (
	EngineOllama = "ollama" // Ollama's native /api
	EngineOpenAI = "openai" // OpenAI-compatible chat completions (llama-server, vLLM, LM Studio)
)

// ParseEngine checks an engine name ("" is EngineOllama).
func ParseEngine(s string) (string, error) {
	switch s {
	case "", EngineOllama:
		return EngineOllama, nil
	case EngineOpenAI:
		return EngineOpenAI, nil
	}
	return "", fmt.Errorf("engine %q: use ollama or openai", s)
}

// EngineModels is the factory of o's engine. For EngineOpenAI the host argument is ignored: the
// server is EngineURL (an editor's Ollama host setting does not apply to it).
func (o Options) EngineModels() ModelFactory {
	if o.Engine == EngineOpenAI {
		return func(_, model string) (ModelClient, error) {
			c, err := openai.New(openai.Config{URL: o.EngineURL, Model: model, APIKey: o.EngineAPIKey})
			if err != nil {
				return nil, err
			}
			return openaiClient{c}, nil
		}
	}
	keep := o.KeepAlive
	return func(host, model string) (ModelClient, error) {
		return ollama.New(ollama.Config{Host: host, Model: model, KeepAlive: keep})
	}
}

// EngineSummary names the engine and where it is, for status lines: "ollama
// http://127.0.0.1:11434", "openai http://gpu:8000/v1".
func (o Options) EngineSummary() string {
	if o.Engine == EngineOpenAI {
		if u, err := openai.ParseURL(o.EngineURL); err == nil {
			return EngineOpenAI + " " + u.String()
		}
		return EngineOpenAI + " " + o.EngineURL
	}
	if u, err := ollama.ParseHost(o.OllamaHost); err == nil {
		return EngineOllama + " " + u.String()
	}
	return EngineOllama + " " + o.OllamaHost
}

// openaiClient adapts an openai.Client to ModelClient (its model list is Ollama-shaped).
type openaiClient struct{ *openai.Client }

func (c openaiClient) ListModels(ctx context.Context) ([]ollama.ModelSummary, error) {
	ms, err := c.Client.ListModels(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ollama.ModelSummary, 0, len(ms))
	for _, m := range ms {
		out = append(out, ollama.ModelSummary{Name: m.ID})
	}
	return out, nil
}

// DefaultModel is the model used when nothing else is configured: qwen3:8b handles native tool
// calls reliably at laptop size (5 GB at Q4), has a 40k trained context and optional thinking.
const DefaultModel = "qwen3:8b"
