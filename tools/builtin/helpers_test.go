package builtin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/internal/bug"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.HelperMain() // the test binary is the sandbox helper, as the agentd binary is
	bug.PanicOnBugs.Store(true)
	os.Exit(m.Run())
}

// fixture is one session over a fresh workspace, with the tools run through the real kernel.
type fixture struct {
	t     *testing.T
	dir   string // the workspace root, canonical
	ws    *fsafe.Workspace
	fs    *fsafe.FS
	tools []tools.Tool
	reg   *tools.Registry

	mu     sync.Mutex
	events []agent.Event
}

// option changes the configuration a fixture builds its tools with.
type option func(*fixtureConfig)

type fixtureConfig struct {
	fsOpts fsafe.Options
	cfg    builtin.Config
}

func withLimits(l fsafe.Limits) option { return func(c *fixtureConfig) { c.fsOpts.Limits = l } }
func withConfig(f func(*builtin.Config)) option {
	return func(c *fixtureConfig) { f(&c.cfg) }
}

// unsandboxed is a runner that runs commands without a sandbox (the environment is still
// filtered): for tests of the tool's own process handling.
func unsandboxed(t testing.TB) builtin.Runner {
	sb, err := sandbox.New(sandbox.Options{Features: &sandbox.Features{}})
	if err != nil {
		t.Fatal(err)
	}
	return &builtin.SandboxRunner{Sandbox: sb, Policy: sandbox.Policy{Unsandboxed: true}}
}

func newFixture(t *testing.T, opts ...option) *fixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := fsafe.NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	fc := fixtureConfig{}
	fc.cfg.Bash.Runner = unsandboxed(t)
	for _, o := range opts {
		o(&fc)
	}
	f := &fixture{t: t, dir: dir, ws: ws, fs: fsafe.New(ws, fc.fsOpts)}
	fc.cfg.FS = f.fs
	f.tools, err = builtin.New(fc.cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.reg, err = tools.NewRegistry(f.tools...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// write creates a file in the workspace (parents too).
func (f *fixture) write(rel, content string) string {
	f.t.Helper()
	p := filepath.Join(f.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) content(rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, rel))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// run runs one call through the kernel with the gate (nil: allow everything).
func (f *fixture) run(gate agent.Gate, name string, args any) tools.Result {
	f.t.Helper()
	return f.runCtx(context.Background(), gate, name, args)
}

func (f *fixture) runCtx(ctx context.Context, gate agent.Gate, name string, args any) tools.Result {
	f.t.Helper()
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			f.t.Fatal(err)
		}
		raw = string(b)
	}
	k := agent.NewKernel(agent.Config{Registry: f.reg, Gate: gate, MaxToolErrors: 1 << 20}, f.record)
	res := k.RunBatch(ctx, []agent.ToolCall{{ID: "c1", Name: name, Arguments: json.RawMessage(raw)}}, nil)
	return res.Results[0]
}

// call runs a call with every gate allowing.
func (f *fixture) call(name string, args any) tools.Result {
	f.t.Helper()
	return f.run(nil, name, args)
}

// mustOK runs a call and fails unless it is ok.
func (f *fixture) mustOK(name string, args any) tools.Result {
	f.t.Helper()
	r := f.call(name, args)
	if r.Type != tools.OK {
		f.t.Fatalf("%s %v: %s: %s", name, args, r.Type, r.Text())
	}
	return r
}

// read reads a file whole through the read tool (so that it may be edited).
func (f *fixture) read(rel string) {
	f.t.Helper()
	f.mustOK("read", map[string]any{"path": rel})
}

func (f *fixture) record(e agent.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

// progress returns the progress texts recorded so far.
func (f *fixture) progress() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		if u, ok := e.(agent.ToolUpdate); ok && u.Progress != nil {
			out = append(out, u.Progress.Text)
		}
	}
	return out
}

func (f *fixture) tool(name string) tools.Tool {
	for _, t := range f.tools {
		if t.Name() == name {
			return t
		}
	}
	f.t.Fatalf("no tool %q", name)
	return nil
}

// allowHunks is a gate that accepts only the given hunks (by index into the preview's hunks).
func allowHunks(idx ...int) agent.Gate {
	return func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		ids := []string{}
		for _, i := range idx {
			ids = append(ids, req.Preview.Diff.Hunks[i].ID)
		}
		return agent.GateDecision{Allow: true, Approval: &tools.Approval{Hunks: ids}}, nil
	}
}

func wantType(t *testing.T, r tools.Result, want tools.ResultType, contains ...string) {
	t.Helper()
	if r.Type != want {
		t.Fatalf("result type %s, want %s: %s", r.Type, want, r.Text())
	}
	for _, c := range contains {
		if !strings.Contains(r.Text(), c) {
			t.Errorf("result does not contain %q:\n%s", c, r.Text())
		}
	}
}

// sameSnapshot reports every change between two testutil snapshots.
func sameSnapshot(t *testing.T, before, after map[string]string) {
	t.Helper()
	for _, c := range testutil.SnapshotChanges(before, after) {
		t.Error(c)
	}
}
