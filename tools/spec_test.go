package tools

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type coerceArgs struct {
	Count   int            `json:"count,omitempty"`
	Ratio   float64        `json:"ratio,omitempty"`
	Flag    bool           `json:"flag,omitempty"`
	Name    string         `json:"name,omitempty"`
	Tags    []string       `json:"tags,omitempty"`
	Nums    []int          `json:"nums,omitempty"`
	Opts    *coerceOpts    `json:"opts,omitempty"`
	Extra   map[string]int `json:"extra,omitempty"`
	Limit   int            `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100"`
	Mode    string         `json:"mode,omitempty" jsonschema:"enum=fast,enum=slow"`
	Path    string         `json:"path" jsonschema_description:"File path, relative to the workspace."`
	Pointer *int           `json:"pointer,omitempty"`
}

type coerceOpts struct {
	Depth int  `json:"depth"`
	Deep  bool `json:"deep,omitempty"`
}

var coerceSpec = NewSpec[coerceArgs]()

func TestCoercionTable(t *testing.T) {
	intp := func(v int) *int { return &v }
	cases := []struct {
		name string
		raw  string
		want coerceArgs // compared when ok
		ok   bool
	}{
		{"integer from string", `{"path":"a","count":"119"}`, coerceArgs{Path: "a", Count: 119}, true},
		{"negative integer from string", `{"path":"a","count":"-7"}`, coerceArgs{Path: "a", Count: -7}, true},
		{"zero from string", `{"path":"a","count":"0"}`, coerceArgs{Path: "a"}, true},
		{"number from string", `{"path":"a","ratio":"2.5"}`, coerceArgs{Path: "a", Ratio: 2.5}, true},
		{"number with exponent", `{"path":"a","ratio":"1e3"}`, coerceArgs{Path: "a", Ratio: 1000}, true},
		{"integral float for integer", `{"path":"a","count":3.0}`, coerceArgs{Path: "a", Count: 3}, true},
		{"true from string", `{"path":"a","flag":"true"}`, coerceArgs{Path: "a", Flag: true}, true},
		{"false from string", `{"path":"a","flag":"false"}`, coerceArgs{Path: "a"}, true},
		{"array from JSON string", `{"path":"a","tags":"[\"x\",\"y\"]"}`, coerceArgs{Path: "a", Tags: []string{"x", "y"}}, true},
		{"array items coerced", `{"path":"a","nums":["1","2"]}`, coerceArgs{Path: "a", Nums: []int{1, 2}}, true},
		{"array in string with string items coerced", `{"path":"a","nums":"[\"4\",5]"}`, coerceArgs{Path: "a", Nums: []int{4, 5}}, true},
		{"object from JSON string", `{"path":"a","opts":"{\"depth\":2}"}`, coerceArgs{Path: "a", Opts: &coerceOpts{Depth: 2}}, true},
		{"nested object coerced", `{"path":"a","opts":{"depth":"3","deep":"true"}}`, coerceArgs{Path: "a", Opts: &coerceOpts{Depth: 3, Deep: true}}, true},
		{"null optional dropped", `{"path":"a","count":null,"opts":null}`, coerceArgs{Path: "a"}, true},
		{"whole object as JSON string", `"{\"path\":\"a\",\"count\":2}"`, coerceArgs{Path: "a", Count: 2}, true},
		{"empty arguments for optional-only would fail on path", `{}`, coerceArgs{}, false},
		{"pointer integer from string", `{"path":"a","pointer":"5"}`, coerceArgs{Path: "a", Pointer: intp(5)}, true},
		// Ambiguous values: errors, never guesses.
		{"decimal string for integer", `{"path":"a","count":"1.5"}`, coerceArgs{}, false},
		{"integral decimal string for integer", `{"path":"a","count":"1.0"}`, coerceArgs{}, false},
		{"exponent string for integer", `{"path":"a","count":"1e3"}`, coerceArgs{}, false},
		{"padded integer", `{"path":"a","count":" 119"}`, coerceArgs{}, false},
		{"plus sign", `{"path":"a","count":"+5"}`, coerceArgs{}, false},
		{"leading zero", `{"path":"a","count":"007"}`, coerceArgs{}, false},
		{"hex", `{"path":"a","count":"0x1F"}`, coerceArgs{}, false},
		{"empty string for integer", `{"path":"a","count":""}`, coerceArgs{}, false},
		{"word for integer", `{"path":"a","count":"five"}`, coerceArgs{}, false},
		{"NaN for number", `{"path":"a","ratio":"NaN"}`, coerceArgs{}, false},
		{"Infinity for number", `{"path":"a","ratio":"Infinity"}`, coerceArgs{}, false},
		{"capitalised boolean", `{"path":"a","flag":"True"}`, coerceArgs{}, false},
		{"yes for boolean", `{"path":"a","flag":"yes"}`, coerceArgs{}, false},
		{"1 for boolean", `{"path":"a","flag":"1"}`, coerceArgs{}, false},
		{"number 1 for boolean", `{"path":"a","flag":1}`, coerceArgs{}, false},
		{"thing for boolean", `{"path":"a","flag":"thing"}`, coerceArgs{}, false},
		{"number for string", `{"path":5}`, coerceArgs{}, false},
		{"broken JSON array string", `{"path":"a","tags":"[\"x\""}`, coerceArgs{}, false},
		{"object string where array wanted", `{"path":"a","tags":"{\"x\":1}"}`, coerceArgs{}, false},
		{"bare scalar where array wanted", `{"path":"a","tags":"x"}`, coerceArgs{}, false},
		{"null required", `{"path":null}`, coerceArgs{}, false},
		{"string null for integer", `{"path":"a","count":"null"}`, coerceArgs{}, false},
		{"overflowing integer", `{"path":"a","count":"99999999999999999999999"}`, coerceArgs{}, false},
		{"coerced but out of range", `{"path":"a","limit":"500"}`, coerceArgs{}, false},
		{"enum mismatch", `{"path":"a","mode":"medium"}`, coerceArgs{}, false},
		{"unknown property", `{"path":"a","file_path":"b"}`, coerceArgs{}, false},
		{"array of arguments", `[{"path":"a"}]`, coerceArgs{}, false},
		{"trailing garbage", `{"path":"a"} x`, coerceArgs{}, false},
	}
	if len(cases) < 20 {
		t.Fatalf("coercion table has %d rows, want at least 20", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := coerceSpec.Decode(json.RawMessage(c.raw), nil)
			if !c.ok {
				if err == nil {
					t.Fatalf("Decode(%s) = %+v, want an error", c.raw, *got.(*coerceArgs))
				}
				var ae *ArgumentError
				if !errors.As(err, &ae) {
					t.Fatalf("error %T is not *ArgumentError", err)
				}
				if string(ae.Received) != c.raw {
					t.Errorf("error echoes %q, want the received arguments %q", ae.Received, c.raw)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%s): %v", c.raw, err)
			}
			if !reflect.DeepEqual(*got.(*coerceArgs), c.want) {
				t.Errorf("Decode(%s) = %+v, want %+v", c.raw, *got.(*coerceArgs), c.want)
			}
		})
	}
}

func TestValidationReportsEveryProblemWithPointers(t *testing.T) {
	raw := `{"count":"abc","limit":0,"mode":"x","opts":{"depth":"deep"},"bogus":1}`
	_, err := coerceSpec.Decode(json.RawMessage(raw), nil)
	var ae *ArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want *ArgumentError", err)
	}
	wantPrefixes := []string{"/bogus: unknown property", "/count: ", "/limit: ", "/mode: ", "/opts/depth: ", "/path: required property is missing"}
	if len(ae.Problems) != len(wantPrefixes) {
		t.Fatalf("problems = %q, want %d entries", ae.Problems, len(wantPrefixes))
	}
	for i, p := range wantPrefixes {
		if !strings.HasPrefix(ae.Problems[i], p) {
			t.Errorf("problem %d = %q, want prefix %q", i, ae.Problems[i], p)
		}
	}
	if msg := err.Error(); !strings.Contains(msg, "received: "+raw) {
		t.Errorf("message does not echo the arguments:\n%s", msg)
	}
}

func TestCompatRunsBeforeValidation(t *testing.T) {
	compat := func(m map[string]any) map[string]any {
		if v, ok := m["file_path"]; ok {
			delete(m, "file_path")
			m["path"] = v
		}
		return m
	}
	got, err := coerceSpec.Decode(json.RawMessage(`{"file_path":"x","count":"2"}`), compat)
	if err != nil {
		t.Fatal(err)
	}
	if want := (coerceArgs{Path: "x", Count: 2}); !reflect.DeepEqual(*got.(*coerceArgs), want) {
		t.Errorf("got %+v, want %+v", *got.(*coerceArgs), want)
	}
}

func TestSchemaIsDerivedFromTheStruct(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(coerceSpec.Schema(), &s); err != nil {
		t.Fatal(err)
	}
	if s["type"] != "object" || s["additionalProperties"] != false {
		t.Errorf("schema = %s", coerceSpec.Schema())
	}
	props := s["properties"].(map[string]any)
	path := props["path"].(map[string]any)
	if path["description"] != "File path, relative to the workspace." {
		t.Errorf("path description = %v", path["description"])
	}
	if req := s["required"].([]any); len(req) != 1 || req[0] != "path" {
		t.Errorf("required = %v, want [path]", req)
	}
	limit := props["limit"].(map[string]any)
	if limit["minimum"] != 1.0 || limit["maximum"] != 100.0 {
		t.Errorf("limit constraints lost: %v", limit)
	}
	if _, ok := s["$schema"]; ok {
		t.Errorf("schema keeps $schema; the model does not need it")
	}
}

func TestHandWrittenSchema(t *testing.T) {
	type args struct {
		N int `json:"n"`
	}
	spec := SpecFromSchema[args](`{"type":"object","properties":{"n":{"type":"integer","minimum":2}},"required":["n"],"additionalProperties":false}`)
	if _, err := spec.Decode(json.RawMessage(`{"n":1}`), nil); err == nil {
		t.Error("minimum not enforced")
	}
	got, err := spec.Decode(json.RawMessage(`{"n":"3"}`), nil)
	if err != nil || got.(*args).N != 3 {
		t.Errorf("got %v, %v", got, err)
	}
}

func TestRegistryOrderAndStableDefinitions(t *testing.T) {
	r, err := NewRegistry(regTool{"zeta"}, regTool{"alpha"}, regTool{"mid"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); !reflect.DeepEqual(got, []string{"zeta", "alpha", "mid"}) {
		t.Errorf("names = %v, want registration order", got)
	}
	a, _ := json.Marshal(r.Definitions())
	b, _ := json.Marshal(r.Definitions())
	if string(a) != string(b) {
		t.Error("definitions differ between calls")
	}
	if _, err := NewRegistry(regTool{"x"}, regTool{"x"}); err == nil {
		t.Error("duplicate names accepted")
	}
	if _, ok := r.Lookup("alpha"); !ok {
		t.Error("lookup failed")
	}
	if _, ok := r.Lookup("Alpha"); ok {
		t.Error("lookup is not exact")
	}
}

// One Spec serves every session and concurrent calls: validation shares the resolved schema
// (run with -race).
func TestDecodeConcurrently(t *testing.T) {
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var err error
			for range 50 {
				if _, err = coerceSpec.Decode(json.RawMessage(`{"path":"a","count":"7","opts":{"depth":1}}`), nil); err != nil {
					break
				}
				if _, e := coerceSpec.Decode(json.RawMessage(`{"count":"x"}`), nil); e == nil {
					err = errors.New("invalid arguments passed")
					break
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
