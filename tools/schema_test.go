package tools

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The schema derived from coerceArgs, byte for byte: properties in field order, keywords in a
// fixed order (the same order the built-in tools' schemas had before the walker replaced the
// reflection library, so the model sees the same bytes).
const coerceArgsSchema = `{"properties":{` +
	`"count":{"type":"integer"},"ratio":{"type":"number"},"flag":{"type":"boolean"},"name":{"type":"string"},` +
	`"tags":{"items":{"type":"string"},"type":"array"},"nums":{"items":{"type":"integer"},"type":"array"},` +
	`"opts":{"properties":{"depth":{"type":"integer"},"deep":{"type":"boolean"}},"additionalProperties":false,"type":"object","required":["depth"]},` +
	`"extra":{"additionalProperties":{"type":"integer"},"type":"object"},` +
	`"limit":{"type":"integer","minimum":1,"maximum":100},"mode":{"type":"string","enum":["fast","slow"]},` +
	`"path":{"type":"string","description":"File path, relative to the workspace."},"pointer":{"type":"integer"}` +
	`},"additionalProperties":false,"type":"object","required":["path"]}`

func TestDerivedSchemaBytes(t *testing.T) {
	if got := string(coerceSpec.Schema()); got != coerceArgsSchema {
		t.Errorf("schema of coerceArgs:\n got %s\nwant %s", got, coerceArgsSchema)
	}
	for i := range 20 { // a fresh derivation gives the same bytes every time (no map order)
		if got := string(NewSpec[coerceArgs]().Schema()); got != coerceArgsSchema {
			t.Fatalf("derivation %d differs:\n%s", i, got)
		}
	}
}

type embeddedBase struct {
	Path string `json:"path"`
}

type kindsArgs struct {
	embeddedBase
	Small  uint8           `json:"small,omitzero"`
	Blob   []byte          `json:"blob,omitempty"`
	Any    any             `json:"any,omitempty" jsonschema_description:"Anything."`
	Raw    json.RawMessage `json:"raw,omitempty"`
	Free   map[string]any  `json:"free,omitempty"`
	Fixed  [2]int          `json:"fixed,omitempty" jsonschema:"minItems=2,maxItems=2"`
	Flag   bool            `json:"flag,omitempty" jsonschema:"enum=true"`
	Name   string          `json:"name,omitempty" jsonschema:"minLength=1,maxLength=8,pattern=^[a-z]+$"`
	Ratio  float64         `json:"ratio,omitempty" jsonschema:"exclusiveMinimum=0,exclusiveMaximum=1.5"`
	Plain  string
	hidden int    //lint:ignore U1000 an unexported field, which the schema must leave out
	Skip   string `json:"-"`
}

func TestDerivedSchemaKinds(t *testing.T) {
	want := `{"properties":{"path":{"type":"string"},"small":{"type":"integer","minimum":0},"blob":{"type":"string"},` +
		`"any":{"description":"Anything."},"raw":{},"free":{"type":"object"},` +
		`"fixed":{"items":{"type":"integer"},"type":"array","minItems":2,"maxItems":2},` +
		`"flag":{"type":"boolean","enum":[true]},` +
		`"name":{"type":"string","minLength":1,"maxLength":8,"pattern":"^[a-z]+$"},` +
		`"ratio":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1.5},"Plain":{"type":"string"}},` +
		`"additionalProperties":false,"type":"object","required":["path","Plain"]}`
	spec := NewSpec[kindsArgs]()
	if got := string(spec.Schema()); got != want {
		t.Errorf("schema:\n got %s\nwant %s", got, want)
	}
	got, err := spec.Decode(json.RawMessage(`{"path":"p","Plain":"x","small":"7","name":"ab","any":{"k":[1]},"raw":[1,2]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := got.(*kindsArgs)
	if a.Path != "p" || a.Small != 7 || a.Name != "ab" || string(a.Raw) != "[1,2]" {
		t.Errorf("decoded %+v", a)
	}
	_, err = spec.Decode(json.RawMessage(`{"path":"p","Plain":"x","small":-1,"name":"AB","ratio":0}`), nil)
	var ae *ArgumentError
	if !errors.As(err, &ae) || len(ae.Problems) != 3 {
		t.Fatalf("want 3 problems (small, name, ratio), got %v", err)
	}
}

func TestDerivedSchemaOfNoArguments(t *testing.T) {
	type none struct{}
	if got, want := string(NewSpec[none]().Schema()), `{"properties":{},"additionalProperties":false,"type":"object"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

type recursive struct {
	Next *recursive `json:"next,omitempty"`
}

// TestDeriveSchemaRefuses: a type the walker cannot describe faithfully is a programming error,
// reported with the type and field, never a silently wrong schema.
func TestDeriveSchemaRefuses(t *testing.T) {
	cases := []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"not a struct", reflect.TypeFor[map[string]any](), "must be a struct"},
		{"recursive", reflect.TypeFor[recursive](), "recursive type"},
		{"int map keys", reflect.TypeFor[struct {
			M map[int]string `json:"m"`
		}](), "only string keys"},
		{"channel", reflect.TypeFor[struct {
			C chan int `json:"c"`
		}](), "has no JSON Schema"},
		{"custom encoding", reflect.TypeFor[struct {
			T time.Time `json:"t"`
		}](), "own JSON encoding"},
		{"string option", reflect.TypeFor[struct {
			N int `json:"n,string"`
		}](), `",string"`},
		{"unknown tag keyword", reflect.TypeFor[struct {
			N int `json:"n" jsonschema:"default=3"`
		}](), "unknown jsonschema tag entry"},
		{"keyword for another type", reflect.TypeFor[struct {
			S string `json:"s" jsonschema:"minimum=1"`
		}](), "minimum does not apply to type string"},
		{"enum value of the wrong type", reflect.TypeFor[struct {
			N int `json:"n" jsonschema:"enum=one"`
		}](), "not an integer"},
		{"negative length", reflect.TypeFor[struct {
			S string `json:"s" jsonschema:"maxLength=-1"`
		}](), "non-negative integer"},
		{"keyword twice", reflect.TypeFor[struct {
			N int `json:"n" jsonschema:"minimum=1,minimum=2"`
		}](), "given 2 times"},
		{"constraint on any", reflect.TypeFor[struct {
			A any `json:"a" jsonschema:"minimum=1"`
		}](), "any JSON type"},
		{"duplicate name", reflect.TypeFor[struct {
			embeddedBase
			P string `json:"path"`
		}](), "declared twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := deriveSchema(c.typ)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("deriveSchema(%v) = %v, want an error containing %q", c.typ, err, c.want)
			}
		})
	}
}

// An MCP-style schema, as a server sends it: draft-07, local $defs/$ref, a combinator, a boolean
// subschema, an integer beyond float64's precision in the arguments.
const runtimeSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "id": {"type": "integer"},
    "count": {"type": "integer", "minimum": 1},
    "mode": {"anyOf": [{"const": "fast"}, {"const": "slow"}]},
    "item": {"$ref": "#/definitions/item"},
    "extra": true
  },
  "required": ["id"],
  "additionalProperties": false,
  "definitions": {"item": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}
}`

func TestParseSpecRuntimeSchema(t *testing.T) {
	spec, err := ParseSpec[map[string]any]([]byte(runtimeSchema))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(spec.Schema()); strings.ContainsAny(s, "\n ") || !json.Valid(spec.Schema()) {
		t.Errorf("schema is not compact JSON: %s", s)
	}
	got, err := spec.Decode(json.RawMessage(`{"id":12345678901234567891,"count":"2","item":{"n":"3"},"extra":[1],"mode":"fast"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := *got.(*map[string]any)
	if m["id"] != json.Number("12345678901234567891") {
		t.Errorf("id = %#v: the integer lost digits", m["id"])
	}
	if m["count"] != json.Number("2") || m["item"].(map[string]any)["n"] != json.Number("3") {
		t.Errorf("coercion through properties and $ref'd object not applied: %#v", m)
	}
	raw := `{"count":0,"mode":"medium","item":{},"bogus":1}`
	_, err = spec.Decode(json.RawMessage(raw), nil)
	var ae *ArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want *ArgumentError", err)
	}
	for _, p := range []string{"/bogus: unknown property", "/count: ", "/id: required property is missing", "/item/n: required property is missing", "/mode: "} {
		found := false
		for _, got := range ae.Problems {
			found = found || strings.HasPrefix(got, p)
		}
		if !found {
			t.Errorf("no problem starting with %q in %q", p, ae.Problems)
		}
	}
	if string(ae.Received) != raw {
		t.Errorf("received = %s, want %s", ae.Received, raw)
	}
}

func TestParseSpecRejectsBadSchemas(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(`{"type":"string"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`{"type":"object"`,                      // not JSON
		`{"type":"thing"}`,                      // not a schema
		`{"type":"string","pattern":"(?<=a)b"}`, // a regex Go cannot run
		`{"properties":{"x":{"$ref":"file://` + filepath.ToSlash(other) + `"}}}`, // a local file: never read
		`{"properties":{"x":{"$ref":"https://example.com/s.json"}}}`,             // the network: never asked
	} {
		if _, err := ParseSpec[map[string]any]([]byte(s)); err == nil {
			t.Errorf("ParseSpec(%s) accepted it", s)
		}
	}
}

// A recursive schema (a tree through a local $ref) is coerced at every depth, and reading it
// terminates.
func TestParseSpecRecursiveSchema(t *testing.T) {
	spec, err := ParseSpec[map[string]any]([]byte(`{"type":"object","properties":{"tree":{"$ref":"#/$defs/tree"}},` +
		`"$defs":{"tree":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/tree"}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := spec.Decode(json.RawMessage(`{"tree":{"v":"1","kids":[{"v":"2","kids":"[{\"v\":\"3\"}]"}]}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if want := `{"tree":{"kids":[{"kids":[{"v":3}],"v":2}],"v":1}}`; string(b) != want {
		t.Errorf("decoded %s, want %s", b, want)
	}
}
