package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.HelperMain() // the test binary is the sandbox helper, as the agentd binary is
	os.Exit(m.Run())
}

// ServersEnv names the directory where .ci/run installs the npm MCP servers (node_modules below it).
const ServersEnv = "AGENTD_MCP_SERVERS"

// npmServer returns the entry point of an installed npm server ("everything", "filesystem"). In CI a
// missing server is a failure; elsewhere the test is skipped with the reason.
func npmServer(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv(ServersEnv)
	if dir == "" {
		dir = "/opt/agentd-e2e/mcp"
	}
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-"+name, "dist", "index.js")
	_, err := os.Stat(entry)
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the MCP server %s is not installed (.ci/run installs it into %s): %v", name, dir, err)
		}
		t.Skipf("the MCP server %s is not installed here (%v); .ci/run installs it (set %s to its directory)", name, err, ServersEnv)
	}
	return entry
}

// testSandbox is the machine's sandbox; without one, stdio servers cannot run (skipped locally,
// a failure in CI, which installs bubblewrap).
func testSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil || sb.Mode() == sandbox.ModeNone {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no sandbox: %v", err)
		}
		t.Skipf("no sandbox works on this machine (%v): MCP stdio servers do not start without one", err)
	}
	return sb
}

func startSet(t *testing.T, workspace string, servers ...ServerConfig) *Set {
	t.Helper()
	state := t.TempDir()
	ws, err := fsafe.NewWorkspace(workspace)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	set := Start(context.Background(), &Config{Servers: servers}, Options{
		Workspace: workspace, Sandbox: testSandbox(t), CacheDir: filepath.Join(state, "cache"), FS: fsafe.New(ws, fsafe.Options{}),
		Policy: sandbox.Policy{TmpDir: t.TempDir(), StateDir: state},
	})
	t.Cleanup(set.Close)
	return set
}

func everything(t *testing.T, mod func(*ServerConfig)) (*Set, *Tool) {
	t.Helper()
	sc := ServerConfig{Name: "everything", Command: "node", Args: []string{npmServer(t, "everything")}}
	if mod != nil {
		mod(&sc)
	}
	set := startSet(t, t.TempDir(), sc)
	st := set.Status()
	if len(st) != 1 || st[0].State != StateReady {
		t.Fatalf("the everything server did not start: %+v", st)
	}
	return set, lookup(t, set, "everything__echo")
}

func lookup(t *testing.T, set *Set, name string) *Tool {
	t.Helper()
	for _, tl := range set.Tools() {
		if tl.Name() == name {
			return tl.(*Tool)
		}
	}
	t.Fatalf("no tool %s among %v", name, set.Status())
	return nil
}

// run validates args with the tool's spec, as the pipeline does, and executes the call.
func run(ctx context.Context, t *testing.T, tl *Tool, args string) (tools.Output, error) {
	t.Helper()
	a, err := tl.Spec().Decode(json.RawMessage(args), nil)
	if err != nil {
		t.Fatalf("%s: arguments %s: %v", tl.Name(), args, err)
	}
	return tl.ExecuteContent(ctx, &tools.Call{ID: "c1", Name: tl.Name(), Raw: json.RawMessage(args), Args: a})
}

func TestEverythingServerToolsAndResults(t *testing.T) {
	set, echo := everything(t, nil)
	ctx := context.Background()

	t.Run("listing", func(t *testing.T) {
		st := set.Status()[0]
		for _, want := range []string{"everything__echo", "everything__get-tiny-image", "everything__trigger-long-running-operation"} {
			lookup(t, set, want)
		}
		if !strings.Contains(echo.Description(), "[MCP server everything, tool echo]") {
			t.Errorf("description %q does not name the server and tool", echo.Description())
		}
		if !json.Valid(echo.Spec().Schema()) || !strings.Contains(string(echo.Spec().Schema()), `"message"`) {
			t.Errorf("echo's schema: %s", echo.Spec().Schema())
		}
		if st.Version == "" {
			t.Errorf("no server version in %+v", st)
		}
	})
	t.Run("schema validation", func(t *testing.T) {
		_, err := echo.Spec().Decode(json.RawMessage(`{"message": 5}`), nil)
		var ae *tools.ArgumentError
		if !errors.As(err, &ae) || !strings.Contains(ae.Error(), "/message") {
			t.Fatalf("a number for a string: %v", err)
		}
	})
	t.Run("call", func(t *testing.T) {
		out, err := run(ctx, t, echo, `{"message":"hello from agentd"}`)
		if err != nil || !strings.Contains(textOf(out), "hello from agentd") {
			t.Fatalf("echo: %q, %v", textOf(out), err)
		}
		if echo.TrustedReadOnly() || echo.Permission(nil).Access != tools.AccessExec {
			t.Errorf("echo says readOnlyHint, but the server is not trusted for it: %+v", echo.Permission(nil))
		}
	})
	t.Run("image", func(t *testing.T) {
		out, err := run(ctx, t, lookup(t, set, "everything__get-tiny-image"), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		var img *tools.Block
		for i := range out.Content {
			if out.Content[i].Type == "image" {
				img = &out.Content[i]
			}
		}
		if img == nil || img.MIME != "image/png" || len(img.Data) < 8 || string(img.Data[1:4]) != "PNG" {
			t.Fatalf("no PNG image block in %+v", out.Content)
		}
	})
	t.Run("long output truncated", func(t *testing.T) {
		msg := strings.Repeat("0123456789", 10_000)
		out, err := run(ctx, t, echo, `{"message":"`+msg+`"}`)
		if err != nil {
			t.Fatal(err)
		}
		txt := textOf(out)
		if !out.Meta.Truncated || out.Meta.OriginalSize < int64(len(msg)) || len(txt) > DefaultMaxResultBytes+200 ||
			!strings.Contains(txt, "[output truncated: the tool returned") {
			t.Fatalf("meta %+v, %d bytes, tail %q", out.Meta, len(txt), txt[max(0, len(txt)-150):])
		}
	})
	t.Run("progress", func(t *testing.T) {
		got := make(chan string, 16)
		pctx := tools.WithProgress(ctx, func(p tools.Progress) {
			select {
			case got <- p.Text:
			default:
			}
		})
		out, err := run(pctx, t, lookup(t, set, "everything__trigger-long-running-operation"), `{"duration":0.2,"steps":2}`)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case p := <-got:
			if !strings.Contains(p, "progress") {
				t.Errorf("progress %q", p)
			}
		default:
			t.Errorf("no progress reported; result %q", textOf(out))
		}
	})
}

func TestHungCallTimesOutAndTheServerStaysUsable(t *testing.T) {
	set, echo := everything(t, func(sc *ServerConfig) { sc.TimeoutSec = 1 })
	long := lookup(t, set, "everything__trigger-long-running-operation")
	_, err := run(context.Background(), t, long, `{"duration":60,"steps":2}`)
	if tools.TypeOf(err, "") != tools.Timeout || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("a call past its timeout: %v", err)
	}
	out, err := run(context.Background(), t, echo, `{"message":"still here"}`)
	if err != nil || !strings.Contains(textOf(out), "still here") {
		t.Fatalf("after the timeout: %q, %v", textOf(out), err)
	}
}

func TestCancelledCallReturnsPromptly(t *testing.T) {
	set, _ := everything(t, nil)
	long := lookup(t, set, "everything__trigger-long-running-operation")
	ctx, cancel := context.WithCancel(context.Background())
	pctx := tools.WithProgress(ctx, func(tools.Progress) { cancel() }) // cancel once it is running
	_, err := run(pctx, t, long, `{"duration":60,"steps":60}`)
	if tools.TypeOf(err, "") != tools.Cancelled {
		t.Fatalf("a cancelled call: %v", err)
	}
}

func TestServerKilledMidCallIsAnErrorAndRestarts(t *testing.T) {
	set, echo := everything(t, func(sc *ServerConfig) { sc.MaxRestarts = new(int); *sc.MaxRestarts = 1 })
	long := lookup(t, set, "everything__trigger-long-running-operation")
	srv := long.srv
	killed := make(chan struct{})
	pctx := tools.WithProgress(context.Background(), func(tools.Progress) {
		select {
		case <-killed:
			return
		default:
		}
		close(killed)
		srv.mu.Lock()
		pid := srv.conn.pid
		srv.mu.Unlock()
		_ = syscall.Kill(-pid, syscall.SIGKILL) // the sandbox's process group
	})
	_, err := run(pctx, t, long, `{"duration":60,"steps":60}`)
	if tools.TypeOf(err, "") != tools.ExecFailed || !strings.Contains(err.Error(), "stopped during the call") {
		t.Fatalf("a server killed mid-call: %v", err)
	}
	// Restarted once at the next call.
	out, err := run(context.Background(), t, echo, `{"message":"again"}`)
	if err != nil || !strings.Contains(textOf(out), "again") {
		t.Fatalf("after the restart: %q, %v", textOf(out), err)
	}
	// Killed again: out of restarts.
	srv.mu.Lock()
	c := srv.conn
	srv.mu.Unlock()
	_ = syscall.Kill(-c.pid, syscall.SIGKILL)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed server was not noticed (waited 30s for its process to be reaped)")
	}
	_, err = run(context.Background(), t, echo, `{"message":"once more"}`)
	if err == nil || !strings.Contains(err.Error(), "not started again") {
		t.Fatalf("out of restarts: %v", err)
	}
	if st := set.Status()[0]; st.State != StateFailed {
		t.Errorf("state %s, want failed", st.State)
	}
}

func TestServerThatCannotStart(t *testing.T) {
	set := startSet(t, t.TempDir(),
		ServerConfig{Name: "broken", Command: "/nonexistent/mcp-server"},
		ServerConfig{Name: "quits", Command: "sh", Args: []string{"-c", "echo the server gave up >&2; exit 3"}})
	st := set.Status()
	if len(set.Tools()) != 0 || len(st) != 2 {
		t.Fatalf("tools %v, status %+v", set.Tools(), st)
	}
	for _, s := range st {
		if s.State != StateFailed || s.Error == "" {
			t.Errorf("%s: state %s, error %q", s.Name, s.State, s.Error)
		}
	}
	if !strings.Contains(st[1].Error, "the server gave up") {
		t.Errorf("the error does not show the server's stderr: %q", st[1].Error)
	}
}

func TestFilesystemServerIsConfinedBySandbox(t *testing.T) {
	entry := npmServer(t, "filesystem")
	ws := t.TempDir()
	// Outside the workspace, and not under /tmp (bubblewrap gives the sandbox its own /tmp).
	wd, _ := os.Getwd()
	outside, err := os.MkdirTemp(wd, "outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	// The server itself is told it may write both; the sandbox must stop the second.
	set := startSet(t, ws, ServerConfig{Name: "fs", Command: "node", Args: []string{entry, ws, outside}})
	if st := set.Status()[0]; st.State != StateReady {
		t.Fatalf("the filesystem server did not start: %+v", st)
	}
	write := lookup(t, set, "fs__write_file")
	ctx := context.Background()
	in := filepath.Join(ws, "inside.txt")
	if _, err := run(ctx, t, write, `{"path":"`+in+`","content":"ok"}`); err != nil {
		t.Fatalf("writing inside the workspace: %v", err)
	}
	if b, err := os.ReadFile(in); err != nil || string(b) != "ok" {
		t.Fatalf("inside.txt: %q, %v", b, err)
	}
	out := filepath.Join(outside, "escape.txt")
	_, err = run(ctx, t, write, `{"path":"`+out+`","content":"escaped"}`)
	if err == nil || tools.TypeOf(err, "") != tools.ExecFailed || !strings.Contains(err.Error(), "reported an error") {
		t.Fatalf("writing outside the workspace: %v", err)
	}
	if _, serr := os.Stat(out); !errors.Is(serr, os.ErrNotExist) {
		t.Fatalf("the server wrote outside the workspace (%v); its error was %v", serr, err)
	}
	// And an error result of the server's own (isError) is typed, with the server's message.
	read := lookup(t, set, "fs__read_text_file")
	_, err = run(ctx, t, read, `{"path":"`+filepath.Join(ws, "missing.txt")+`"}`)
	if tools.TypeOf(err, "") != tools.ExecFailed || !strings.Contains(err.Error(), "missing.txt") {
		t.Fatalf("reading a missing file: %v", err)
	}
}

func TestStdioServerEnvironmentIsExplicit(t *testing.T) {
	t.Setenv("AGENTD_MCP_TEST_SECRET", "s3cret-token")
	t.Setenv("VIRTUAL_ENV", "/venv-kept-for-commands") // commands keep it; MCP servers do not
	set, _ := everything(t, func(sc *ServerConfig) { sc.Env = map[string]string{"GREETING": "configured"} })
	out, err := run(context.Background(), t, lookup(t, set, "everything__get-env"), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	env := textOf(out)
	if !strings.Contains(env, "configured") || !strings.Contains(env, "PATH") {
		t.Errorf("the server's environment lacks the configured variable or PATH: %s", env)
	}
	if strings.Contains(env, "s3cret-token") || strings.Contains(env, "AGENTD_MCP_TEST_SECRET") || strings.Contains(env, "venv-kept") {
		t.Errorf("the server inherited a variable outside the minimal set: %s", env)
	}
}

func TestServerThatFloodsItsOutputFailsToStart(t *testing.T) {
	// An endless line of garbage on stdout: the connection fails (bad JSON, or the SDK's 16 MiB frame
	// limit), the process is killed, and the error says so instead of waiting for the start timeout.
	set := startSet(t, t.TempDir(), ServerConfig{Name: "flood", Command: "sh", Args: []string{"-c", "yes | tr -d '\\n'"}, StartTimeoutSec: 60})
	st := set.Status()[0]
	if st.State != StateFailed || st.Error == "" || strings.Contains(st.Error, "within") {
		t.Fatalf("a flooding server: %+v", st)
	}
}

// TestFilesystemServerPlantIsHeld: the README's example server (server-filesystem) writes to
// a copy-on-write layer like a command; after each call its ordinary changes apply and a
// planted repository or hook is held, in every approval mode (the server's tools run without
// a question in yolo), and the result says so.
func TestFilesystemServerPlantIsHeld(t *testing.T) {
	entry := npmServer(t, "filesystem")
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	set := startSet(t, ws, ServerConfig{Name: "fs", Command: "node", Args: []string{entry, ws}})
	if st := set.Status()[0]; st.State != StateReady {
		t.Fatalf("the filesystem server did not start: %+v", st)
	}
	if testSandbox(t).Mode() != sandbox.ModeBwrap {
		t.Skip("no copy-on-write layer without bubblewrap")
	}
	mkdir, write := lookup(t, set, "fs__create_directory"), lookup(t, set, "fs__write_file")
	ctx := context.Background()
	for _, d := range []string{"sub/.git", ".husky"} {
		if _, err := run(ctx, t, mkdir, `{"path":"`+filepath.Join(ws, d)+`"}`); err != nil {
			t.Fatal(err)
		}
	}
	// The new repository is held; the hook is offered for review (the kernel gates it: here,
	// outside the kernel, nothing decides it, and it is not applied) — once, not again after
	// the next call.
	for i, p := range []string{"sub/.git/config", ".husky/pre-commit", ".husky/pre-commit"} {
		out, err := run(ctx, t, write, `{"path":"`+filepath.Join(ws, p)+`","content":"[core]\n\tfsmonitor = touch /tmp/x\n"}`)
		want := "NOT applied"
		switch i {
		case 1:
			want = "Offered to the user for review"
		case 2:
			want = "offered for review after an earlier call and not accepted"
		}
		if err != nil || !strings.Contains(textOf(out), want) || !strings.Contains(textOf(out), p) {
			t.Errorf("%s (call %d): %q %v", p, i+1, textOf(out), err)
		}
		if fus := out.FollowUps; (i == 1) != (len(fus) == 1) || len(fus) > 1 {
			t.Errorf("call %d offers %d changes for review, want %d", i+1, len(fus), map[bool]int{true: 1}[i == 1])
		}
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s reached the workspace", p)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, "sub/.git")); err == nil {
		t.Error("sub/.git reached the workspace")
	}
}
