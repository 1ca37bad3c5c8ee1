package tools

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"
)

// Safe coercion, driven by the schema as our walker reads it (schema_node.go). What the walker
// does not understand — boolean schemas, combinators, references it does not follow — means
// "no coercion there", and the validator decides.

var (
	integerRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	numberRE  = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
)

// coerce returns v with the safe coercions applied, and whether anything changed. Maps are changed
// in place; they come from parsing and are not shared.
func (n *node) coerce(v any) (any, bool) {
	if n == nil || n.opaque {
		return v, false
	}
	if n.ref != nil && len(n.Type) == 0 && n.Properties == nil && n.Items == nil {
		return n.ref.coerce(v) // a reference, possibly to a schema being read (recursive)
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
