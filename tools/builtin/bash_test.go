package builtin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/sandbox"
)

func bash(command string) map[string]any { return map[string]any{"command": command} }

// withBash tunes the bash configuration of a fixture.
func withBash(f func(*builtin.BashConfig)) option {
	return withConfig(func(c *builtin.Config) { f(&c.Bash) })
}

// marker is a sleep duration unique to this test run, so that its processes can be found in
// /proc: "1000.<digits>".
var markerSeq atomic.Int64

func marker() string {
	return fmt.Sprintf("1000.%d%03d", time.Now().UnixNano()%1e9, markerSeq.Add(1))
}

// survivors lists the processes whose command line contains m.
func survivors(m string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	self := fmt.Sprintf("/proc/%d/", os.Getpid())
	for _, d := range dirs {
		if strings.HasPrefix(d, self) {
			continue
		}
		b, err := os.ReadFile(d)
		if err == nil && strings.Contains(string(b), m) {
			out = append(out, d+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// noSurvivors waits a little for processes with m to disappear (a SIGKILLed process is reaped
// by its parent or init asynchronously), then fails if some remain.
func noSurvivors(t *testing.T, m string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		s := survivors(m)
		if len(s) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes left running: %v", s)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBashReportsOutputAndExitStatus(t *testing.T) {
	f := newFixture(t)
	r := f.mustOK("bash", bash("echo out; echo err >&2; exit 3"))
	if r.Text() != "out\nerr\n[exit status 3]\n" {
		t.Errorf("text %q", r.Text())
	}
	d := r.Details.(builtin.BashDetails)
	if d.ExitCode != 3 || d.Signal != "" || d.TimedOut || d.Sandbox != "none" || d.OutputBytes != 8 {
		t.Errorf("details %+v", d)
	}
	r = f.mustOK("bash", bash("true"))
	if r.Text() != "(no output)\n[exit status 0]\n" {
		t.Errorf("text %q", r.Text())
	}
	r = f.mustOK("bash", bash("printf 'no newline'; kill -SEGV $$"))
	if r.Text() != "no newline\n[killed by SIGSEGV]\n" || r.Details.(builtin.BashDetails).ExitCode != -1 {
		t.Errorf("signal: %q %+v", r.Text(), r.Details)
	}
	r = f.mustOK("bash", bash("sh -c 'kill -KILL $$'; exit $?"))
	if !strings.HasSuffix(r.Text(), "Killed                  sh -c 'kill -KILL $$'\n[exit status 137 (killed by SIGKILL)]\n") {
		t.Errorf("128+N: %q", r.Text())
	}
	// stdin is /dev/null: a command that reads gets end of file at once.
	r = f.mustOK("bash", bash("read line; echo rc=$?"))
	if r.Text() != "rc=1\n[exit status 0]\n" {
		t.Errorf("stdin: %q", r.Text())
	}
}

func TestBashRunsInTheWorkspaceOrCwd(t *testing.T) {
	f := newFixture(t)
	f.write("sub/x.txt", "")
	r := f.mustOK("bash", bash("pwd"))
	if r.Text() != f.dir+"\n[exit status 0]\n" {
		t.Errorf("pwd %q", r.Text())
	}
	r = f.mustOK("bash", map[string]any{"command": "pwd; ls", "cwd": "sub"})
	if r.Text() != filepath.Join(f.dir, "sub")+"\nx.txt\n[exit status 0]\n" {
		t.Errorf("cwd %q", r.Text())
	}
	r = f.mustOK("bash", `{"cmd":"pwd","workdir":"sub"}`)
	if !strings.HasPrefix(r.Text(), filepath.Join(f.dir, "sub")+"\n") {
		t.Errorf("compat names %q", r.Text())
	}
	wantType(t, f.call("bash", map[string]any{"command": "pwd", "cwd": "sub/x.txt"}), tools.InvalidArgs, "is a file")
	wantType(t, f.call("bash", map[string]any{"command": "pwd", "cwd": "missing"}), tools.NotFound)
	wantType(t, f.call("bash", map[string]any{"command": "pwd", "cwd": "/etc"}), tools.PermissionDenied)
	wantType(t, f.call("bash", map[string]any{"command": "pwd", "cwd": "../.."}), tools.PermissionDenied)
	wantType(t, f.call("bash", bash("   ")), tools.InvalidArgs, "command is empty")
	wantType(t, f.call("bash", bash("echo a\x00b")), tools.InvalidArgs, "NUL")
}

func TestBashPreviewShowsTheExactCommand(t *testing.T) {
	f := newFixture(t, withBash(func(b *builtin.BashConfig) { b.MaxTimeout = 5 * time.Second }))
	var seen []*tools.Preview
	gate := func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		seen = append(seen, req.Preview)
		return agent.GateDecision{Allow: false}, nil
	}
	r := f.run(gate, "bash", map[string]any{"command": "go test ./...\necho done", "timeout": 3})
	wantType(t, r, tools.RejectedByUser)
	f.run(gate, "bash", map[string]any{"command": "go test ./...\necho done", "timeout": 3, "network": true})
	f.run(gate, "bash", map[string]any{"command": "true", "timeout": 100000})
	p := seen[0]
	want := tools.CommandPreview{Argv: []string{"bash", "-c", "go test ./...\necho done"}, Cwd: f.dir, TimeoutMS: 3000, Sandbox: "none"}
	if p.Command == nil || fmt.Sprint(*p.Command) != fmt.Sprint(want) {
		t.Errorf("command preview %+v, want %+v", p.Command, want)
	}
	if p.Summary != "run go test ./... in ." || !strings.HasPrefix(p.Binding, "exec:") {
		t.Errorf("summary %q binding %q", p.Summary, p.Binding)
	}
	if !seen[1].Command.Network || seen[1].Binding == p.Binding || !strings.HasSuffix(seen[1].Summary, "with network access") {
		t.Errorf("network preview %+v", seen[1])
	}
	if seen[2].Command.TimeoutMS != 5000 {
		t.Errorf("timeout not capped: %d", seen[2].Command.TimeoutMS)
	}
	r = f.mustOK("bash", map[string]any{"command": "true", "timeout": 100000})
	if !strings.Contains(r.Text(), "The timeout was capped at 5s") {
		t.Errorf("cap note missing: %s", r.Text())
	}
}

// failingRunner is a machine without a sandbox.
type failingRunner struct{}

func (failingRunner) Command(context.Context, []string, string, bool) (*sandbox.Cmd, error) {
	return nil, errors.New("no")
}
func (failingRunner) Describe(bool) (string, error) {
	return "", errors.New("no sandbox works on this machine (no Landlock)")
}

func TestBashWithoutASandboxFailsBeforeAsking(t *testing.T) {
	f := newFixture(t, withBash(func(b *builtin.BashConfig) { b.Runner = failingRunner{} }))
	gate := func(context.Context, agent.GateRequest) (agent.GateDecision, error) {
		t.Error("the gate was asked about a command that cannot run")
		return agent.GateDecision{Allow: true}, nil
	}
	wantType(t, f.run(gate, "bash", bash("true")), tools.ExecFailed, "no sandbox works on this machine", "Do not retry")
}

func TestBashTimeoutKillsTheWholeProcessGroup(t *testing.T) {
	f := newFixture(t, withBash(func(b *builtin.BashConfig) { b.Grace = 200 * time.Millisecond }))
	m := marker()
	start := time.Now()
	r := f.call("bash", map[string]any{"command": fmt.Sprintf("echo started; sleep %s & sleep %s", m, m), "timeout": 2})
	wantType(t, r, tools.Timeout, "started\n", "[timed out after 2s: stopped with SIGTERM]", "pass a larger timeout")
	if el := time.Since(start); el > 6*time.Second {
		t.Errorf("took %v", el)
	}
	d := r.Details.(builtin.BashDetails)
	if !d.TimedOut {
		t.Errorf("details %+v", d)
	}
	noSurvivors(t, m)
}

func TestBashIgnoredSIGTERMIsKilledAfterTheGrace(t *testing.T) {
	f := newFixture(t, withBash(func(b *builtin.BashConfig) { b.Grace = 300 * time.Millisecond }))
	m := marker()
	r := f.call("bash", map[string]any{"command": fmt.Sprintf("trap '' TERM; sleep %s & sleep %s", m, m), "timeout": 1})
	wantType(t, r, tools.Timeout, "timed out after 1s: killed by SIGKILL (it did not exit within 0.3s of SIGTERM)")
	noSurvivors(t, m)
}

func TestBashLeavesNoBackgroundProcessesBehind(t *testing.T) {
	f := newFixture(t)
	m := marker()
	r := f.mustOK("bash", bash(fmt.Sprintf("sleep %s & echo spawned", m)))
	if r.Text() != "spawned\n[exit status 0]\n" {
		t.Errorf("text %q", r.Text())
	}
	noSurvivors(t, m)
}

func TestBashCancellationStopsTheCommand(t *testing.T) {
	f := newFixture(t, withBash(func(b *builtin.BashConfig) { b.Grace = 200 * time.Millisecond }))
	m := marker()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // cancel once the command is running
		for i := 0; i < 1000 && !strings.Contains(strings.Join(f.progress(), ""), "started"); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	r := f.runCtx(ctx, nil, "bash", bash(fmt.Sprintf("echo started; sleep %s; echo never", m)))
	wantType(t, r, tools.Cancelled, "started\n", "cancelled after")
	if strings.Contains(r.Text(), "never") || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled run: %q after %v", r.Text(), time.Since(start))
	}
	noSurvivors(t, m)
}

func TestBashStripsANSIEscapes(t *testing.T) {
	f := newFixture(t)
	r := f.mustOK("bash", bash(`printf '\033[1;31mred\033[0m \033]0;title\007plain\033[2K\033(B!\n'`))
	if r.Text() != "red plain!\n[exit status 0]\n" {
		t.Errorf("text %q", r.Text())
	}
}

func TestBashKeepsHeadAndTailOnUTF8Boundaries(t *testing.T) {
	spill := t.TempDir()
	f := newFixture(t, withBash(func(b *builtin.BashConfig) {
		b.HeadBytes, b.TailBytes, b.SpillDir = 5, 5, spill
	}))
	r := f.mustOK("bash", bash("printf 'éééééééééééééééééééé'")) // 20 × 2 bytes
	want := "éé\n[… 32 bytes omitted …]\néé\n[exit status 0]\n"
	if !strings.HasPrefix(r.Text(), want) || !utf8.ValidString(r.Text()) {
		t.Errorf("text %q, want prefix %q", r.Text(), want)
	}
	if !r.Meta.Truncated || r.Meta.OriginalSize != 40 {
		t.Errorf("meta %+v", r.Meta)
	}
}

func TestBashSpillsTheFullOutputWhenTruncated(t *testing.T) {
	spill := t.TempDir()
	f := newFixture(t, withBash(func(b *builtin.BashConfig) {
		b.HeadBytes, b.TailBytes, b.SpillDir = 1000, 1000, spill
	}))
	var full strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&full, "%d\n", i)
	}
	r := f.mustOK("bash", bash("seq 1 20000"))
	if !r.Meta.Truncated || r.Meta.OriginalSize != int64(full.Len()) || r.Meta.SpillPath == "" {
		t.Fatalf("meta %+v", r.Meta)
	}
	b, err := os.ReadFile(r.Meta.SpillPath)
	if err != nil || string(b) != full.String() {
		t.Errorf("spill file holds %d bytes (%v), want the %d bytes of output", len(b), err, full.Len())
	}
	omitted := full.Len() - 2000
	for _, s := range []string{full.String()[:1000] + "\n[… " + fmt.Sprint(omitted) + " bytes omitted …]\n" + full.String()[full.Len()-1000:],
		"[exit status 0]", "The full output is saved in " + r.Meta.SpillPath, "grep -n PATTERN"} {
		if !strings.Contains(r.Text(), s) {
			t.Errorf("result lacks %q", s)
		}
	}
	// Without a spill directory the model is told how to see the rest.
	g := newFixture(t, withBash(func(b *builtin.BashConfig) { b.HeadBytes, b.TailBytes = 100, 100 }))
	r = g.mustOK("bash", bash("seq 1 20000"))
	if r.Meta.SpillPath != "" || !strings.Contains(r.Text(), "run the command again with its output filtered") {
		t.Errorf("no spill dir: %s", r.Text()[200:])
	}
}

func TestBashHugeOutputUsesBoundedMemory(t *testing.T) {
	spill := t.TempDir()
	f := newFixture(t, withBash(func(b *builtin.BashConfig) {
		b.SpillDir, b.SpillMaxBytes = spill, 1<<20
	}))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := f.mustOK("bash", bash("head -c 100000000 /dev/zero | tr '\\0' a"))
	runtime.ReadMemStats(&after)
	if r.Meta.OriginalSize != 100000000 || !r.Meta.Truncated {
		t.Errorf("meta %+v", r.Meta)
	}
	if n := len(r.Text()); n > 40<<10 {
		t.Errorf("result text is %d bytes", n)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 30<<20 {
		t.Errorf("allocated %d MiB while capturing 100 MB of output", grew>>20)
	}
	fi, err := os.Stat(r.Meta.SpillPath)
	if err != nil || fi.Size() != 1<<20 || !strings.Contains(r.Text(), "That file holds only the first 1048576 bytes") {
		t.Errorf("capped spill: %v %v", fi, err)
	}
}

func TestBashScrubsSecretsFromTheEnvironment(t *testing.T) {
	t.Setenv("FOO_TOKEN", "sekrit1")
	t.Setenv("MY_API_KEY", "sekrit2")
	t.Setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
	t.Setenv("FOO_PLAIN", "visible")
	sb, err := sandbox.New(sandbox.Options{Features: &sandbox.Features{}})
	if err != nil {
		t.Fatal(err)
	}
	// The sandbox's allowlist lets everything through here: the tool's own filter must act.
	runner := &builtin.SandboxRunner{Sandbox: sb, Policy: sandbox.Policy{Unsandboxed: true, EnvAllow: []string{"*"}}}
	f := newFixture(t, withBash(func(b *builtin.BashConfig) { b.Runner = runner }))
	r := f.mustOK("bash", bash("env"))
	if !strings.Contains(r.Text(), "FOO_PLAIN=visible") {
		t.Fatalf("FOO_PLAIN missing: the test does not test the filter\n%s", r.Text())
	}
	for _, s := range []string{"sekrit", "FOO_TOKEN", "SSH_AUTH_SOCK"} {
		if strings.Contains(r.Text(), s) {
			t.Errorf("%s reached the command", s)
		}
	}
}

func TestBashProgressIsStreamedAndThrottled(t *testing.T) {
	f := newFixture(t, withBash(func(b *builtin.BashConfig) { b.ProgressInterval = 100 * time.Millisecond }))
	start := time.Now()
	r := f.mustOK("bash", bash("for i in $(seq 1 25); do echo line$i; sleep 0.02; done"))
	elapsed := time.Since(start)
	updates := f.progress()
	joined := strings.Join(updates, "")
	if !strings.HasPrefix(r.Text(), joined) || !strings.HasPrefix(joined, "line1\n") || !strings.HasSuffix(joined, "line25\n") {
		t.Errorf("progress %q does not add up to the output %q", joined, r.Text())
	}
	limit := int(elapsed/(100*time.Millisecond)) + 2
	if len(updates) < 2 || len(updates) > limit {
		t.Errorf("%d progress updates in %v (want 2..%d: throttled to one per 100 ms)", len(updates), elapsed, limit)
	}
}

// sandboxFeatures skips the test loudly when this machine has no sandbox.
func sandboxFor(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Mode() == sandbox.ModeNone {
		t.Skipf("NO SANDBOX on this machine, sandboxed bash not tested: %s", sb.Features().Describe())
	}
	return sb
}

func TestBashRunsInTheSandbox(t *testing.T) {
	sb := sandboxFor(t)
	outside := t.TempDir()
	f := newFixture(t, withBash(func(b *builtin.BashConfig) {
		b.Runner = nil
		b.Sandbox = sb
		b.Policy = sandbox.Policy{TmpDir: t.TempDir(), StateDir: t.TempDir()}
		b.Grace = 300 * time.Millisecond
	}))
	f.write(".git/hooks/.keep", "")
	before := testutil.Snapshot(t, outside)

	var preview *tools.Preview
	gate := func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		preview = req.Preview
		return agent.GateDecision{Allow: true}, nil
	}
	r := f.run(gate, "bash", bash("echo inside > in.txt && cat in.txt"))
	wantType(t, r, tools.OK, "inside\n[exit status 0]")
	if !strings.Contains(preview.Command.Sandbox, "ubblewrap") && sb.Mode() == sandbox.ModeBwrap {
		t.Errorf("preview sandbox %q", preview.Command.Sandbox)
	}
	if f.content("in.txt") != "inside\n" {
		t.Error("a write inside the workspace did not land")
	}
	r = f.mustOK("bash", bash(fmt.Sprintf("echo x > %s/escaped.txt", outside)))
	if r.Details.(builtin.BashDetails).ExitCode == 0 {
		t.Errorf("writing outside the workspace succeeded: %s", r.Text())
	}
	sameSnapshot(t, before, testutil.Snapshot(t, outside))
	// A hook lands in the command's layer and is held; without bubblewrap (no layer) the
	// policy asks for every command instead (docs/security.md).
	r = f.mustOK("bash", bash("echo evil > .git/hooks/pre-commit"))
	if sb.Mode() == sandbox.ModeBwrap {
		if !strings.Contains(r.Text(), "NOT applied") {
			t.Errorf("writing .git/hooks was not held: %s", r.Text())
		}
		if _, err := os.Stat(filepath.Join(f.dir, ".git/hooks/pre-commit")); !os.IsNotExist(err) {
			t.Error(".git/hooks/pre-commit exists")
		}
	}
	r = f.mustOK("bash", map[string]any{"command": "exec 3<>/dev/tcp/127.0.0.1/9 && echo connected"})
	if strings.Contains(r.Text(), "connected") {
		t.Errorf("network reachable without network access: %s", r.Text())
	}

	// The placeholders the sandbox mounts over missing protected paths are gone afterwards.
	entries, _ := os.ReadDir(f.dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != ".git in.txt" {
		t.Errorf("workspace after sandboxed commands: %v", names)
	}

	// Grandchildren, even setsid'd ones, die with the sandbox on timeout.
	m := marker()
	r = f.call("bash", map[string]any{"command": fmt.Sprintf("setsid sleep %s & sleep %s & sleep %s", m, m, m), "timeout": 1})
	wantType(t, r, tools.Timeout)
	noSurvivors(t, m)
	// And when the command ends on its own.
	m = marker()
	f.mustOK("bash", bash(fmt.Sprintf("setsid sleep %s & sleep %s & echo ok", m, m)))
	noSurvivors(t, m)
}
