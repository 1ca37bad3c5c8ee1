package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	reflector "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Spec is a tool's typed argument declaration: the Go struct the arguments decode into, the JSON
// Schema the model sees, and the compiled validator.
type Spec struct {
	typ  reflect.Type
	make func() []byte // produces the schema JSON; run once, on first use
	once sync.Once
	// Set by load.
	schema   json.RawMessage
	compiled *jsonschema.Schema
	root     *node
}

// NewSpec derives the JSON Schema from the argument struct A. Field docs come from
// `jsonschema_description:"…"` tags and constraints from `jsonschema:"minimum=1,enum=a,enum=b"`
// tags; a field is required unless its json tag has omitempty or omitzero. Unknown properties are
// rejected. It panics on a schema that does not compile: that is a programming error.
//
// The schema is derived and compiled on first use (tools are declared in package variables, and
// process start-up should not pay for every schema).
func NewSpec[A any]() *Spec {
	return &Spec{typ: reflect.TypeFor[A](), make: func() []byte {
		r := &reflector.Reflector{DoNotReference: true, ExpandedStruct: true}
		s := r.Reflect(new(A))
		s.Version = ""
		s.ID = ""
		raw, err := json.Marshal(s)
		if err != nil {
			panic(fmt.Sprintf("tools: schema of %T: %v", *new(A), err))
		}
		return raw
	}}
}

// SpecFromSchema declares A's schema by hand (written beside the struct) instead of deriving it.
func SpecFromSchema[A any](schema string) *Spec {
	return &Spec{typ: reflect.TypeFor[A](), make: func() []byte { return []byte(schema) }}
}

func (s *Spec) load() {
	s.once.Do(func() { s.schema, s.compiled, s.root = compileSchema(s.typ, s.make()) })
}

func compileSchema(t reflect.Type, raw []byte) (json.RawMessage, *jsonschema.Schema, *node) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		panic(fmt.Sprintf("tools: schema of %v is not JSON: %v", t, err))
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(compact.Bytes()))
	if err != nil {
		panic(fmt.Sprintf("tools: schema of %v: %v", t, err))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem://args.json", doc); err != nil {
		panic(fmt.Sprintf("tools: schema of %v: %v", t, err))
	}
	compiled, err := c.Compile("mem://args.json")
	if err != nil {
		panic(fmt.Sprintf("tools: schema of %v does not compile: %v", t, err))
	}
	var root node
	if err := json.Unmarshal(compact.Bytes(), &root); err != nil {
		panic(fmt.Sprintf("tools: schema of %v: %v", t, err))
	}
	return compact.Bytes(), compiled, &root
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
	if err := s.compiled.Validate(coerced); err != nil {
		ve, ok := err.(*jsonschema.ValidationError)
		if !ok {
			return nil, fail(err.Error())
		}
		return nil, fail(problems(ve)...)
	}
	data := []byte(trimmed)
	if changed || len(data) == 0 || data[0] != '{' {
		var err error
		if data, err = json.Marshal(coerced); err != nil {
			return nil, fail(err.Error())
		}
	}
	out := reflect.New(s.typ)
	if err := json.Unmarshal(data, out.Interface()); err != nil {
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
	if e, ok := err.(*json.UnmarshalTypeError); ok {
		return fmt.Sprintf("/%s: value %s does not fit %v", strings.ReplaceAll(e.Field, ".", "/"), e.Value, e.Type)
	}
	return err.Error()
}

var printer = message.NewPrinter(language.English)

// problems flattens a validation error tree into one line per leaf, sorted by pointer.
func problems(ve *jsonschema.ValidationError) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		ptr := pointer(e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				out = append(out, pointer(append(append([]string(nil), e.InstanceLocation...), m))+": required property is missing")
			}
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				out = append(out, pointer(append(append([]string(nil), e.InstanceLocation...), p))+": unknown property")
			}
		default:
			out = append(out, ptr+": "+e.ErrorKind.LocalizedString(printer))
		}
	}
	walk(ve)
	sort.Strings(out)
	return out
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
