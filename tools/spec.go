package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// One JSON Schema path: the schema of a built-in tool is derived from its argument struct by
// deriveSchema (a small walker over the Go type, below); every schema — derived, written by
// hand, or received at run time from an MCP server — is resolved and validated by
// google/jsonschema-go (the library the MCP SDK links), which decides; our walker over the same
// schema (schema_node.go) coerces before and, when the library says no, lists every problem
// with its JSON pointer (the library reports only the first, located in the schema). See
// docs/architecture.md ("Tool arguments").

// Spec is a tool's typed argument declaration: the Go type the arguments decode into, the JSON
// Schema the model sees, and the compiled validator.
type Spec struct {
	typ  reflect.Type
	make func() []byte // produces the schema JSON; run once, on first use
	once sync.Once
	// Set by load.
	schema   json.RawMessage
	resolved *jsonschema.Resolved
	root     *node
	err      error // only for ParseSpec, which compiles at once
}

// NewSpec derives the JSON Schema from the argument struct A. Field docs come from
// `jsonschema_description:"…"` tags and constraints from `jsonschema:"minimum=1,enum=a,enum=b"`
// tags (keywords: enum, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength,
// maxLength, pattern, minItems, maxItems; values cannot contain commas); a field is required
// unless its json tag has omitempty or omitzero. Unknown properties are rejected. The bytes are a
// pure function of the type: properties in field order, keywords in a fixed order. It panics on a
// type it cannot describe or a schema that does not compile: that is a programming error.
//
// The schema is derived and compiled on first use (tools are declared in package variables, and
// process start-up should not pay for every schema).
func NewSpec[A any]() *Spec {
	t := reflect.TypeFor[A]()
	return &Spec{typ: t, make: func() []byte {
		raw, err := deriveSchema(t)
		if err != nil {
			panic(fmt.Sprintf("tools: schema of %v: %v", t, err))
		}
		return raw
	}}
}

// SpecFromSchema declares A's schema by hand (written beside the struct) instead of deriving it.
// It panics, on first use, on a schema that does not compile: for a schema that arrives at run
// time use ParseSpec.
func SpecFromSchema[A any](schema string) *Spec {
	return &Spec{typ: reflect.TypeFor[A](), make: func() []byte { return []byte(schema) }}
}

// ParseSpec compiles a JSON Schema received at run time (an MCP tool's inputSchema) into a Spec
// whose Decode validates and coerces arguments exactly as for a built-in tool and decodes them
// into A — map[string]any (numbers as json.Number, so large integers survive) or a struct. It
// returns an error for a schema that is not JSON or does not compile, and for a $schema other
// than draft 2020-12 (the default) or draft-07, the two the library validates. Schemas are
// self-contained: a $ref to anything outside the schema itself is an error (nothing is loaded
// from files or the network). Schema returns the compacted input.
func ParseSpec[A any](schema []byte) (*Spec, error) {
	s := &Spec{typ: reflect.TypeFor[A]()}
	s.once.Do(func() { s.schema, s.resolved, s.root, s.err = compileSchema(schema) })
	if s.err != nil {
		return nil, s.err
	}
	return s, nil
}

func (s *Spec) load() {
	s.once.Do(func() {
		s.schema, s.resolved, s.root, s.err = compileSchema(s.make())
		if s.err != nil {
			panic(fmt.Sprintf("tools: schema of %v: %v", s.typ, s.err))
		}
	})
}

// compileSchema compacts raw, resolves it with google/jsonschema-go (no loader: a $ref to
// another document is an error, nothing is read from files or the network) and reads it with
// our walker.
func compileSchema(raw []byte) (json.RawMessage, *jsonschema.Resolved, *node, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, nil, nil, fmt.Errorf("not JSON: %v", err)
	}
	doc, err := parseJSON(compact.Bytes())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("not JSON: %v", err)
	}
	draft7 := false
	if m, ok := doc.(map[string]any); ok {
		switch v := m["$schema"]; v {
		case nil, "https://json-schema.org/draft/2020-12/schema":
		case "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#":
			draft7 = true
		default:
			return nil, nil, nil, fmt.Errorf("$schema %v: only draft 2020-12 and draft-07 are supported", v)
		}
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(compact.Bytes(), &s); err != nil {
		return nil, nil, nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("does not compile: %v", err)
	}
	root, err := parseNode(doc, draft7)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("does not compile: %v", err)
	}
	return compact.Bytes(), resolved, root, nil
}

// validate asks the library whether v (parsed arguments, numbers as json.Number) is valid. On
// no, the walker lists every problem; if it finds none (a keyword it does not follow), the
// library's own message is the problem. A panic in the library is a refusal, not a crash.
func (s *Spec) validate(v any) (problems []string) {
	defer func() {
		if r := recover(); r != nil {
			problems = []string{fmt.Sprintf("/: the arguments could not be validated: %v", r)}
		}
	}()
	inst, err := forValidator(v, nil)
	if err != nil {
		return []string{err.Error()}
	}
	if err := s.resolved.Validate(inst); err == nil {
		return nil
	} else if p := s.root.problems(v); len(p) > 0 {
		return p
	} else {
		return []string{"/: " + err.Error()}
	}
}

// forValidator copies v with each json.Number as an int64 (when it is one) or a float64: the
// library reads json.Number as a string. Numbers beyond float64 are refused here.
func forValidator(v any, at []string) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s: number %s is out of range", pointer(at), x)
		}
		return f, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = forValidator(e, append(slices.Clip(at), strconv.Itoa(i))); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			var err error
			if out[k], err = forValidator(e, append(slices.Clip(at), k)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v, nil
}

// Schema returns the JSON Schema of the arguments, compact and byte-stable.
func (s *Spec) Schema() json.RawMessage {
	s.load()
	return s.schema
}

// Type returns the argument struct type.
func (s *Spec) Type() reflect.Type { return s.typ }

// ArgumentError lists every problem found in a call's arguments, each with a JSON pointer.
type ArgumentError struct {
	Problems []string        // "/offset: want integer, got string \"abc\""
	Received json.RawMessage // the arguments as the model sent them
}

func (e *ArgumentError) Error() string {
	var b strings.Builder
	b.WriteString("invalid arguments:")
	for _, p := range e.Problems {
		b.WriteString("\n- ")
		b.WriteString(p)
	}
	b.WriteString("\nreceived: ")
	if len(e.Received) == 0 {
		b.WriteString("(nothing)")
	} else {
		b.Write(e.Received)
	}
	return b.String()
}

// Decode validates raw arguments and decodes them into a new *A (returned as any).
//
// Order: parse; compat (may reshape the object); safe coercion driven by the schema; validation
// reporting every error; decoding. Coercion converts only values with a single meaning: a string
// holding an integer ("119") for an integer, a JSON number ("2.5") for a number, exactly "true" or
// "false" for a boolean, a string holding a JSON array or object where the schema wants one, a null
// for an optional property that does not allow null (dropped), and a whole argument object sent as
// a JSON string. Anything else is left for the validator to report.
func (s *Spec) Decode(raw json.RawMessage, compat func(map[string]any) map[string]any) (any, error) {
	s.load()
	fail := func(p ...string) error { return &ArgumentError{Problems: p, Received: raw} }
	trimmed := bytes.TrimSpace(raw)
	var v any
	switch {
	case len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")):
		v = map[string]any{}
	default:
		var err error
		v, err = parseJSON(trimmed)
		if err != nil {
			return nil, fail("arguments are not valid JSON: " + err.Error())
		}
	}
	if str, ok := v.(string); ok { // the whole object sent as a JSON string
		if inner, err := parseJSON([]byte(str)); err == nil {
			if _, isObj := inner.(map[string]any); isObj {
				v = inner
			}
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fail(fmt.Sprintf("arguments must be a JSON object, got %s", jsonKind(v)))
	}
	if compat != nil {
		obj = compat(obj)
	}
	changed := compat != nil || !bytes.Equal(trimmed, raw)
	var coerced any
	coerced, ch := s.root.coerce(obj)
	changed = changed || ch
	if p := s.validate(coerced); len(p) > 0 {
		return nil, fail(p...)
	}
	data := []byte(trimmed)
	if changed || len(data) == 0 || data[0] != '{' {
		var err error
		if data, err = json.Marshal(coerced); err != nil {
			return nil, fail(err.Error())
		}
	}
	out := reflect.New(s.typ)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // for map[string]any and any fields: integers keep every digit
	if err := dec.Decode(out.Interface()); err != nil {
		return nil, fail(decodeProblem(err))
	}
	return out.Interface(), nil
}

func parseJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

func decodeProblem(err error) string {
	if e := (*json.UnmarshalTypeError)(nil); errors.As(err, &e) {
		return fmt.Sprintf("/%s: value %s does not fit %v", strings.ReplaceAll(e.Field, ".", "/"), e.Value, e.Type)
	}
	return err.Error()
}

func pointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, p := range loc {
		b.WriteByte('/')
		p = strings.ReplaceAll(p, "~", "~0")
		b.WriteString(strings.ReplaceAll(p, "/", "~1"))
	}
	return b.String()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// deriveSchema writes the JSON Schema of the argument type t (a struct), compact. The output is a
// pure function of t: properties in field order, and in each schema the keywords in the order
// documented on write. A type that JSON Schema cannot state faithfully (a custom JSON encoding, a
// recursive type, non-string map keys, channels, functions…) is an error.
func deriveSchema(t reflect.Type) ([]byte, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("arguments must be a struct, not %v", t)
	}
	g := &schemaGen{active: map[reflect.Type]bool{}}
	var b bytes.Buffer
	if err := g.write(&b, t, nil, ""); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type schemaGen struct {
	active map[reflect.Type]bool // structs being written (to refuse recursive types)
}

// tagKeywords are the constraints a `jsonschema:"…"` tag may set, in the order they are written,
// with the JSON type each applies to.
var tagKeywords = []struct{ name, appliesTo string }{
	{"enum", ""}, // string, integer, number or boolean
	{"minimum", "number"},
	{"maximum", "number"},
	{"exclusiveMinimum", "number"},
	{"exclusiveMaximum", "number"},
	{"minLength", "string"},
	{"maxLength", "string"},
	{"pattern", "string"},
	{"minItems", "array"},
	{"maxItems", "array"},
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	marshalerType  = reflect.TypeFor[json.Marshaler]()
	unmarshalType  = reflect.TypeFor[json.Unmarshaler]()
)

// write appends the schema of t with the constraints of its field's tag and its description.
// Keyword order: properties, additionalProperties, items, type, required, then the tag's
// constraints, then description.
func (g *schemaGen) write(b *bytes.Buffer, t reflect.Type, tag map[string][]string, desc string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem() // null is not offered: an optional property is left out, not set to null
	}
	if t == rawMessageType || t.Kind() == reflect.Interface && t.NumMethod() == 0 {
		if len(tag) > 0 {
			return fmt.Errorf("constraints on a field of any JSON type (%v)", t)
		}
		if desc == "" { // {} : any JSON value
			b.WriteString("{}")
		} else {
			b.WriteString(`{"description":`)
			writeString(b, desc)
			b.WriteByte('}')
		}
		return nil
	}
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(unmarshalType) {
		return fmt.Errorf("%v has its own JSON encoding, which a schema derived from its fields would misstate", t)
	}
	b.WriteByte('{')
	n := 0
	key := func(k string) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(`"` + k + `":`)
	}
	var typ string
	var required []string
	switch t.Kind() {
	case reflect.Bool:
		typ = "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		typ = "integer"
		if t.Kind() >= reflect.Uint && tag["minimum"] == nil {
			tag = withDefault(tag, "minimum", "0")
		}
	case reflect.Float32, reflect.Float64:
		typ = "number"
	case reflect.String:
		typ = "string"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			typ = "string" // encoding/json: base64
			break
		}
		typ = "array"
		key("items")
		if err := g.write(b, t.Elem(), nil, ""); err != nil {
			return err
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("map key type %v: only string keys", t.Key())
		}
		typ = "object"
		if e := t.Elem(); !(e.Kind() == reflect.Interface && e.NumMethod() == 0) {
			key("additionalProperties")
			if err := g.write(b, e, nil, ""); err != nil {
				return err
			}
		}
	case reflect.Struct:
		if g.active[t] {
			return fmt.Errorf("recursive type %v", t)
		}
		g.active[t] = true
		defer delete(g.active, t)
		fields, err := structFields(t, nil)
		if err != nil {
			return err
		}
		typ = "object"
		key("properties") // even when empty: some chat templates iterate over it
		b.WriteByte('{')
		for i, f := range fields {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, f.name)
			b.WriteByte(':')
			if err := g.write(b, f.typ, f.tag, f.desc); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			if f.required {
				required = append(required, f.name)
			}
		}
		b.WriteByte('}')
		key("additionalProperties")
		b.WriteString("false")
	default:
		return fmt.Errorf("type %v has no JSON Schema", t)
	}
	key("type")
	writeString(b, typ)
	if len(required) > 0 {
		key("required")
		b.WriteByte('[')
		for i, r := range required {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, r)
		}
		b.WriteByte(']')
	}
	if err := writeConstraints(b, key, typ, tag); err != nil {
		return err
	}
	if desc != "" {
		key("description")
		writeString(b, desc)
	}
	b.WriteByte('}')
	return nil
}

func withDefault(tag map[string][]string, k, v string) map[string][]string {
	out := map[string][]string{k: {v}}
	for tk, tv := range tag {
		out[tk] = tv
	}
	return out
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always marshals
	b.Write(enc)
}

// writeConstraints writes the tag's keywords in tagKeywords order, checking that each applies to
// typ and that its value is well formed.
func writeConstraints(b *bytes.Buffer, key func(string), typ string, tag map[string][]string) error {
	for _, kw := range tagKeywords {
		vals, ok := tag[kw.name]
		if !ok {
			continue
		}
		if kw.appliesTo != "" && kw.appliesTo != typ && !(kw.appliesTo == "number" && typ == "integer") {
			return fmt.Errorf("%s does not apply to type %s", kw.name, typ)
		}
		if kw.name != "enum" && len(vals) != 1 {
			return fmt.Errorf("%s given %d times", kw.name, len(vals))
		}
		key(kw.name)
		switch kw.name {
		case "enum":
			b.WriteByte('[')
			for i, v := range vals {
				if i > 0 {
					b.WriteByte(',')
				}
				if err := writeValue(b, typ, v); err != nil {
					return fmt.Errorf("enum: %w", err)
				}
			}
			b.WriteByte(']')
		case "pattern":
			writeString(b, vals[0])
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			if err := writeValue(b, "number", vals[0]); err != nil {
				return fmt.Errorf("%s: %w", kw.name, err)
			}
		default: // lengths and counts
			if !integerRE.MatchString(vals[0]) || strings.HasPrefix(vals[0], "-") {
				return fmt.Errorf("%s=%s: want a non-negative integer", kw.name, vals[0])
			}
			b.WriteString(vals[0])
		}
	}
	return nil
}

// writeValue writes a tag value as a JSON value of type typ.
func writeValue(b *bytes.Buffer, typ, v string) error {
	switch typ {
	case "string":
		writeString(b, v)
	case "integer":
		if !integerRE.MatchString(v) {
			return fmt.Errorf("%q is not an integer", v)
		}
		b.WriteString(v)
	case "number":
		if !numberRE.MatchString(v) {
			return fmt.Errorf("%q is not a number", v)
		}
		b.WriteString(v)
	case "boolean":
		if v != "true" && v != "false" {
			return fmt.Errorf("%q is not a boolean", v)
		}
		b.WriteString(v)
	default:
		return fmt.Errorf("enum on type %s", typ)
	}
	return nil
}

// field is one property of a struct, as encoding/json names it.
type field struct {
	name     string
	typ      reflect.Type
	required bool
	tag      map[string][]string
	desc     string
}

// structFields lists the properties of struct t in field order, flattening embedded structs
// without a json name (as encoding/json does). A name used twice is an error (encoding/json would
// silently pick one).
func structFields(t reflect.Type, seen map[string]bool) ([]field, error) {
	if seen == nil {
		seen = map[string]bool{}
	}
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		jsonTag := sf.Tag.Get("json")
		if jsonTag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(jsonTag, ",")
		ft := sf.Type
		if sf.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if sf.Tag.Get("jsonschema") != "" || sf.Tag.Get("jsonschema_description") != "" {
					return nil, fmt.Errorf("embedded %v: schema tags on an embedded struct", et)
				}
				inner, err := structFields(et, seen)
				if err != nil {
					return nil, err
				}
				out = append(out, inner...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := field{name: name, typ: ft, required: true, desc: sf.Tag.Get("jsonschema_description")}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty", "omitzero":
				f.required = false
			case "string":
				return nil, fmt.Errorf("field %s: the json \",string\" option is not supported", sf.Name)
			}
		}
		if spec := sf.Tag.Get("jsonschema"); spec != "" {
			f.tag = map[string][]string{}
			for _, kv := range strings.Split(spec, ",") {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || !knownKeyword(k) {
					return nil, fmt.Errorf("field %s: unknown jsonschema tag entry %q", sf.Name, kv)
				}
				f.tag[k] = append(f.tag[k], v)
			}
		}
		if seen[name] {
			return nil, fmt.Errorf("property %q declared twice", name)
		}
		seen[name] = true
		out = append(out, f)
	}
	return out, nil
}

func knownKeyword(k string) bool {
	for _, kw := range tagKeywords {
		if kw.name == k {
			return true
		}
	}
	return false
}
