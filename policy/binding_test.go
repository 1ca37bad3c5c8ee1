package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/preview"
	"github.com/agentd/agentd/tools"
)

func execBindReq(argv []string, cwd string, sandbox string, network bool) Request {
	return Request{Tool: "bash", Permission: tools.Permission{Access: tools.AccessExec}, Command: strings.Join(argv[2:], " "),
		Preview: &tools.Preview{Command: &tools.CommandPreview{Argv: argv, Cwd: cwd, Sandbox: sandbox, Network: network, TimeoutMS: 1000}}}
}

func TestBindExec(t *testing.T) {
	base := execBindReq([]string{"bash", "-c", "go test ./..."}, "/ws", "bubblewrap+landlock+seccomp", false)
	b := Bind(base)
	if !strings.HasPrefix(b, "exec:") || Bind(base) != b {
		t.Fatalf("binding %q is not stable", b)
	}
	if err := CheckBinding(b, Bind(base)); err != nil {
		t.Errorf("same action: %v", err)
	}
	variants := map[string]Request{
		"argv":    execBindReq([]string{"bash", "-c", "go test ./... ; rm -rf x"}, "/ws", "bubblewrap+landlock+seccomp", false),
		"cwd":     execBindReq([]string{"bash", "-c", "go test ./..."}, "/other", "bubblewrap+landlock+seccomp", false),
		"sandbox": execBindReq([]string{"bash", "-c", "go test ./..."}, "/ws", "none", false),
		"network": execBindReq([]string{"bash", "-c", "go test ./..."}, "/ws", "bubblewrap+landlock+seccomp", true),
	}
	for name, r := range variants {
		if err := CheckBinding(b, Bind(r)); !errors.Is(err, ErrBindingMismatch) {
			t.Errorf("%s changed but CheckBinding = %v", name, err)
		}
	}
	unsandboxed := base
	unsandboxed.Unsandboxed = true
	if Bind(unsandboxed) == b {
		t.Error("the unsandboxed flag is not bound")
	}
	timeout := execBindReq([]string{"bash", "-c", "go test ./..."}, "/ws", "bubblewrap+landlock+seccomp", false)
	timeout.Preview.Command.TimeoutMS = 5
	if Bind(timeout) != b {
		t.Error("the timeout should not be part of the binding")
	}
}

func TestBindFile(t *testing.T) {
	dir := t.TempDir()
	a, other := filepath.Join(dir, "a"), filepath.Join(dir, "other")
	for _, d := range []string{a, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	req := func(path, old, new string) Request {
		return Request{Tool: "edit", Permission: tools.Permission{Access: tools.AccessWrite, Paths: []string{path}},
			Preview: &tools.Preview{Diff: &preview.Diff{Path: "x.go", Old: old, New: new}}}
	}
	approved := Bind(req(filepath.Join(link, "x.go"), "old\n", "new\n"))
	if !strings.HasPrefix(approved, "file:") {
		t.Fatalf("binding %q", approved)
	}
	// The same file through its canonical path binds the same.
	if err := CheckBinding(approved, Bind(req(filepath.Join(a, "x.go"), "old\n", "new\n"))); err != nil {
		t.Errorf("canonical path: %v", err)
	}
	if err := CheckBinding(approved, Bind(req(filepath.Join(link, "x.go"), "old\n", "newer\n"))); !errors.Is(err, ErrBindingMismatch) {
		t.Errorf("content changed: %v", err)
	}
	if err := CheckBinding(approved, Bind(req(filepath.Join(link, "x.go"), "changed\n", "new\n"))); !errors.Is(err, ErrBindingMismatch) {
		t.Errorf("old content changed: %v", err)
	}
	// The symlink is swapped to point elsewhere while the user decides: the binding changes.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckBinding(approved, Bind(req(filepath.Join(link, "x.go"), "old\n", "new\n"))); !errors.Is(err, ErrBindingMismatch) {
		t.Errorf("symlink swapped: %v", err)
	}
}

func TestBindUsesPreviewBinding(t *testing.T) {
	r := Request{Tool: "edit", Preview: &tools.Preview{Binding: "tool-binding-1"}}
	if Bind(r) != "tool-binding-1" {
		t.Error("the preview's binding is not used")
	}
	if err := CheckBinding("", ""); !errors.Is(err, ErrNoBinding) {
		t.Errorf("empty bindings: %v", err)
	}
	if err := CheckBinding("a", ""); !errors.Is(err, ErrNoBinding) {
		t.Errorf("empty current binding: %v", err)
	}
}
