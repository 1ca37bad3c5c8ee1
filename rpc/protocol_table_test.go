package rpc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// constants parses the package's files (not its tests) and returns their constants by name with
// their literal values.
func constants(t *testing.T) map[string]any {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var decls []ast.Decl
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, f.Decls...)
	}
	out := map[string]any{}
	for _, d := range decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					continue
				}
				switch lit.Kind {
				case token.STRING:
					v, _ := strconv.Unquote(lit.Value)
					out[n.Name] = v
				case token.INT:
					v, _ := strconv.Atoi(lit.Value)
					out[n.Name] = v
				}
			}
		}
	}
	return out
}

// TestEveryMethodConstantIsInTheTable: a Method* constant missing from Methods would be a method
// no table knows (no handler check, no editor check).
func TestEveryMethodConstantIsInTheTable(t *testing.T) {
	consts := constants(t)
	inTable := map[string]int{}
	for _, m := range Methods {
		inTable[m.Name]++
	}
	n := 0
	for name, v := range consts {
		if !strings.HasPrefix(name, "Method") {
			continue
		}
		n++
		if inTable[v.(string)] == 0 {
			t.Errorf("%s = %q is not in rpc.Methods", name, v)
		}
	}
	if n < 30 {
		t.Fatalf("parsed only %d Method constants", n)
	}
	for name, k := range inTable {
		if k > 1 {
			t.Errorf("%s is in rpc.Methods %d times", name, k)
		}
	}
}

// TestMethodEntriesAreWellFormed: a notification has no result; agentd's requests have typed
// params and results; agentd's types live in rpc.
func TestMethodEntriesAreWellFormed(t *testing.T) {
	for _, m := range Methods {
		switch {
		case m.Kind != Request && m.Kind != Notification:
			t.Errorf("%s: kind %q", m.Name, m.Kind)
		case m.Direction != ClientToServer && m.Direction != ServerToClient:
			t.Errorf("%s: direction %q", m.Name, m.Direction)
		case m.Kind == Notification && m.Result != nil:
			t.Errorf("%s: a notification with a result type", m.Name)
		case !m.LSP && (m.Params == nil || m.Params.PkgPath() != rpcPkg):
			t.Errorf("%s: agentd's method without rpc params", m.Name)
		case !m.LSP && m.Kind == Request && (m.Result == nil || m.Result.PkgPath() != rpcPkg):
			t.Errorf("%s: agentd's request without an rpc result", m.Name)
		case !m.LSP && !strings.Contains(m.Name, "/"):
			t.Errorf("%s: agentd's methods are <resource>/<verb>", m.Name)
		}
	}
}

// enumPrefix maps each enum of Enums to the prefix of its constants in the package.
var enumPrefix = map[string]string{
	"UpdateType": "Update", "Reason": "Reason", "Status": "Status", "History": "History", "Review": "Review",
	"Outcome": "Outcome", "By": "By", "Decision": "Decision", "Scope": "Scope", "Mode": "Mode",
	"Result": "Result", "Progress": "Progress", "Message": "Message", "Severity": "Severity", "Context": "Context",
	"Proposal": "Proposal", "HunkState": "Hunk",
}

// TestEnumsListEveryConstant: each enum lists exactly the constants of its group, under their
// names without the prefix, so a new status string cannot be left out of protocol.json.
func TestEnumsListEveryConstant(t *testing.T) {
	consts := constants(t)
	if len(Enums) != len(enumPrefix) {
		t.Errorf("%d enums, %d prefixes: add the new enum's constant prefix to enumPrefix", len(Enums), len(enumPrefix))
	}
	for _, e := range Enums {
		prefix, ok := enumPrefix[e.Name]
		if !ok {
			t.Errorf("enum %s has no prefix in enumPrefix", e.Name)
			continue
		}
		want := map[string]any{}
		for name, v := range consts {
			if strings.HasPrefix(name, prefix) && len(name) > len(prefix) && name[len(prefix)] >= 'A' && name[len(prefix)] <= 'Z' {
				want[name[len(prefix):]] = v
			}
		}
		got := map[string]any{}
		for _, v := range e.Values {
			if _, dup := got[v.Name]; dup {
				t.Errorf("enum %s lists %s twice", e.Name, v.Name)
			}
			got[v.Name] = v.Value
		}
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("enum %s = %v\nconstants %s* = %v", e.Name, got, prefix, want)
		}
	}
}
