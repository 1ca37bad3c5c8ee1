//go:build unix

package search

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the user+system CPU time of this process and its waited-for children: a
// measure that, unlike wall time, does not depend on what else runs on the machine.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// measure runs f b.N times and reports CPU milliseconds per operation next to wall time.
func measure(b *testing.B, f func()) {
	b.Helper()
	start := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
}

func goroot(b *testing.B) string {
	b.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skip("go env GOROOT: ", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "src")
}

// BenchmarkGrepGOROOT compares, in one run, ripgrep itself (rg-cli: same filtering flags,
// standard output to io.Discard), Grep through ripgrep (agentd-rg) and the Go engine
// (agentd-go) on $GOROOT/src, each also as the grep tool runs it (-tool).
//
//	go test -run '^$' -bench GrepGOROOT -benchtime 5x ./tools/search/
func BenchmarkGrepGOROOT(b *testing.B) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Skip("!!!!!!!! rg is not installed: nothing to compare with !!!!!!!!")
	}
	src := goroot(b)
	patterns := []struct{ name, pat string }{
		{"literal", "func main"},
		{"icase-literal", "(?i)errclosed"},
		{"weak-literal-regex", `\w+Error\(`},
		{"no-match-literal", "zqxjkvbwy_no_such_text"},
	}
	for _, p := range patterns {
		b.Run(p.name+"/rg-cli", func(b *testing.B) {
			args := append(append([]string(nil), rgBaseArgs...), "-n", "--glob", "!.git", "--regexp", p.pat, ".")
			measure(b, func() {
				cmd := exec.Command(rg, args...)
				cmd.Dir = src
				cmd.Stdout = io.Discard
				if err := cmd.Run(); err != nil {
					if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
						b.Fatal(err)
					}
				}
			})
		})
		// -tool: as the grep tool runs it, withholding sensitive names and hard links (a link
		// count per file the search visits; with ripgrep, a walk of its own for the count).
		for _, e := range []struct {
			name   string
			engine Engine
			tool   bool
		}{{"agentd-rg", EngineRipgrep, false}, {"agentd-rg-tool", EngineRipgrep, true}, {"agentd-go", EngineGo, false}, {"agentd-go-tool", EngineGo, true}} {
			b.Run(p.name+"/"+e.name, func(b *testing.B) {
				var res *GrepResult
				measure(b, func() {
					var err error
					o := GrepOptions{Root: src, Pattern: p.pat, Engine: e.engine}
					if e.tool {
						o.Withhold, o.WithholdLinked = sensitive, true
					}
					res, err = Grep(context.Background(), o)
					if err != nil {
						b.Fatal(err)
					}
				})
				b.ReportMetric(float64(res.TotalMatches), "matches")
			})
		}
	}
}

// BenchmarkGlobGOROOT compares Glob("**/*.go") on $GOROOT/src with fd and find.
func BenchmarkGlobGOROOT(b *testing.B) {
	src := goroot(b)
	b.Run("agentd-glob", func(b *testing.B) {
		var res *GlobResult
		measure(b, func() {
			var err error
			res, err = Glob(context.Background(), GlobOptions{Root: src, Pattern: "**/*.go"})
			if err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(float64(res.Total), "files")
	})
	for _, c := range []struct {
		name string
		bin  string
		args []string
	}{
		{"fdfind", "fdfind", []string{"-g", "*.go"}},
		{"find", "find", []string{".", "-name", "*.go"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			bin, err := exec.LookPath(c.bin)
			if err != nil {
				b.Skip("!!!!!!!! " + c.bin + " is not installed !!!!!!!!")
			}
			measure(b, func() {
				cmd := exec.Command(bin, c.args...)
				cmd.Dir = src
				cmd.Stdout = io.Discard
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
