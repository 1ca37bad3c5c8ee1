package builtin_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
)

func TestNewGivesTheSevenToolsInFixedOrderWithStableSchemas(t *testing.T) {
	f := newFixture(t)
	want := []string{"read", "glob", "grep", "ls", "edit", "write", "bash"}
	if got := f.reg.Names(); !slices.Equal(got, want) {
		t.Fatalf("tool order %v, want %v", got, want)
	}
	again, err := builtin.New(builtin.Config{FS: f.fs, Bash: builtin.BashConfig{Runner: unsandboxed(t)}})
	if err != nil {
		t.Fatal(err)
	}
	reg2, err := tools.NewRegistry(again...)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range f.reg.Definitions() {
		d2 := reg2.Definitions()[i]
		if d.Name != d2.Name || d.Description != d2.Description || !bytes.Equal(d.Parameters, d2.Parameters) {
			t.Errorf("definition of %s differs between two constructions", d.Name)
		}
		if strings.TrimSpace(d.Description) == "" {
			t.Errorf("%s has no description", d.Name)
		}
		if !bytes.Contains(d.Parameters, []byte(`"additionalProperties":false`)) {
			t.Errorf("%s schema accepts unknown properties: %s", d.Name, d.Parameters)
		}
	}
}

// Definitions, which need no session, are the definitions a session's registry offers.
func TestDefinitionsAreTheSessionsOwn(t *testing.T) {
	f := newFixture(t)
	defs := builtin.Definitions()
	for i, d := range f.reg.Definitions() {
		if i >= len(defs) || defs[i].Name != d.Name || defs[i].Description != d.Description || !bytes.Equal(defs[i].Parameters, d.Parameters) {
			t.Fatalf("definition %d differs from the session's %s", i, d.Name)
		}
	}
	if len(defs) != len(f.reg.Definitions()) {
		t.Fatalf("%d definitions, the session has %d", len(defs), len(f.reg.Definitions()))
	}
}

func TestNewRefusesAMissingFSOrSandbox(t *testing.T) {
	if _, err := builtin.New(builtin.Config{}); err == nil {
		t.Error("New without FS succeeded")
	}
	f := newFixture(t)
	if _, err := builtin.New(builtin.Config{FS: f.fs}); err == nil {
		t.Error("New without a sandbox or runner succeeded: bash would run unsandboxed")
	}
}

func TestCapabilities(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"read", "glob", "grep", "ls"} {
		tl := f.tool(name)
		if ro, ok := tl.(tools.ReadOnlyTool); !ok || !ro.ReadOnly(nil) {
			t.Errorf("%s is not read-only", name)
		}
		if cs, ok := tl.(tools.ConcurrencySafeTool); !ok || !cs.ConcurrencySafe(nil) {
			t.Errorf("%s is not concurrency-safe", name)
		}
	}
	for _, name := range []string{"edit", "write", "bash"} {
		tl := f.tool(name)
		if ro, ok := tl.(tools.ReadOnlyTool); ok && ro.ReadOnly(nil) {
			t.Errorf("%s claims to be read-only", name)
		}
		if cs, ok := tl.(tools.ConcurrencySafeTool); ok && cs.ConcurrencySafe(nil) {
			t.Errorf("%s claims to be concurrency-safe", name)
		}
		if _, ok := tl.(tools.Validator); !ok {
			t.Errorf("%s has no Validator", name)
		}
		if _, ok := tl.(tools.Previewer); !ok {
			t.Errorf("%s has no Previewer", name)
		}
	}
	if _, ok := f.tool("read").(tools.ContentTool); !ok {
		t.Error("read is not a ContentTool")
	}
	bash := f.tool("bash")
	if i, ok := bash.(tools.Interruptible); !ok || i.InterruptBehavior(nil) != tools.InterruptCancel {
		t.Error("bash is not cancelled on interrupt")
	}
	for name, want := range map[string]tools.Access{"read": tools.AccessRead, "glob": tools.AccessRead, "grep": tools.AccessRead,
		"ls": tools.AccessRead, "edit": tools.AccessWrite, "write": tools.AccessWrite, "bash": tools.AccessExec} {
		pm, ok := f.tool(name).(tools.PermissionMetadata)
		if !ok {
			t.Errorf("%s has no PermissionMetadata", name)
			continue
		}
		args, err := f.tool(name).Spec().Decode([]byte(minimalArgs[name]), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := pm.Permission(&tools.Call{Args: args}).Access; got != want {
			t.Errorf("%s access %s, want %s", name, got, want)
		}
	}
}

var minimalArgs = map[string]string{
	"read": `{"path":"a.txt"}`, "glob": `{"pattern":"*"}`, "grep": `{"pattern":"x"}`, "ls": `{}`,
	"edit": `{"path":"a.txt","old_string":"a","new_string":"b"}`, "write": `{"path":"a.txt","content":""}`,
	"bash": `{"command":"true"}`,
}

func TestLabelsAndActivity(t *testing.T) {
	f := newFixture(t)
	dec := func(name, raw string) any {
		a, err := f.tool(name).Spec().Decode([]byte(raw), nil)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	bash := f.tool("bash")
	if got := bash.(tools.Labeler).Label(dec("bash", `{"command":"go test ./...\necho done","description":"Run the tests"}`)); got != "Run the tests" {
		t.Errorf("bash label %q", got)
	}
	if got := bash.(tools.Labeler).Label(dec("bash", `{"command":"go test ./...\necho done"}`)); got != "go test ./..." {
		t.Errorf("bash label without description %q", got)
	}
	if got := bash.(tools.ActivityDescriber).Activity(dec("bash", `{"command":"go test ./..."}`)); got != "running go test ./..." {
		t.Errorf("bash activity %q", got)
	}
	if got := f.tool("edit").(tools.Labeler).Label(dec("edit", minimalArgs["edit"])); got != "Edit a.txt" {
		t.Errorf("edit label %q", got)
	}
}
