//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// requireCgroups skips (or, in CI, fails) when this machine cannot give
// commands a cgroup with what the test needs. Creating cgroups needs root or
// a delegated cgroup subtree (a systemd user service with Delegate=yes); CI
// runs as root, so there the tests must run.
func requireCgroups(t *testing.T, kill, memory, pids bool) {
	t.Helper()
	cs := features().Cgroup
	var missing []string
	if kill && !cs.Kill() {
		missing = append(missing, "kill")
	}
	if memory && !cs.Memory() {
		missing = append(missing, "memory controller")
	}
	if pids && !cs.Pids() {
		missing = append(missing, "pids controller")
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("per-command cgroups unavailable (%s): %s; needs root or a delegated cgroup v2 subtree (features: %+v)",
		strings.Join(missing, ", "), orUnknown(cs.Err), cs)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// TestSetsidDiesOnCancel: a command that put a grandchild in a session of
// its own (out of the process group the daemon signals) is cancelled through
// its context (a timeout is the same path: exec runs Cancel when the context
// is done). The grandchild must be gone once Wait returns — before Release —
// in every mode: bubblewrap's PID namespace, or the command's cgroup.
func TestSetsidDiesOnCancel(t *testing.T) {
	forModes(t, func(t *testing.T, sb *Sandbox) {
		if sb.Mode() == ModeLandlock {
			requireCgroups(t, true, false, false)
		}
		e := newEnv(t)
		m := fmt.Sprintf("1000.%06d", rand.IntN(1000000))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c, err := sb.Command(ctx, e.policy(), []string{"bash", "-c",
			fmt.Sprintf("setsid sleep %[1]s1 & sleep %[1]s2", m)}, e.ws)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		waitStarted(t, "sleep\x00"+m+"1", "sleep\x00"+m+"2")
		cancel()
		c.Wait()
		waitGone(t, m)
	})
}

// TestSetsidDiesOnGroupKill: SIGKILL sent straight to the process group
// kills the ModeLandlock helper before it can clean up; Release must still
// kill the setsid'd grandchild (through the cgroup). This is
// TestKillDuringSetup without the randomness.
func TestSetsidDiesOnGroupKill(t *testing.T) {
	forModes(t, func(t *testing.T, sb *Sandbox) {
		if sb.Mode() == ModeLandlock {
			requireCgroups(t, true, false, false)
		}
		e := newEnv(t)
		m := fmt.Sprintf("1000.%06d", rand.IntN(1000000))
		c, err := sb.Command(context.Background(), e.policy(), []string{"bash", "-c",
			fmt.Sprintf("setsid sleep %[1]s1 & sleep %[1]s2", m)}, e.ws)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		waitStarted(t, "sleep\x00"+m+"1", "sleep\x00"+m+"2")
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		c.Wait()
		c.Release()
		waitGone(t, m)
	})
}

// procCgroups returns the cgroup lines of /proc/PID/cgroup.
func procCgroups(t *testing.T, pid string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		t.Fatalf("reading the cgroups of %s: %v", pid, err)
	}
	return string(b)
}

// TestCommandCgroup: the command's processes are in its cgroups (v2 and,
// where the limits live there, v1), the limits are written, and Release
// removes the cgroups.
func TestCommandCgroup(t *testing.T) {
	requireCgroups(t, true, true, true)
	forModes(t, func(t *testing.T, sb *Sandbox) {
		e := newEnv(t)
		m := fmt.Sprintf("1000.%06d", rand.IntN(1000000))
		p := e.policy()
		p.Limits = Limits{MemoryBytes: 300 << 20, Pids: 77}
		c, err := sb.Command(context.Background(), p, []string{"bash", "-c", "sleep " + m}, e.ws)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		if c.cg == nil {
			t.Fatalf("no cgroup for the command although the machine has them: %+v", features().Cgroup)
		}
		dirs := append([]string{c.cg.v2}, c.cg.v1...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		waitStarted(t, "sleep\x00"+m)
		pids := findMarker("sleep\x00" + m)
		pid, _, _ := strings.Cut(pids[0], ":")
		in := procCgroups(t, pid)
		name := filepath.Base(dirs[0])
		for _, d := range dirs {
			if d == "" {
				continue
			}
			if filepath.Base(d) != name {
				t.Errorf("cgroup %s is not named %s", d, name)
			}
			// The sleep (a grandchild of the first process) is listed
			// in the cgroup's cgroup.procs.
			if procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs")); !strings.Contains(" "+strings.Join(strings.Fields(string(procs)), " ")+" ", " "+pid+" ") {
				t.Errorf("the command's process %s is not in %s (cgroup.procs: %q; /proc/%s/cgroup:\n%s)", pid, d, procs, pid, in)
			}
		}
		cs := features().Cgroup
		wantMem, wantPids := "memory.max", "pids.max"
		memDir, pidsDir := c.cg.v2, c.cg.v2
		for _, d := range c.cg.v1 {
			if strings.HasPrefix(d, filepath.Dir(cs.V1Memory+"/x")) && cs.V1Memory != "" && !cs.V2Memory {
				memDir, wantMem = d, "memory.limit_in_bytes"
			}
			if strings.HasPrefix(d, filepath.Dir(cs.V1Pids+"/x")) && cs.V1Pids != "" && !cs.V2Pids {
				pidsDir = d
			}
		}
		if b, _ := os.ReadFile(filepath.Join(memDir, wantMem)); strings.TrimSpace(string(b)) != fmt.Sprint(300<<20) {
			t.Errorf("%s/%s = %q, want %d", memDir, wantMem, b, 300<<20)
		}
		if b, _ := os.ReadFile(filepath.Join(pidsDir, wantPids)); strings.TrimSpace(string(b)) != "77" {
			t.Errorf("%s/%s = %q, want 77", pidsDir, wantPids, b)
		}
		c.Kill()
		c.Wait()
		c.Release()
		waitGone(t, m)
		for _, d := range dirs {
			if d == "" {
				continue
			}
			if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("cgroup %s still exists after Release (stat: %v)", d, err)
			}
		}
	})
}

// TestMemoryLimit: a command that allocates more than its memory limit is
// killed by the kernel, and Events says so; one that stays below runs.
func TestMemoryLimit(t *testing.T) {
	requireCgroups(t, true, true, false)
	forModes(t, func(t *testing.T, sb *Sandbox) {
		e := newEnv(t)
		p := e.policy()
		p.Limits = Limits{MemoryBytes: 128 << 20}
		r := runProbe(t, sb, p, "alloc", "16")
		if r.code != 0 || !strings.Contains(r.stdout, "allocated=16") {
			t.Fatalf("16 MiB under a 128 MiB limit must work:\n%s", r)
		}
		if ev := r.cmd.Events(); ev.OOMKills != 0 {
			t.Errorf("%d OOM kills under the limit", ev.OOMKills)
		}
		r = runProbe(t, sb, p, "alloc", "512")
		if r.code == 0 || strings.Contains(r.stdout, "allocated=") {
			t.Fatalf("512 MiB under a 128 MiB limit succeeded:\n%s", r)
		}
		if r.code != 128+int(syscall.SIGKILL) {
			t.Errorf("exit %d, want %d (SIGKILL by the OOM killer)\n%s", r.code, 128+int(syscall.SIGKILL), r)
		}
		ev := r.cmd.Events()
		if ev.OOMKills < 1 {
			t.Errorf("Events().OOMKills = %d, want an OOM kill", ev.OOMKills)
		}
		if s := ev.String(); !strings.Contains(s, "out of memory") {
			t.Errorf("Events().String() = %q, want it to say out of memory", s)
		}
	})
}

// TestPidsLimit: a command cannot have more processes (and threads) than its
// limit; the forks beyond it fail, Events counts them, and what it started
// dies with it.
func TestPidsLimit(t *testing.T) {
	requireCgroups(t, true, false, true)
	forModes(t, func(t *testing.T, sb *Sandbox) {
		e := newEnv(t)
		p := e.policy()
		p.Limits = Limits{Pids: 64}
		m := fmt.Sprintf("1000.%06d", rand.IntN(1000000))
		r := runProbe(t, sb, p, "spawn", "300", m)
		var started int
		for _, l := range strings.Split(r.stdout, "\n") {
			if v, ok := strings.CutPrefix(l, "started="); ok {
				fmt.Sscan(v, &started)
			}
		}
		if !strings.Contains(r.stdout, "result=EAGAIN") {
			t.Errorf("spawning 300 processes under a limit of 64: want EAGAIN\n%s", r)
		}
		if started == 0 || started >= 64 {
			t.Errorf("started %d processes under a limit of 64\n%s", started, r)
		}
		if ev := r.cmd.Events(); ev.PidsLimited < 1 || !strings.Contains(ev.String(), "process limit") {
			t.Errorf("Events().PidsLimited = %d (%q), want refused forks", ev.PidsLimited, ev.String())
		}
		waitGone(t, m)
	})
}

// TestLimitGaps: without per-command cgroups, the limits that cannot be
// enforced are listed in Cmd.Gaps and in the summary, and ModeLandlock keeps
// its setsid gap; with them, the summary shows the limits.
func TestLimitGaps(t *testing.T) {
	f := features()
	for _, m := range sandboxModes {
		t.Run(m.String(), func(t *testing.T) {
			requireMode(t, m)
			none := f
			none.Cgroup = CgroupSupport{Err: "test: none"}
			sb, err := New(Options{Mode: m, Features: &none, Limits: Limits{MemoryBytes: 1 << 30, Pids: 100}})
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t)
			c, err := sb.Command(context.Background(), e.policy(), []string{"true"}, e.ws)
			if err != nil {
				t.Fatal(err)
			}
			c.Release()
			gaps := strings.Join(c.Gaps, "\n")
			for _, want := range []string{"no memory limit", "no process limit"} {
				if !strings.Contains(gaps, want) {
					t.Errorf("gaps without cgroups lack %q:\n%s", want, gaps)
				}
			}
			if m == ModeLandlock && !strings.Contains(gaps, "setsid survive") {
				t.Errorf("ModeLandlock without cgroups must say setsid escapes survive a SIGKILL:\n%s", gaps)
			}
			if !strings.Contains(c.Summary, "NO memory limit") || !strings.Contains(c.Summary, "NO process limit") {
				t.Errorf("summary without cgroups = %q", c.Summary)
			}
			if d := none.Describe(); !strings.Contains(d, "NO per-command cgroup (test: none)") || !strings.Contains(d, "NO memory limit") {
				t.Errorf("Describe without cgroups = %q", d)
			}

			if !f.Cgroup.Memory() || !f.Cgroup.Pids() {
				return
			}
			sb, err = New(Options{Mode: m, Features: &f, Limits: Limits{MemoryBytes: 1 << 30, Pids: 100}})
			if err != nil {
				t.Fatal(err)
			}
			p := e.policy()
			p.Limits.Pids = 50
			c, err = sb.Command(context.Background(), p, []string{"true"}, e.ws)
			if err != nil {
				t.Fatal(err)
			}
			c.Release()
			if !strings.HasSuffix(c.Summary, "memory 1 GiB, 50 processes") && !strings.Contains(c.Summary, "; memory 1 GiB, 50 processes;") {
				t.Errorf("summary = %q, want the limits (memory 1 GiB, 50 processes)", c.Summary)
			}
			for _, g := range c.Gaps {
				if strings.Contains(g, "limit") || strings.Contains(g, "setsid") {
					t.Errorf("gap %q although cgroups are in force", g)
				}
			}
		})
	}
}

func TestLimitsParseFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"4G", 4 << 30}, {"4GiB", 4 << 30}, {"4gb", 4 << 30}, {"512M", 512 << 20}, {"1536k", 1536 << 10},
		{"8589934592", 8 << 30}, {"1T", 1 << 40}, {"off", -1}, {"unlimited", -1},
	} {
		if got, err := ParseBytes(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "G", "4X", "-1G", "0", "1.5G", "99999999999T"} {
		if got, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", bad, got)
		}
	}
	for n, want := range map[int64]string{4 << 30: "4 GiB", 512 << 20: "512 MiB", 1536 << 10: "1536 KiB", 3<<29 + 1: "1.5 GiB", 100: "100 bytes"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	d := DefaultLimits()
	if d.MemoryBytes < 1<<30 || d.MemoryBytes > 8<<30 || d.Pids < 512 || d.Pids > 4096 {
		t.Errorf("DefaultLimits = %+v, outside the documented bounds", d)
	}
	if got := (Limits{MemoryBytes: -1, Pids: 7}).or(d); got.MemoryBytes != -1 || got.Pids != 7 {
		t.Errorf("explicit limits were replaced by defaults: %+v", got)
	}
}

// TestHelperJoinRefusesOtherFiles: the helper's join (ModeLandlock) writes
// only to cgroup.procs files.
func TestHelperJoinRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command(testBinary(t), HelperArg,
		fmt.Sprintf(`{"join":[%q]}`, filepath.Join(dir, "memory.max")), "--", "true").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitHelperFailed || !strings.Contains(string(out), "is not a cgroup.procs file") {
		t.Errorf("join of a file that is not cgroup.procs: err %v, output %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "memory.max")); err == nil {
		t.Errorf("the helper wrote a file it must not")
	}
}

// TestStaleCgroupsSwept: an empty per-command cgroup left by a dead agentd
// is removed; one of a live process is not.
func TestStaleCgroupsSwept(t *testing.T) {
	requireCgroups(t, true, false, false)
	parent := features().Cgroup.V2Parent
	if parent == "" {
		parent = features().Cgroup.V1Pids
	}
	// A pid that is certainly dead: a child we reaped.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(parent, fmt.Sprintf("agentd-%d-1", dead.Process.Pid))
	live := filepath.Join(parent, fmt.Sprintf("agentd-%d-999999", os.Getppid()))
	for _, d := range []string{stale, live} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { syscall.Rmdir(stale); syscall.Rmdir(live) })
	sweepStale(parent)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale cgroup %s not removed (stat: %v)", stale, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the cgroup of a live process was removed: %v", err)
	}
}

// TestPlacementFailureRunsNothing: in bubblewrap mode with cgroup v1 limits
// the daemon places bubblewrap's child in the v1 cgroups while it waits on
// --block-fd. When that fails (here: a v1 cgroup removed before Start), Start
// fails, and nothing of the command ran or is left.
func TestPlacementFailureRunsNothing(t *testing.T) {
	requireCgroups(t, true, true, true)
	sb := requireMode(t, ModeBwrap)
	e := newEnv(t)
	m := fmt.Sprintf("1000.%06d", rand.IntN(1000000))
	p := e.policy()
	p.Limits = Limits{MemoryBytes: 300 << 20, Pids: 77}
	ran := filepath.Join(e.ws, "ran")
	c, err := sb.Command(context.Background(), p, []string{"bash", "-c", "echo x > " + ran + "; sleep " + m}, e.ws)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if c.cg == nil || len(c.cg.v1) == 0 {
		t.Skipf("this machine keeps no limit in a cgroup v1 hierarchy (%+v): nothing is placed by the daemon", features().Cgroup)
	}
	if err := syscall.Rmdir(c.cg.v1[0]); err != nil {
		t.Fatal(err)
	}
	err = c.Start()
	if err == nil || !strings.Contains(err.Error(), "placing the command in its cgroups") {
		t.Fatalf("Start with a v1 cgroup gone: err %v, want a placement error", err)
	}
	if c.ProcessState == nil {
		t.Errorf("Start failed but did not reap bubblewrap")
	}
	c.Release()
	if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran although it could not be placed in its cgroups (stat %s: %v)", ran, err)
	}
	if left := findMarker("sleep\x00" + m); len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
	for _, d := range append([]string{c.cg.v2}, c.cg.v1...) {
		if _, err := os.Stat(d); d != "" && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s still exists after Release (stat: %v)", d, err)
		}
	}
}
