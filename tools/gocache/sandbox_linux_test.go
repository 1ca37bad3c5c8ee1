//go:build linux

package gocache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/tools/gocache"
	"github.com/agentd/agentd/tools/sandbox"
)

func TestMain(m *testing.M) {
	// The test binary is the sandbox helper and the cache program, as agentd-sandbox is.
	sandbox.HelperMain()
	os.Exit(m.Run())
}

// modes runs f in each sandbox mode this machine has (bubblewrap, Landlock + seccomp alone).
func modes(t *testing.T, f func(t *testing.T, mode sandbox.Mode)) {
	feat := sandbox.Detect()
	if feat.BestMode() == sandbox.ModeNone {
		t.Skipf("NO SANDBOX on this machine, the layered cache is not tested: %s", feat.Describe())
	}
	for _, m := range []sandbox.Mode{sandbox.ModeBwrap, sandbox.ModeLandlock} {
		t.Run(m.String(), func(t *testing.T) {
			if !feat.Usable(m) {
				t.Skipf("sandbox mode %s is not available here: %s", m, feat.Describe())
			}
			f(t, m)
		})
	}
}

// env is one session's worth of sandbox: a workspace, a tmp dir and a fresh agentd cache.
type env struct {
	sb        *sandbox.Sandbox
	ws, tmp   string
	own, user string
	policy    sandbox.Policy
	note      string
}

func newEnv(t testing.TB, user string, mode sandbox.Mode) *env {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	e := &env{sb: sb, ws: filepath.Join(base, "ws"), tmp: filepath.Join(base, "tmp"), own: filepath.Join(base, "agentd-go-build"), user: user}
	for _, d := range []string{e.ws, e.tmp, e.own} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// What harness/runtime.go does for a session.
	var cacheEnv []string
	cacheEnv, e.note = gocache.SandboxEnv(sb.HelperPath(), e.own, user, []string{e.ws, e.tmp})
	e.policy = sandbox.Policy{
		WorkspaceRoots: []string{e.ws},
		TmpDir:         e.tmp,
		WritableDirs:   []string{e.own},
		SetEnv:         cacheEnv,
		StateDir:       filepath.Join(base, "state"),
	}
	return e
}

// run runs argv in the sandbox, in dir, and returns its combined output.
func (e *env) run(t testing.TB, dir string, argv ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := e.sb.Command(ctx, e.policy, argv, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	out, err := c.CombinedOutput()
	return string(out), err
}

// writeModule writes a small module that imports the standard library and one dependency from
// the module cache (golang.org/x/sys, at agentd's own version, so .ci/run has downloaded it).
func writeModule(t testing.TB, dir string) {
	t.Helper()
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	ver := regexp.MustCompile(`(?m)^\s*golang\.org/x/sys (v\S+)`).FindSubmatch(gomod)
	if ver == nil {
		t.Fatal("agentd's go.mod does not require golang.org/x/sys")
	}
	goline := regexp.MustCompile(`(?m)^go (\S+)`).FindSubmatch(gomod)
	if goline == nil {
		t.Fatal("agentd's go.mod has no go line")
	}
	gosum, err := os.ReadFile("../../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	var sum []string
	for _, l := range strings.Split(string(gosum), "\n") {
		if strings.HasPrefix(l, "golang.org/x/sys "+string(ver[1])+" ") || strings.HasPrefix(l, "golang.org/x/sys "+string(ver[1])+"/go.mod ") {
			sum = append(sum, l)
		}
	}
	files := map[string]string{
		"go.mod": "module example.com/warm\n\ngo " + string(goline[1]) + "\n\nrequire golang.org/x/sys " + string(ver[1]) + "\n",
		"go.sum": strings.Join(sum, "\n") + "\n",
		"warm.go": `package warm

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Greeting is built from the standard library and a module dependency.
func Greeting(name string) string {
	return fmt.Sprintf("hello, %s (%t)", strings.ToUpper(name), unix.Getpagesize() > 0)
}
`,
		"warm_test.go": `package warm

import "testing"

func TestGreeting(t *testing.T) {
	if got := Greeting("go"); got != "hello, GO (true)" {
		t.Fatalf("Greeting = %q", got)
	}
}
`,
		"sub/sub.go":      "package sub\n\nimport \"encoding/json\"\n\n// Encode encodes v.\nfunc Encode(v any) ([]byte, error) { return json.Marshal(v) }\n",
		"sub/sub_test.go": "package sub\n\nimport \"testing\"\n\nfunc TestEncode(t *testing.T) {\n\tif b, err := Encode(1); err != nil || string(b) != \"1\" {\n\t\tt.Fatal(string(b), err)\n\t}\n}\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// userCache is the user's GOCACHE, as agentd finds it.
func userCache(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	u, err := gocache.UserDir()
	if err != nil || u == "" {
		t.Fatalf("the user's GOCACHE: %q, %v", u, err)
	}
	if strings.HasPrefix(u, "/tmp/") || strings.HasPrefix(u, "/run/") {
		t.Skipf("the user's GOCACHE %s is under /tmp or /run, which bubblewrap replaces with a private tmpfs: "+
			"sandboxed commands cannot see it (docs/security.md)", u)
	}
	return u
}

// userGo runs the go command as the user does: outside the sandbox, the user's own cache.
func userGo(t testing.TB, dir string, args ...string) (string, time.Duration) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s (outside the sandbox): %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), time.Since(start)
}

var (
	compileRe = regexp.MustCompile(`(?m)/compile .* -p (\S+) `)
	statsRe   = regexp.MustCompile(`agentd gocache: gets (\d+) \(hits: agentd (\d+), user (\d+); misses (\d+)\), puts (\d+), errors (\d+)`)
)

// The first sandboxed `go test` of a fresh session (agentd's cache empty) reuses the user's
// compiled standard library and dependencies: it compiles only the module's own packages.
func TestFirstSandboxedGoTestReusesTheUsersCache(t *testing.T) { modes(t, testFirstSandboxedGoTest) }

func testFirstSandboxedGoTest(t *testing.T, mode sandbox.Mode) {
	user := userCache(t)
	e := newEnv(t, user, mode)
	if e.note != "" {
		t.Fatalf("no layered cache: %s", e.note)
	}
	writeModule(t, e.ws)
	// The user's own warm-up build (it may already be warm: then this is the user's warm time).
	_, warm := userGo(t, e.ws, "test", "-count=1", "./...")

	e.policy.SetEnv = appendProgFlag(t, e.policy.SetEnv, "-v")
	start := time.Now()
	out, err := e.run(t, e.ws, "go", "test", "-count=1", "-x", "./...")
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("sandboxed go test: %v\n%s", err, tail(out))
	}
	t.Logf("user's go test -count=1 ./...: %v; first sandboxed go test -count=1 -x ./... with an empty agentd cache: %v", warm, elapsed)
	if !strings.Contains(out, "ok  \texample.com/warm\t") || !strings.Contains(out, "ok  \texample.com/warm/sub\t") {
		t.Fatalf("the module's tests did not pass in the sandbox:\n%s", tail(out))
	}
	// With -x the go command prints every compile it runs: only the module's own packages (and
	// test mains) may be compiled, never the standard library or the dependency.
	var foreign []string
	for _, m := range compileRe.FindAllStringSubmatch(out, -1) {
		if p := m[1]; p != "main" && p != "example.com/warm" && !strings.HasPrefix(p, "example.com/warm/") {
			foreign = append(foreign, p)
		}
	}
	if len(foreign) > 0 {
		t.Errorf("the sandboxed go test compiled %d packages outside the module, the user's cache was not used: %v", len(foreign), foreign)
	}
	m := statsRe.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		t.Fatalf("no statistics from the cache program: it did not run\n%s", tail(out))
	}
	var userHits int
	for _, s := range m {
		var n int
		fmt.Sscan(s[3], &n)
		userHits += n
		if s[6] != "0" {
			t.Errorf("the cache program reported errors: %s", s[0])
		}
	}
	t.Logf("cache program: %d run(s); %s", len(m), m[0][0])
	if userHits == 0 {
		t.Errorf("no hit in the user's cache")
	}
	// What the sandboxed build wrote went to agentd's cache.
	var written int
	filepath.WalkDir(e.own, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, "-a") {
			written++
		}
		return nil
	})
	if written == 0 {
		t.Errorf("nothing written to agentd's cache %s", e.own)
	}
}

// appendProgFlag adds a flag to the GOCACHEPROG command line.
func appendProgFlag(t testing.TB, env []string, flag string) []string {
	t.Helper()
	out := append([]string(nil), env...)
	for i, kv := range out {
		if strings.HasPrefix(kv, "GOCACHEPROG=") {
			out[i] = kv + " " + flag
			return out
		}
	}
	t.Fatalf("no GOCACHEPROG in %q", env)
	return nil
}

func tail(s string) string {
	if len(s) > 6000 {
		return "…" + s[len(s)-6000:]
	}
	return s
}

// snapshot records every file of a tree: name, size and content hash, and with meta its mode
// and mtime.
func snapshot(t testing.TB, dir string, meta bool) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d", info.Mode().Type(), info.Size())
		if meta {
			v += fmt.Sprintf(" %v %d", info.Mode(), info.ModTime().UnixNano())
		}
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		snap[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// A sandboxed command cannot change the user's cache in any way: not through the shell, not
// through a go command pointed at it, not through the cache program pointed at it.
func TestSandboxCannotWriteTheUsersCache(t *testing.T) { modes(t, testCannotWrite) }

func testCannotWrite(t *testing.T, mode sandbox.Mode) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	// A user cache of our own, where the real one lives (not under /tmp, which bubblewrap
	// replaces): the test must not risk the user's real cache.
	base, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	user, err := os.MkdirTemp(base, "agentd-gocache-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(user) })
	action, body := bytes.Repeat([]byte{0xab}, 32), []byte("the user's compiled object\n")
	output := sha256.Sum256(body)
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", action, output[:], len(body), time.Now().UnixNano())
	for name, content := range map[string]string{
		fmt.Sprintf("ab/%x-a", action):                 entry,
		fmt.Sprintf("%02x/%x-d", output[0], output[:]): string(body),
		"README": "the user's cache\n",
	} {
		p := filepath.Join(user, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, user, mode)
	if e.note != "" {
		t.Fatalf("no layered cache: %s", e.note)
	}
	// A package with no imports: the go commands below have a build to cache, and nothing to
	// compile for long.
	tiny := filepath.Join(e.ws, "tiny")
	os.MkdirAll(tiny, 0o755)
	os.WriteFile(filepath.Join(tiny, "go.mod"), []byte("module tiny\n\ngo 1.24\n"), 0o644)
	os.WriteFile(filepath.Join(tiny, "tiny.go"), []byte("package tiny\n\n// F is one.\nfunc F() int { return 1 }\n"), 0o644)
	// Landlock does not govern a file's metadata: without bubblewrap's read-only mount a command
	// can chmod or touch files it cannot write (docs/security.md, known limits). Neither
	// changes what the user's builds read: objects are found by name and used by content.
	meta := mode == sandbox.ModeBwrap
	before := snapshot(t, user, meta)
	obj := filepath.Join(user, fmt.Sprintf("%02x/%x-d", output[0], output[:]))

	// The cache is visible (so the attempts below are real attempts on it).
	out, err := e.run(t, e.ws, "cat", obj)
	if err != nil || out != string(body) {
		t.Fatalf("the user's cache is not readable in the sandbox (%v): %q", err, out)
	}
	attempts := map[string][]string{
		"overwrite an object":   {"sh", "-c", "echo poisoned > " + obj},
		"append to an object":   {"sh", "-c", "echo poisoned >> " + obj},
		"add a file":            {"sh", "-c", "echo x > " + filepath.Join(user, "ab", "new-a")},
		"remove an object":      {"rm", "-f", obj},
		"rename an object":      {"mv", obj, obj + ".old"},
		"chmod an object":       {"chmod", "666", obj},
		"touch an object":       {"touch", obj},
		"make a directory":      {"mkdir", filepath.Join(user, "zz")},
		"symlink into it":       {"ln", "-s", "/etc/passwd", filepath.Join(user, "ab", "link-a")},
		"go build with GOCACHE": {"sh", "-c", "GOCACHEPROG= GOCACHE=" + user + " go build ./..."},
	}
	for what, argv := range attempts {
		out, err := e.run(t, tiny, argv...)
		if !meta && (argv[0] == "chmod" || argv[0] == "touch") {
			t.Logf("%s, without bubblewrap: error %v (Landlock does not cover metadata)", what, err)
			continue
		}
		if err == nil {
			t.Errorf("%s: succeeded in the sandbox (%q)", what, out)
		}
	}
	// The cache program itself, told to write the user's cache: the go command carries on
	// without a cache when its puts fail, so look at what the program says it did.
	prog := "GOCACHEPROG='" + e.sb.HelperPath() + " " + gocache.Arg + " -v -w " + user + "' go build ./..."
	out, err = e.run(t, tiny, "sh", "-c", prog)
	// Either the program reports its stats with every put failed, or the go command stopped at
	// the first failed put (it may, and then the program never prints stats): both mean nothing
	// was written; the snapshot below checks that on disk.
	m := statsRe.FindStringSubmatch(out)
	refused := err != nil && (strings.Contains(out, "read-only file system") || strings.Contains(out, "permission denied"))
	if (m == nil && !refused) || (m != nil && (m[5] == "0" || m[5] != m[6])) {
		t.Errorf("the cache program pointed at the user's cache: want every put to fail (err %v):\n%s", err, out)
	}
	// The go command, given the user's cache as the one to write, failed to write it and did
	// not fall back to writing anything there.
	after := snapshot(t, user, meta)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed: %q → %q", p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was added", p)
		}
	}
	// And the layered cache still reads it: the one object is served from the user's layer.
	c, err := gocache.Open(e.own, []string{user})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h, ok := c.Get(action); !ok || !h.User || h.DiskPath != obj {
		t.Errorf("Get from the user's layer = %+v, %v", h, ok)
	}
}

// BenchmarkFirstSandboxedGoTest compares, side by side, the user's warm `go test -count=1 ./...`
// of a small module with the first sandboxed one in a workspace (agentd's cache empty), and with
// the first sandboxed one in a second workspace holding the same module right after: with its own
// layer (empty: what the layer per workspace costs), and, for reference, with the first
// workspace's layer (the layer shared by every workspace before issue 23). The layers are the
// harness's (OpenLayer) in one agentd cache directory.
func BenchmarkFirstSandboxedGoTest(b *testing.B) {
	user := userCache(b)
	var userT, firstT, secondT, sharedT time.Duration
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		var envs []*env
		for k := range 3 {
			e := newEnv(b, user, sandbox.ModeAuto)
			layer, err := gocache.OpenLayer(dir, e.ws, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			if k == 2 {
				layer = envs[0].own // shared with the first workspace, as before
			}
			e.useLayer(b, layer)
			writeModule(b, e.ws)
			userGo(b, e.ws, "test", "./...") // the user has built and tested the module before
			envs = append(envs, e)
		}
		_, d := userGo(b, envs[0].ws, "test", "-count=1", "./...")
		userT += d
		for k, e := range envs {
			start := time.Now()
			out, err := e.run(b, e.ws, "go", "test", "-count=1", "./...")
			switch k {
			case 0:
				firstT += time.Since(start)
			case 1:
				secondT += time.Since(start)
			case 2:
				sharedT += time.Since(start)
			}
			if err != nil {
				b.Fatalf("sandboxed go test: %v\n%s", err, tail(out))
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(userT.Seconds()/n, "user-s/op")
	b.ReportMetric(firstT.Seconds()/n, "sandbox-s/op")
	b.ReportMetric(secondT.Seconds()/n, "second-ws-s/op")
	b.ReportMetric(firstT.Seconds()/userT.Seconds(), "ratio")
	b.ReportMetric(sharedT.Seconds()/n, "shared-second-s/op")
	b.ReportMetric(secondT.Seconds()/userT.Seconds(), "ratio-second")
	b.ReportMetric(sharedT.Seconds()/userT.Seconds(), "ratio-shared-second")
}

// useLayer makes layer agentd's writable cache of e, as the harness does.
func (e *env) useLayer(t testing.TB, layer string) {
	t.Helper()
	e.own = layer
	cacheEnv, note := gocache.SandboxEnv(e.sb.HelperPath(), layer, e.user, []string{e.ws, e.tmp})
	if note != "" {
		t.Fatalf("no layered cache: %s", note)
	}
	e.policy.WritableDirs, e.policy.SetEnv = []string{layer}, cacheEnv
}
