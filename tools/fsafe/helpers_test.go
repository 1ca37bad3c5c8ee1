package fsafe

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/tools"
)

// secret is the content of the sentinel file outside the workspace. No test may ever see it in
// anything read through fsafe (except through a hard link, which is flagged instead).
const secret = "TOP-SECRET-OUTSIDE-CONTENT"

// env is a workspace beside places it must never reach:
//
//	base/ws/            the workspace: a.txt, sub/b.txt
//	base/outside/       secret.txt (the sentinel), deep/
//	base/ws-evil/       a sibling sharing the workspace's name as a prefix: x.txt
type env struct {
	base, ws, outside, evil string
	w                       *Workspace
	fs                      *FS
}

func newEnv(t *testing.T, opt Options) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside"), evil: filepath.Join(base, "ws-evil")}
	mustWrite(t, filepath.Join(e.ws, "a.txt"), "inside a\n")
	mustWrite(t, filepath.Join(e.ws, "sub", "b.txt"), "inside b\n")
	mustWrite(t, filepath.Join(e.outside, "secret.txt"), secret)
	mustMkdir(t, filepath.Join(e.outside, "deep"))
	mustWrite(t, filepath.Join(e.evil, "x.txt"), "evil sibling")
	w, err := NewWorkspace(e.ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	e.w = w
	e.fs = New(w, opt)
	return e
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// errType is the result type of err ("" for nil, "go-error" for an untyped error).
func errType(err error) tools.ResultType {
	if err == nil {
		return ""
	}
	var te *tools.Error
	if errors.As(err, &te) {
		return te.Type
	}
	return "go-error"
}

func containsSecret(b []byte) bool { return strings.Contains(string(b), secret) }
