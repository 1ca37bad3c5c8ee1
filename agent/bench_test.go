package agent

import (
	"context"
	"fmt"
	"runtime"
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

// BenchmarkLoopStep measures the loop's own cost per model step and per tool round trip against
// a zero-latency model: each iteration is one turn of two steps (a tool call, then an answer).
func BenchmarkLoopStep(b *testing.B) {
	reg, _ := tools.NewRegistry(&fakeTool{name: "read", readOnly: true})
	m := &instantModel{}
	ends := make(chan struct{}, 1)
	s, err := NewSession(SessionConfig{ID: "bench", Model: m, Info: ModelInfo{Tools: true}, NumCtx: 1 << 20,
		Kernel: Config{Registry: reg}, Sink: func(e Event) {
			if _, ok := e.(TurnEnd); ok {
				ends <- struct{}{}
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%50 == 49 { // a fresh session every 50 turns: the cost of a typical session, not of one endless one
			b.StopTimer()
			s.Close()
			if s, err = NewSession(s.cfg); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, err := s.Prompt("go"); err != nil {
			b.Fatal(err)
		}
		<-ends
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "ns/step")
	s.Close()
}

// instantModel alternates a tool call and an answer, with no latency.
type instantModel struct{ n int }

func (m *instantModel) Info(context.Context) (ModelInfo, error) { return ModelInfo{Tools: true}, nil }

func (m *instantModel) Chat(ctx context.Context, req *ModelRequest, onDelta func(Delta)) (*ModelResponse, error) {
	m.n++
	if m.n%2 == 1 {
		return &ModelResponse{Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: fmt.Sprintf("c%d", m.n), Name: "read", Arguments: []byte(`{"path":"a"}`)}}},
			DoneReason: "stop", Usage: Usage{PromptTokens: 100}}, nil
	}
	onDelta(Delta{Text: "done"})
	return &ModelResponse{Message: Message{Role: RoleAssistant, Content: "done"}, DoneReason: "stop", Usage: Usage{PromptTokens: 100}}, nil
}

// BenchmarkIdleSessionMemory reports the heap an idle session holds beyond its history.
func BenchmarkIdleSessionMemory(b *testing.B) {
	reg, _ := tools.NewRegistry(&fakeTool{name: "read", readOnly: true})
	const n = 200
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		sessions := make([]*Session, n)
		for i := range sessions {
			s, err := NewSession(SessionConfig{ID: "s", Model: &instantModel{}, Info: ModelInfo{Tools: true}, NumCtx: 32768,
				Kernel: Config{Registry: reg}})
			if err != nil {
				b.Fatal(err)
			}
			sessions[i] = s
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/session")
		for _, s := range sessions {
			s.Close()
		}
	}
}
