//go:build linux

package builtin_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/sandbox"
)

// TestNewSandboxRunnerDiscardsDeadLayers: the layer of a command that was running when agentd
// was killed is discarded when the next session's runner starts: never applied, never adopted.
func TestNewSandboxRunnerDiscardsDeadLayers(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	dead := filepath.Join(state, "layers", "4242-1")
	if err := os.MkdirAll(filepath.Join(dead, "0", "upper", ".git", "hooks"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, "0", "upper", ".git", "hooks", "pre-commit"), []byte("evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, "owner"), []byte("4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws, err := fsafe.NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	builtin.NewSandboxRunner(&sandbox.Sandbox{}, sandbox.Policy{StateDir: state}, ws)
	if _, err := os.Lstat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead command's layer is still there: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git")); !os.IsNotExist(err) {
		t.Errorf("the dead command's change reached the workspace: %v", err)
	}
}
