package tools

import (
	"encoding/json"
	"fmt"
)

// Definition is a tool as the model sees it.
type Definition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Registry is the one place from which both the model's tool list and execution come. Its order is
// the order of registration and never changes, so the tool list sent to the model is byte-identical
// from turn to turn (Ollama's prompt cache depends on it).
type Registry struct {
	tools  []Tool
	byName map[string]Tool
	defs   []Definition
}

// NewRegistry registers tools in the given order. Duplicate names are a programming error.
func NewRegistry(ts ...Tool) (*Registry, error) {
	r := &Registry{byName: make(map[string]Tool, len(ts))}
	for _, t := range ts {
		name := t.Name()
		if name == "" {
			return nil, fmt.Errorf("tools: a tool has an empty name")
		}
		if _, dup := r.byName[name]; dup {
			return nil, fmt.Errorf("tools: duplicate tool name %q", name)
		}
		r.byName[name] = t
		r.tools = append(r.tools, t)
		r.defs = append(r.defs, Definition{Name: name, Description: t.Description(), Parameters: t.Spec().Schema()})
	}
	return r, nil
}

// Lookup finds a tool by exact name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Tools returns the tools in registration order. The slice must not be modified.
func (r *Registry) Tools() []Tool { return r.tools }

// Definitions returns the model-facing tool list in registration order. The slice and its schemas
// are computed once; the same bytes are returned every time.
func (r *Registry) Definitions() []Definition { return r.defs }

// Names returns the registered tool names in order.
func (r *Registry) Names() []string {
	names := make([]string, len(r.tools))
	for i, t := range r.tools {
		names[i] = t.Name()
	}
	return names
}
