package ollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools"
	"github.com/ollama/ollama/api"
)

// toAPIMessages maps the conversation to the wire. The mapping is deterministic, so an append-only
// history gives a byte-identical request prefix turn after turn (Ollama's prompt cache needs it).
// cache (nil: none) holds the converted arguments of past calls, so a long session does not decode
// every past call's arguments again on every request.
func toAPIMessages(msgs []agent.Message, cache *argsCache) []api.Message {
	out := make([]api.Message, 0, len(msgs))
	for _, m := range msgs {
		am := api.Message{
			Role:       string(m.Role),
			Content:    m.Content,
			Thinking:   m.Thinking,
			ToolName:   m.ToolName,
			ToolCallID: m.ToolCallID,
		}
		for _, img := range m.Images {
			am.Images = append(am.Images, api.ImageData(img))
		}
		for i, tc := range m.ToolCalls {
			call := api.ToolCall{ID: tc.ID}
			call.Function.Index = i
			call.Function.Name = tc.Name
			call.Function.Arguments = cache.arguments(tc.Arguments)
			am.ToolCalls = append(am.ToolCalls, call)
		}
		out = append(out, am)
	}
	return out
}

// argsCache remembers argumentsObject's result for the arguments it has seen, keyed by their exact
// bytes: a hit is the conversion of the same input, so the request bytes are those of the uncached
// path, whatever happened to the history meanwhile (a compaction, another session on the same
// client). The converted arguments are shared and only ever read (encoded). Memory is bounded by
// two generations of at most argsCacheBytes of keys each: when the current one fills, the older is
// dropped, and an entry used again is carried into the current one.
type argsCache struct {
	mu        sync.Mutex
	cur, prev map[string]api.ToolCallFunctionArguments
	curBytes  int
}

// argsCacheBytes bounds one generation of the cache (the bytes of the arguments it holds).
const argsCacheBytes = 4 << 20

// arguments is argumentsObject(raw), from the cache when it holds raw. A nil cache converts.
func (c *argsCache) arguments(raw json.RawMessage) api.ToolCallFunctionArguments {
	if c == nil {
		return argumentsObject(raw)
	}
	c.mu.Lock()
	if a, ok := c.cur[string(raw)]; ok {
		c.mu.Unlock()
		return a
	}
	a, ok := c.prev[string(raw)]
	c.mu.Unlock()
	if !ok {
		a = argumentsObject(raw)
	}
	c.mu.Lock()
	c.putLocked(string(raw), a)
	c.mu.Unlock()
	return a
}

func (c *argsCache) putLocked(key string, a api.ToolCallFunctionArguments) {
	if c.cur == nil || c.curBytes+len(key) > argsCacheBytes {
		c.prev, c.cur, c.curBytes = c.cur, map[string]api.ToolCallFunctionArguments{}, 0
	}
	if _, ok := c.cur[key]; !ok {
		c.cur[key] = a
		c.curBytes += len(key)
	}
}

// argumentsObject converts a call's arguments for the wire, where they must be a JSON object: Ollama
// answers 400 to arguments sent as a JSON string. An object keeps its key order; a JSON string that
// holds an object is unwrapped; anything else (a malformed call the kernel already answered with an
// error result) becomes {}.
func argumentsObject(raw json.RawMessage) api.ToolCallFunctionArguments {
	args := api.NewToolCallFunctionArguments()
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			raw = bytes.TrimSpace([]byte(s))
		}
	}
	if len(raw) == 0 || raw[0] != '{' {
		return args
	}
	if err := args.UnmarshalJSON(raw); err != nil {
		return api.NewToolCallFunctionArguments()
	}
	return args
}

// toAPITools converts tool definitions. api.ToolFunctionParameters is a fixed struct: it keeps type,
// properties (in order), required, enum, items, anyOf and descriptions, and drops the other JSON
// Schema keywords (minimum, minLength, additionalProperties, default…). That is fine: the kernel
// validates the arguments locally against the full schema.
func toAPITools(defs []tools.Definition) (api.Tools, error) {
	out := make(api.Tools, 0, len(defs))
	for _, d := range defs {
		var p api.ToolFunctionParameters
		if raw := bytes.TrimSpace(d.Parameters); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, fmt.Errorf("tool %q: parameters schema: %w", d.Name, err)
			}
		}
		if p.Type == "" {
			p.Type = "object"
		}
		if p.Properties == nil {
			p.Properties = api.NewToolPropertiesMap() // "properties":{} rather than null
		}
		out = append(out, api.Tool{
			Type: "function",
			Function: api.ToolFunction{
				Name:        d.Name,
				Description: d.Description,
				Parameters:  p,
			},
		})
	}
	return out, nil
}

// fromAPIToolCall converts a native tool call. The arguments keep the key order the server sent
// (api.ToolCallFunctionArguments is an ordered map). A call without an id gets "call_<n>", n being
// its position in the reply.
func fromAPIToolCall(tc api.ToolCall, n int) (agent.ToolCall, error) {
	id := tc.ID
	if id == "" {
		id = "call_" + strconv.Itoa(n)
	}
	args, err := orderedJSON(&tc.Function.Arguments)
	if err != nil {
		return agent.ToolCall{}, fmt.Errorf("tool call %q: arguments: %w", tc.Function.Name, err)
	}
	return agent.ToolCall{ID: id, Name: tc.Function.Name, Arguments: args}, nil
}

// orderedJSON encodes the arguments as a JSON object in their order, without HTML escaping (code in
// an argument keeps its < > & readable in the raw JSON).
func orderedJSON(args *api.ToolCallFunctionArguments) (json.RawMessage, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	for k, v := range args.All() {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		if err := encodeNoEscape(&buf, k); err != nil {
			return nil, err
		}
		buf.WriteByte(':')
		if err := encodeNoEscape(&buf, v); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return json.RawMessage(buf.Bytes()), nil
}

func encodeNoEscape(buf *bytes.Buffer, v any) error {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
	return nil
}
