//go:build unix

package policy

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWorkspaceConfigFIFORefused(t *testing.T) {
	f := newConfigFixture(t, "", "")
	if err := os.MkdirAll(filepath.Join(f.ws, ".agentd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(f.ws, ".agentd", "config"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	f.trust(t)
	if _, err := Load(f.loc, f.ws); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("err = %v", err)
	}
}
