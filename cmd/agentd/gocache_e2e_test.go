package main

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
)

// goModule writes a module importing golang.org/x/term (at agentd's version, in the module
// cache) into ws/mod.
func goModule(t *testing.T, ws string) {
	t.Helper()
	ws = filepath.Join(ws, "mod")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile("../../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	req := ""
	for _, mod := range []string{"golang.org/x/term", "golang.org/x/sys"} {
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod) + ` (v\S+)`).FindSubmatch(gomod)
		if m == nil {
			t.Fatalf("agentd's go.mod does not require %s", mod)
		}
		req += "\t" + mod + " " + string(m[1]) + "\n"
	}
	files := map[string]string{
		"go.mod": "module example.com/poison\n\ngo 1.24\n\nrequire (\n" + req + ")\n",
		"go.sum": string(gosum),
		"p.go":   "package p\n\nimport \"golang.org/x/term\"\n\n// Tty says whether stdin is a terminal.\nfunc Tty() bool { return term.IsTerminal(0) }\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// hashTree maps every regular file under dir to its content's hash.
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil {
				m[p] = fmt.Sprintf("%x", sha256.Sum256(b))
			}
		}
		return nil
	})
	return m
}

// Issue 23: a command in workspace A rewrote, in place and at the same size, outputs of agentd's
// shared Go build cache, and workspace B's next build used A's bytes. Each workspace now has its
// own writable layer: A's command rewrites its own layer only, and cannot write B's.
func TestGoBuildCacheCannotBePoisonedAcrossWorkspaces(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command: %v", err)
	}
	a, b := newRunEnv(t), newRunEnv(t)
	cache := t.TempDir() // agentd's cache of both, as for one user: XDG_CACHE_HOME
	agentdCache := filepath.Join(cache, "agentd")
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	env := func(e *runEnv) []string {
		var out []string
		for _, kv := range e.env() {
			if !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
				out = append(out, kv)
			}
		}
		// The module cache where .ci/run downloaded agentd's dependencies (HOME is the test's).
		return append(out, "XDG_CACHE_HOME="+cache, "GOMODCACHE="+strings.TrimSpace(string(modcache)))
	}
	goModule(t, a.ws)
	goModule(t, b.ws)
	// -N for x/term only: an action the user's cache has never built, so it is served from
	// agentd's layer (the user's layer comes first), and cheap to compile.
	const build = "cd mod && go build -gcflags=golang.org/x/term=-N ./..."
	run := func(e *runEnv, command string) string {
		t.Helper()
		e.ollama.Enqueue(
			ollamatest.Calls(ollamatest.Call("bash", fmt.Sprintf(`{"command":%q,"description":"build"}`, command))),
			ollamatest.Text("Done."),
		)
		cmd := exec.Command(agentdBin, "run", "--approval", "yolo", "build it")
		cmd.Dir, cmd.Env = e.ws, env(e)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("agentd run: %v\n%s", err, out)
		}
		return e.lastToolResult()
	}
	if r := run(b, build+" && echo built-ok"); !strings.Contains(r, "built-ok") {
		t.Fatalf("workspace B's first build:\n%s", r)
	}
	before := hashTree(t, agentdCache)
	// A builds the same thing, then overwrites with zeros, in place, every output in agentd's
	// cache it can: its own layer's, and (it tries) every other workspace's.
	attack := build + ` && find ` + agentdCache + ` -name '*-d' -type f | while read f; do ` +
		`dd if=/dev/zero of="$f" bs=1 count=$(stat -c %s "$f") conv=notrunc 2>/dev/null && echo "poisoned $f"; done; echo attack-done`
	r := run(a, attack)
	if !strings.Contains(r, "attack-done") || !strings.Contains(r, "poisoned ") {
		t.Fatalf("workspace A's command did not run its attack (it poisons at least its own layer):\n%s", r)
	}
	var poisonedB []string
	for p, h := range before {
		if hashTree(t, filepath.Dir(p))[p] != h {
			poisonedB = append(poisonedB, p)
		}
	}
	if len(poisonedB) > 0 {
		t.Errorf("workspace A's command changed %d outputs workspace B's builds use, e.g. %s", len(poisonedB), poisonedB[0])
	}
	if r := run(b, build+" && echo built-again-ok"); !strings.Contains(r, "built-again-ok") {
		t.Errorf("workspace B's build after A's command failed (it used A's bytes):\n%s", r)
	}
}
