package tools

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// node is the part of a JSON Schema that coercion needs. It is read leniently from any schema
// (a run-time MCP schema included): what it does not understand — boolean schemas, $ref,
// combinators, tuple items — simply means "no coercion there", and the validator decides.
type node struct {
	Type       typeList
	Properties map[string]*node
	Required   []string
	Items      *node
}

// typeList is the "type" keyword: "x" or ["x", "y"].
type typeList []string

// parseNode reads the coercion-relevant keywords of a parsed schema document (as
// jsonschema.UnmarshalJSON returns it), following local references ("#/$defs/x"). It never
// fails; nil means no coercion.
func parseNode(doc any) *node {
	p := &nodeParser{doc: doc, refs: map[string]*node{}}
	return p.parse(doc)
}

type nodeParser struct {
	doc  any
	refs map[string]*node // by reference, so a recursive schema gives a cyclic graph, not a loop
}

func (p *nodeParser) parse(v any) *node {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#") {
		if n, ok := p.refs[ref]; ok {
			return n
		}
		n := &node{}
		p.refs[ref] = n
		if target := p.parse(resolvePointer(p.doc, ref[1:])); target != nil {
			*n = *target
		}
		return n
	}
	n := &node{}
	switch t := m["type"].(type) {
	case string:
		n.Type = typeList{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				n.Type = append(n.Type, s)
			}
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		n.Properties = make(map[string]*node, len(props))
		for k, pv := range props {
			if c := p.parse(pv); c != nil {
				n.Properties[k] = c
			}
		}
	}
	if req, ok := m["required"].([]any); ok {
		for _, e := range req {
			if s, ok := e.(string); ok {
				n.Required = append(n.Required, s)
			}
		}
	}
	n.Items = p.parse(m["items"])
	return n
}

// resolvePointer returns the value at a JSON pointer ("/$defs/item") in doc, or nil.
func resolvePointer(doc any, ptr string) any {
	if ptr == "" {
		return doc
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := doc.(type) {
		case map[string]any:
			doc = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			doc = c[i]
		default:
			return nil
		}
	}
	return doc
}

func (t typeList) has(k string) bool { return slices.Contains(t, k) }

var (
	integerRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	numberRE  = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
)

// coerce returns v with the safe coercions applied, and whether anything changed. Maps are changed
// in place; they come from parsing and are not shared.
func (n *node) coerce(v any) (any, bool) {
	if n == nil {
		return v, false
	}
	switch x := v.(type) {
	case string:
		return n.coerceString(x)
	case json.Number:
		// JSON Schema counts 3.0 as an integer; Go's decoder does not. Normalize integral values.
		if n.Type.has("integer") && !n.Type.has("number") && !integerRE.MatchString(string(x)) {
			if f, err := x.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				return json.Number(strconv.FormatInt(int64(f), 10)), true
			}
		}
		return x, false
	case map[string]any:
		changed := false
		for k, pv := range x {
			child := n.Properties[k]
			if pv == nil && child != nil && !child.Type.has("null") && !slices.Contains(n.Required, k) {
				delete(x, k) // null for an optional property means "not given"
				changed = true
				continue
			}
			if nv, ch := child.coerce(pv); ch {
				x[k] = nv
				changed = true
			}
		}
		return x, changed
	case []any:
		changed := false
		for i, iv := range x {
			if nv, ch := n.Items.coerce(iv); ch {
				x[i] = nv
				changed = true
			}
		}
		return x, changed
	}
	return v, false
}

func (n *node) coerceString(s string) (any, bool) {
	t := n.Type
	if len(t) == 0 || t.has("string") {
		return s, false
	}
	switch {
	case t.has("integer") && integerRE.MatchString(s):
		return json.Number(s), true
	case t.has("number") && numberRE.MatchString(s):
		return json.Number(s), true
	case t.has("boolean") && (s == "true" || s == "false"):
		return s == "true", true
	case t.has("array") && len(s) > 0 && s[0] == '[':
		if parsed, err := parseJSON([]byte(s)); err == nil {
			if arr, ok := parsed.([]any); ok {
				out, _ := n.coerce(arr)
				return out, true
			}
		}
	case t.has("object") && len(s) > 0 && s[0] == '{':
		if parsed, err := parseJSON([]byte(s)); err == nil {
			if obj, ok := parsed.(map[string]any); ok {
				out, _ := n.coerce(obj)
				return out, true
			}
		}
	}
	return s, false
}
