package rpc

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// rpc/protocol.json is the protocol table (Methods, Enums) and the JSON shape of every wire type,
// derived from the Go types by reflection, for the editors' tests (editors/vscode/test/
// protocol.test.ts, editors/nvim/tests/unit/test_protocol.lua). Regenerate it with
//
//	go test ./rpc -run TestProtocolJSONIsFresh -update
var update = flag.Bool("update", false, "rewrite rpc/protocol.json")

const protocolJSONPath = "protocol.json"

type jsonMethod struct {
	Name      string    `json:"name"`
	Direction Direction `json:"direction"`
	Kind      Kind      `json:"kind"`
	Params    string    `json:"params"` // type name; "" when there are none
	Result    string    `json:"result"` // type name; "" for a notification or a null result
	LSP       bool      `json:"lsp"`
}

type jsonEnum struct {
	Name   string      `json:"name"`
	Fields []string    `json:"fields"`
	Values []EnumValue `json:"values"`
}

type jsonField struct {
	Name string `json:"name"`
	// Type is "string", "number", "boolean", "any" (raw JSON), the name of another type of the
	// file, or one of these followed by "[]" (an array).
	Type string `json:"type"`
	// Optional: the field is omitted when empty (omitzero / omitempty).
	Optional bool `json:"optional"`
	// Enum names the enum of Enums the field's values come from.
	Enum string `json:"enum,omitempty"`
}

type jsonType struct {
	Name    string      `json:"name"`
	Package string      `json:"package"` // "rpc", or the LSP package of an LSP type agentd reuses
	Fields  []jsonField `json:"fields"`
}

type protocolJSON struct {
	Comment         string       `json:"comment"`
	ProtocolVersion int          `json:"protocolVersion"`
	Methods         []jsonMethod `json:"methods"`
	// Embedded are agentd types carried inside LSP messages (initialize).
	Embedded []string   `json:"embedded"`
	Enums    []jsonEnum `json:"enums"`
	// Types are the structs reachable from agentd's methods, the embedded types and agentd's
	// types of LSP methods; LSP's own params (initialize, document sync) are named, not expanded.
	Types []jsonType `json:"types"`
}

// generateProtocolJSON renders protocol.json from Methods, EmbeddedTypes and Enums.
func generateProtocolJSON() ([]byte, error) {
	out := protocolJSON{
		Comment:         "Generated from the rpc package (rpc/protocol.go, session.go, update.go, review.go, workspace.go) by `go test ./rpc -run TestProtocolJSONIsFresh -update`. Do not edit.",
		ProtocolVersion: ProtocolVersion,
		Methods:         []jsonMethod{},
		Embedded:        []string{},
		Enums:           []jsonEnum{},
		Types:           []jsonType{},
	}
	enumOf := map[string]string{}
	for _, e := range Enums {
		out.Enums = append(out.Enums, jsonEnum(e))
		for _, f := range e.Fields {
			if enumOf[f] != "" {
				return nil, fmt.Errorf("field %s is in two enums", f)
			}
			enumOf[f] = e.Name
		}
	}
	g := &typeGen{seen: map[string]reflect.Type{}, enumOf: enumOf, usedEnum: map[string]bool{}}
	name := func(t reflect.Type, expand bool) (string, error) {
		if t == nil {
			return "", nil
		}
		if !expand {
			return t.Name(), nil
		}
		return g.typeName(t)
	}
	for _, m := range Methods {
		// LSP's own params (from go.lsp.dev/protocol) are named, not expanded: they are LSP's.
		expand := func(t reflect.Type) bool { return t != nil && t.PkgPath() == rpcPkg }
		p, err := name(m.Params, expand(m.Params))
		if err != nil {
			return nil, fmt.Errorf("%s params: %w", m.Name, err)
		}
		r, err := name(m.Result, expand(m.Result))
		if err != nil {
			return nil, fmt.Errorf("%s result: %w", m.Name, err)
		}
		out.Methods = append(out.Methods, jsonMethod{Name: m.Name, Direction: m.Direction, Kind: m.Kind, Params: p, Result: r, LSP: m.LSP})
	}
	for _, t := range EmbeddedTypes {
		n, err := g.typeName(t)
		if err != nil {
			return nil, err
		}
		out.Embedded = append(out.Embedded, n)
	}
	for f := range enumOf {
		if !g.usedEnum[f] {
			return nil, fmt.Errorf("enum field %s is not a field of a wire type", f)
		}
	}
	out.Types = g.types
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

var rpcPkg = reflect.TypeFor[MethodInfo]().PkgPath()

type typeGen struct {
	seen     map[string]reflect.Type
	types    []jsonType
	enumOf   map[string]string
	usedEnum map[string]bool
}

// typeName returns the JSON type of t, adding the structs it reaches to g.types.
func (g *typeGen) typeName(t reflect.Type) (string, error) {
	if t == reflect.TypeFor[json.RawMessage]() {
		return "any", nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.typeName(t.Elem())
	case reflect.String:
		return "string", nil
	case reflect.Bool:
		return "boolean", nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number", nil
	case reflect.Interface:
		return "any", nil
	case reflect.Slice, reflect.Array:
		e, err := g.typeName(t.Elem())
		return e + "[]", err
	case reflect.Struct:
		return t.Name(), g.addStruct(t)
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			e, err := g.typeName(t.Elem())
			return "Record<string, " + e + ">", err
		}
	}
	return "", fmt.Errorf("type %s (%s) has no JSON mapping here", t, t.Kind())
}

func (g *typeGen) addStruct(t reflect.Type) error {
	if t.Name() == "" {
		return fmt.Errorf("anonymous struct %s on the wire: name it", t)
	}
	if prev, ok := g.seen[t.Name()]; ok {
		if prev != t {
			return fmt.Errorf("two wire types named %s: %s and %s", t.Name(), prev, t)
		}
		return nil
	}
	g.seen[t.Name()] = t
	pkg := "rpc"
	if t.PkgPath() != rpcPkg {
		pkg = t.PkgPath()
	}
	jt := jsonType{Name: t.Name(), Package: pkg, Fields: []jsonField{}}
	i := len(g.types)
	g.types = append(g.types, jt) // reserve the place: types in the order they are reached
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		if f.Anonymous {
			return fmt.Errorf("%s embeds %s: flatten it", t.Name(), f.Type)
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		typ, err := g.typeName(f.Type)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
		optional := slices.Contains(strings.Split(opts, ","), "omitzero") || slices.Contains(strings.Split(opts, ","), "omitempty")
		key := t.Name() + "." + name
		if g.enumOf[key] != "" {
			g.usedEnum[key] = true
		}
		jt.Fields = append(jt.Fields, jsonField{Name: name, Type: typ, Optional: optional, Enum: g.enumOf[key]})
	}
	g.types[i] = jt
	return nil
}

// TestProtocolJSONIsFresh regenerates protocol.json and compares it with the checked-in file.
func TestProtocolJSONIsFresh(t *testing.T) {
	want, err := generateProtocolJSON()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(protocolJSONPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(protocolJSONPath)
	if err != nil {
		t.Fatalf("%v (generate it: go test ./rpc -run TestProtocolJSONIsFresh -update)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		line := 0
		for line < len(gl) && line < len(wl) && gl[line] == wl[line] {
			line++
		}
		at := func(l []string) string {
			if line < len(l) {
				return l[line]
			}
			return "(end of file)"
		}
		t.Fatalf("rpc/protocol.json is stale (first difference at line %d: file %q, generated %q); "+
			"regenerate it: go test ./rpc -run TestProtocolJSONIsFresh -update", line+1, at(gl), at(wl))
	}
}

// TestProtocolJSONDescribesTheTypes spot-checks the generated shapes against hand-written
// expectations, so a generator that drops fields or optionality cannot pass.
func TestProtocolJSONDescribesTheTypes(t *testing.T) {
	b, err := generateProtocolJSON()
	if err != nil {
		t.Fatal(err)
	}
	var p protocolJSON
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	types := map[string]jsonType{}
	for _, ty := range p.Types {
		types[ty.Name] = ty
	}
	field := func(typ, name string) jsonField {
		t.Helper()
		for _, f := range types[typ].Fields {
			if f.Name == name {
				return f
			}
		}
		t.Fatalf("%s has no field %s in protocol.json", typ, name)
		return jsonField{}
	}
	for _, c := range []struct {
		typ, field string
		want       jsonField
	}{
		{"SessionPromptParams", "context", jsonField{Name: "context", Type: "ContextItem[]", Optional: true}},
		{"ContextItem", "range", jsonField{Name: "range", Type: "Range", Optional: true}},
		{"Position", "line", jsonField{Name: "line", Type: "number"}},
		{"ToolCallInfo", "arguments", jsonField{Name: "arguments", Type: "any", Optional: true}},
		{"ToolCallInfo", "status", jsonField{Name: "status", Type: "string", Enum: "Status"}},
		{"Update", "reason", jsonField{Name: "reason", Type: "string", Optional: true, Enum: "Reason"}},
		{"FileReview", "hunks", jsonField{Name: "hunks", Type: "Hunk[]"}},
		{"FileEdit", "edits", jsonField{Name: "edits", Type: "TextEdit[]"}},
		{"SessionInfo", "instructions", jsonField{Name: "instructions", Type: "InstructionsInfo", Optional: true}},
		{"ProgressParams", "value", jsonField{Name: "value", Type: "WorkDoneProgress"}},
		{"ShowMessageParams", "type", jsonField{Name: "type", Type: "number", Enum: "Message"}},
	} {
		if got := field(c.typ, c.field); got != c.want {
			t.Errorf("%s.%s = %+v, want %+v", c.typ, c.field, got, c.want)
		}
	}
	if n := len(types["SessionDetachResult"].Fields); n != 0 || types["SessionDetachResult"].Name == "" {
		t.Errorf("SessionDetachResult: %d fields, present %v", n, types["SessionDetachResult"].Name != "")
	}
	if _, ok := types["InitializeParams"]; ok {
		t.Error("LSP's InitializeParams is expanded: only agentd's types belong in protocol.json")
	}
	var sawNew, sawProgress bool
	for _, m := range p.Methods {
		switch m.Name {
		case MethodSessionNew:
			sawNew = m == jsonMethod{Name: "session/new", Direction: ClientToServer, Kind: Request,
				Params: "SessionNewParams", Result: "SessionNewResult"}
		case MethodProgress:
			sawProgress = m == jsonMethod{Name: "$/progress", Direction: ServerToClient, Kind: Notification,
				Params: "ProgressParams", LSP: true}
		}
	}
	if !sawNew || !sawProgress {
		t.Errorf("methods: session/new as expected %v, $/progress as expected %v", sawNew, sawProgress)
	}
}
