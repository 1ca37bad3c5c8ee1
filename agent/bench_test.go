package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/tools"
)

// BenchmarkPipelineNoop measures the kernel's overhead for one call of a no-op tool through every
// stage: breaker, Start, lookup, coercion and schema validation, Validator, Preview (an Update
// event), gate, revalidation, middleware, Execute, after-hook, End.
func BenchmarkPipelineNoop(b *testing.B) {
	pv := &tools.Preview{Summary: "noop", Binding: "x"}
	ft := &fakeTool{name: "noop", readOnly: true,
		validate: func(*tools.Call) error { return nil },
		preview:  func(*tools.Call) (*tools.Preview, error) { return pv, nil },
	}
	reg, _ := tools.NewRegistry(ft)
	cfg := Config{
		Registry:   reg,
		Gate:       func(context.Context, GateRequest) (GateDecision, error) { return GateDecision{Allow: true}, nil },
		Revalidate: func(context.Context, *tools.Call) error { return nil },
		Middleware: []Middleware{func(next ExecFunc) ExecFunc { return next }},
		After:      func(context.Context, *tools.Call, *tools.Result) (*ResultPatch, error) { return nil, nil },
	}
	events := 0
	k := NewKernel(cfg, func(Event) { events++ })
	calls := []ToolCall{call("c1", "noop", `{"n":"7","path":"a/b.go"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := k.RunBatch(ctx, calls, nil).Results[0]; r.IsError {
			b.Fatal(r.Text())
		}
	}
	if events == 0 {
		b.Fatal("no events")
	}
}

// BenchmarkScheduler64x10ms runs 64 concurrency-safe calls that each sleep 10 ms and reports the
// ratio of the batch's wall time to the ideal ceil(64/MaxToolConcurrency) × 10 ms.
func BenchmarkScheduler64x10ms(b *testing.B) {
	for _, limit := range []int{1, 4, 8, 16, 64} {
		b.Run(fmt.Sprintf("concurrency=%d", limit), func(b *testing.B) {
			ft := &fakeTool{name: "sleep", readOnly: true, exec: func(ctx context.Context, c *tools.Call) (tools.Output, error) {
				time.Sleep(10 * time.Millisecond)
				return tools.Output{}, nil
			}}
			reg, _ := tools.NewRegistry(ft)
			k := NewKernel(Config{Registry: reg, MaxToolConcurrency: limit}, nil)
			calls := make([]ToolCall, 64)
			for i := range calls {
				calls[i] = call(fmt.Sprintf("c%d", i), "sleep", `{}`)
			}
			ideal := time.Duration((64+limit-1)/limit) * 10 * time.Millisecond
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				k.RunBatch(context.Background(), calls, nil)
				total += time.Since(start)
			}
			b.ReportMetric(float64(total)/float64(b.N)/float64(ideal), "x-ideal")
		})
	}
}
