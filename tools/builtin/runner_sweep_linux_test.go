//go:build linux

package builtin_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/sandbox"
)

// TestNewSandboxRunnerSweepsLeftoverPlaceholders: a session's runner removes at once the empty
// read-only .vscode an agentd killed during a command left in the workspace.
func TestNewSandboxRunnerSweepsLeftoverPlaceholders(t *testing.T) {
	dir := t.TempDir()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, ".vscode")
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("%s:%d:1", strings.TrimSpace(string(boot)), c.Process.Pid) // an ended process
	if err := unix.Lsetxattr(p, "user.agentd.placeholder", []byte(tag), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o555); err != nil {
		t.Fatal(err)
	}
	ws, err := fsafe.NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	builtin.NewSandboxRunner(&sandbox.Sandbox{}, sandbox.Policy{}, ws)
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("the leftover placeholder is still there: %v", err)
	}
}
