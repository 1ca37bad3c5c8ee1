//go:build linux

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	p := Policy{WorkspaceRoots: []string{ws}, TmpDir: base}
	type maker func(b *testing.B) (*exec.Cmd, func())
	plain := func(*testing.B) (*exec.Cmd, func()) {
		c := exec.Command("bash", "-c", "true")
		c.Dir = ws
		return c, func() {}
	}
	sandboxed := func(sb *Sandbox) maker {
		return func(b *testing.B) (*exec.Cmd, func()) {
			c, err := sb.Command(context.Background(), p, []string{"bash", "-c", "true"}, ws)
			if err != nil {
				b.Fatal(err)
			}
			return c.Cmd, c.Release
		}
	}
	once := func(b *testing.B, mk maker) time.Duration {
		t0 := time.Now()
		cmd, release := mk(b)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		release()
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
