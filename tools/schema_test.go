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
		`{"properties":{"x":{"$ref":"#/nowhere"}}}`,                              // a local reference to nothing
		`{"$schema":"http://json-schema.org/draft-04/schema#"}`,                  // a draft the library cannot validate
		`{"properties":{"x":{"minimum":"one"}}}`,                                 // a keyword of the wrong type
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

// The walker lists problems; the library decides. They must agree on every verdict they both
// can give: a row where the walker lists a problem the library does not see would show the model
// a wrong repair hint, a row where only the library objects would show it only the library's
// first problem. Each case lists the pointers the walker must report (none: valid).
func TestWalkerAgreesWithTheLibrary(t *testing.T) {
	cases := []struct {
		schema, args string
		want         []string // pointers, sorted
	}{
		{`{"type":"object","properties":{"a":{"type":"integer","multipleOf":3}}}`, `{"a":7}`, []string{"/a"}},
		{`{"type":"object","properties":{"a":{"type":"integer","multipleOf":3}}}`, `{"a":9}`, nil},
		{`{"type":"object","properties":{"a":false}}`, `{"a":1}`, []string{"/a"}},
		{`{"type":"object","properties":{"a":{"oneOf":[{"type":"integer"},{"minimum":0}]}}}`, `{"a":2}`, []string{"/a"}},
		{`{"type":"object","properties":{"a":{"oneOf":[{"type":"integer"},{"minimum":0}]}}}`, `{"a":-2}`, nil},
		{`{"type":"object","properties":{"a":{"not":{"type":"string"}}}}`, `{"a":"s"}`, []string{"/a"}},
		{`{"type":"object","if":{"properties":{"k":{"const":"x"}},"required":["k"]},"then":{"required":["x"]},"else":{"required":["y"]}}`, `{"k":"x"}`, []string{"/x"}},
		{`{"type":"object","if":{"properties":{"k":{"const":"x"}},"required":["k"]},"then":{"required":["x"]},"else":{"required":["y"]}}`, `{"k":"z"}`, []string{"/y"}},
		{`{"type":"object","patternProperties":{"^n_":{"type":"integer"}},"additionalProperties":false}`, `{"n_a":"b","m":1}`, []string{"/m", "/n_a"}},
		{`{"type":"object","additionalProperties":{"type":"boolean"}}`, `{"x":true,"y":3}`, []string{"/y"}},
		{`{"type":"object","dependentRequired":{"a":["b"]}}`, `{"a":1}`, []string{"/b"}},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","dependencies":{"a":["b"]}}`, `{"a":1}`, []string{"/b"}},
		{`{"type":"object","properties":{"l":{"type":"array","uniqueItems":true,"maxItems":2,"items":{"type":"string","maxLength":2}}}}`, `{"l":["ab","ab","abc"]}`, []string{"/l/2", "/l", "/l"}},
		{`{"type":"object","properties":{"l":{"type":"array","prefixItems":[{"type":"integer"}],"items":{"type":"string"}}}}`, `{"l":["x",1]}`, []string{"/l/0", "/l/1"}},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"l":{"type":"array","items":[{"type":"integer"}],"additionalItems":{"type":"string"}}}}`, `{"l":["x",1]}`, []string{"/l/0", "/l/1"}},
		{`{"type":"object","properties":{"l":{"type":"array","contains":{"type":"integer"}}}}`, `{"l":["x"]}`, []string{"/l"}},
		{`{"type":"object","properties":{"l":{"type":"array","contains":{"type":"integer"}}}}`, `{"l":["x",2]}`, nil},
		{`{"type":"object","propertyNames":{"maxLength":2},"minProperties":2}`, `{"abc":1}`, []string{"/", "/abc"}},
		{`{"type":"object","properties":{"n":{"type":["integer","null"],"exclusiveMaximum":10}}}`, `{"n":10}`, []string{"/n"}},
		{`{"type":"object","properties":{"n":{"type":["integer","null"],"exclusiveMaximum":10}}}`, `{"n":null}`, nil},
		{`{"type":"object","properties":{"e":{"enum":[1,"1",{"a":[2]}]}}}`, `{"e":1.0}`, nil},
		{`{"type":"object","properties":{"e":{"enum":[1,"1",{"a":[2]}]}}}`, `{"e":{"a":[2.0]}}`, nil},
		{`{"type":"object","properties":{"e":{"enum":[1,"1",{"a":[2]}]}}}`, `{"e":2}`, []string{"/e"}},
		{`{"type":"object","properties":{"s":{"type":"string","pattern":"^a","minLength":3}}}`, `{"s":"ba"}`, []string{"/s", "/s"}},
		{`{"type":"object","allOf":[{"required":["a"]},{"properties":{"b":{"type":"string"}}}]}`, `{"b":1}`, []string{"/a", "/b"}},
		{`{"type":"object","properties":{"t":{"$ref":"#/$defs/t"}},"$defs":{"t":{"type":"object","properties":{"k":{"$ref":"#/$defs/t"},"v":{"type":"integer"}}}}}`, `{"t":{"k":{"k":{"v":"x"}}}}`, []string{"/t/k/k/v"}},
	}
	for _, c := range cases {
		t.Run(c.schema+" "+c.args, func(t *testing.T) {
			spec, err := ParseSpec[map[string]any]([]byte(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			v, err := parseJSON([]byte(c.args))
			if err != nil {
				t.Fatal(err)
			}
			inst, err := forValidator(v, nil)
			if err != nil {
				t.Fatal(err)
			}
			libErr := spec.resolved.Validate(inst)
			var ptrs []string
			for _, p := range spec.root.problems(v) {
				ptrs = append(ptrs, p[:strings.Index(p, ": ")])
			}
			if !reflect.DeepEqual(ptrs, c.want) {
				t.Errorf("walker: %q, want problems at %q", spec.root.problems(v), c.want)
			}
			if (libErr == nil) != (len(ptrs) == 0) {
				t.Errorf("the library says %v, the walker lists %q", libErr, spec.root.problems(v))
			}
		})
	}
}

// Every row of the coercion table, after coercion: the library and the walker give the same
// verdict.
func TestWalkerAgreesOnTheCoercionTable(t *testing.T) {
	rows := []string{
		`{"path":"a","count":"1.5"}`, `{"path":"a","count":3.0}`, `{"path":"a","limit":"500"}`, `{"path":"a","mode":"medium"}`,
		`{"path":"a","file_path":"b"}`, `{"path":null}`, `{"path":5}`, `{"path":"a","flag":1}`, `{"path":"a","tags":"x"}`,
		`{"path":"a","nums":["1","x"]}`, `{"path":"a","opts":{"depth":"3","deep":"true"}}`, `{"path":"a","extra":{"k":"v"}}`,
		`{"path":"a","pointer":"5"}`, `{}`, `{"path":"a","ratio":"NaN"}`, `{"path":"a","limit":100}`,
	}
	coerceSpec.load()
	for _, raw := range rows {
		v, err := parseJSON([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		v, _ = coerceSpec.root.coerce(v)
		inst, err := forValidator(v, nil)
		if err != nil {
			t.Fatal(err)
		}
		libErr := coerceSpec.resolved.Validate(inst)
		if probs := coerceSpec.root.problems(v); (libErr == nil) != (len(probs) == 0) {
			t.Errorf("%s: the library says %v, the walker lists %q", raw, libErr, probs)
		}
	}
}

// A keyword the walker does not follow (unevaluatedProperties) is still enforced: the library
// decides, and its own message is the problem.
func TestLibraryDecidesWhereTheWalkerCannotList(t *testing.T) {
	spec, err := ParseSpec[map[string]any]([]byte(`{"type":"object","properties":{"a":{"type":"integer"}},"unevaluatedProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spec.Decode(json.RawMessage(`{"a":1}`), nil); err != nil {
		t.Fatal(err)
	}
	_, err = spec.Decode(json.RawMessage(`{"a":1,"b":2}`), nil)
	var ae *ArgumentError
	if !errors.As(err, &ae) || len(ae.Problems) != 1 || !strings.Contains(ae.Problems[0], "unevaluatedProperties") {
		t.Fatalf("got %v, want the library's unevaluatedProperties problem", err)
	}
	_, err = spec.Decode(json.RawMessage(`{"a":1e400}`), nil)
	if !errors.As(err, &ae) || len(ae.Problems) != 1 || !strings.HasPrefix(ae.Problems[0], "/a: number 1e400 is out of range") {
		t.Fatalf("got %v, want /a out of range", err)
	}
}
