//go:build linux

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSandboxTrue measures the start cost of each mode: `bash -c true`
// plainly, through the Landlock + seccomp helper, and through bubblewrap +
// the helper.
//
// The per-mode sub-benchmarks run one after the other; "interleaved" runs the
// three in turn within each iteration and reports the median of each plus
// the median added latency of the two sandboxed modes (ms), which stays
// meaningful on a machine whose load changes during the run.
func BenchmarkSandboxTrue(b *testing.B) {
	base := b.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(ws+"/.git/hooks", 0o755); err != nil {
		b.Fatal(err)
	}
	p := Policy{WorkspaceRoots: []string{ws}, TmpDir: base, LayerDir: filepath.Join(base, "layers")}
	plain := func(b *testing.B) func() {
		return func() {
			c := exec.Command("bash", "-c", "true")
			c.Dir = ws
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	}
	sandboxed := func(sb *Sandbox) func(b *testing.B) func() {
		return func(b *testing.B) func() { return func() { runLikeAgentd(b, sb, p, ws, "true") } }
	}
	type maker = func(b *testing.B) func()
	once := func(b *testing.B, mk maker) time.Duration {
		t0 := time.Now()
		mk(b)()
		return time.Since(t0)
	}

	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			once(b, plain)
		}
	})
	for _, m := range []Mode{ModeLandlock, ModeBwrap} {
		b.Run(m.String(), func(b *testing.B) {
			mk := sandboxed(requireMode(b, m))
			for b.Loop() {
				once(b, mk)
			}
		})
	}
	b.Run("interleaved", func(b *testing.B) {
		ll := sandboxed(requireMode(b, ModeLandlock))
		bw := sandboxed(requireMode(b, ModeBwrap))
		var tp, tl, tb, dl, db []float64
		ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 }
		for b.Loop() {
			p := once(b, plain)
			l := once(b, ll)
			w := once(b, bw)
			tp, tl, tb = append(tp, ms(p)), append(tl, ms(l)), append(tb, ms(w))
			dl, db = append(dl, ms(l-p)), append(db, ms(w-p))
		}
		median := func(v []float64) float64 {
			slices.Sort(v)
			return v[len(v)/2]
		}
		b.ReportMetric(median(tp), "plain-ms")
		b.ReportMetric(median(tl), "landlock-ms")
		b.ReportMetric(median(tb), "bwrap-ms")
		b.ReportMetric(median(dl), "landlock-added-ms")
		b.ReportMetric(median(db), "bwrap-added-ms")
		b.ReportMetric(0, "ns/op")
	})
}

// runLikeAgentd runs script the way the bash tool does: Command, Cmd.Start (the start protocol:
// cgroup placement through --block-fd, the lifeline), Wait, the change set, Release. Running the
// embedded exec.Cmd directly skips that protocol, and bubblewrap then waits forever on
// --block-fd wherever the command's cgroups include v1 hierarchies.
func runLikeAgentd(b *testing.B, sb *Sandbox, p Policy, dir, script string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := sb.Command(ctx, p, []string{"bash", "-c", script}, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Release()
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	if _, err := c.Changes(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCommandLargeWorkspace measures what a command costs in a workspace of 100,000
// directories, against an empty workspace and bare bubblewrap (`bwrap --ro-bind / / … bash -c
// true`, no agentd). The first command in the large workspace builds the process's mask index
// (a listing and a watch per directory: 100k-first-ms); later ones reuse it, with nothing
// changed in between (100k-dirs-ms) or with a file written in one directory before each
// (100k-edited-ms). Reported as medians of interleaved runs (ms). (The directories were just
// made: the few without a watch, past the watch budget, are listed once more in the first
// rounds, until their timestamps are old enough to tell: racyWindow.)
func BenchmarkCommandLargeWorkspace(b *testing.B) {
	sb := requireMode(b, ModeBwrap)
	base := b.TempDir()
	empty, large := filepath.Join(base, "empty"), filepath.Join(base, "large")
	for i := range 100 {
		for j := range 1000 {
			if err := os.MkdirAll(filepath.Join(large, strconv.Itoa(i), strconv.Itoa(j)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := os.MkdirAll(empty, 0o755); err != nil {
		b.Fatal(err)
	}
	pol := func(ws string) Policy {
		return Policy{WorkspaceRoots: []string{ws}, TmpDir: base, LayerDir: filepath.Join(base, "layers")}
	}
	bare := func() {
		c := exec.Command(sb.Features().BwrapPath, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
			"--unshare-all", "--die-with-parent", "--chdir", large, "bash", "-c", "true")
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	ms := func(f func()) float64 {
		t0 := time.Now()
		f()
		return time.Since(t0).Seconds() * 1e3
	}
	runLikeAgentd(b, sb, pol(empty), empty, "echo")
	first := ms(func() { runLikeAgentd(b, sb, pol(large), large, "echo") })
	var te, tl, td, tb []float64
	n := 0
	for b.Loop() {
		te = append(te, ms(func() { runLikeAgentd(b, sb, pol(empty), empty, "echo") }))
		tl = append(tl, ms(func() { runLikeAgentd(b, sb, pol(large), large, "echo") }))
		n++
		if err := os.WriteFile(filepath.Join(large, "50", "500", "edit"+strconv.Itoa(n)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		td = append(td, ms(func() { runLikeAgentd(b, sb, pol(large), large, "echo") }))
		tb = append(tb, ms(bare))
	}
	median := func(v []float64) float64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.ReportMetric(median(te), "empty-ms")
	b.ReportMetric(first, "100k-first-ms")
	b.ReportMetric(median(tl), "100k-dirs-ms")
	b.ReportMetric(median(td), "100k-edited-ms")
	b.ReportMetric(median(tb), "bare-bwrap-ms")
	b.ReportMetric(0, "ns/op")
}
