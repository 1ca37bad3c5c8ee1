package ollama

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
)

// Placement is how a loaded model sits in memory at one context window, as /api/ps reports it.
type Placement struct {
	NumCtx int
	// Size is the whole model in memory (weights, KV cache, buffers); VRAM is the part the GPU
	// holds. VRAM 0 with Size > 0: it runs on the CPU.
	Size, VRAM int64
}

// OnGPU reports a model wholly in GPU memory.
func (p Placement) OnGPU() bool { return p.Size > 0 && p.VRAM >= p.Size }

// Measurement is what `agentd doctor --model` measures of a model on this machine.
type Measurement struct {
	// At is the placement at the window the sessions use; Trained the placement at the model's
	// trained length, when that is larger (nil when not measured), and TrainedErr why it could
	// not be loaded there.
	At         Placement
	Trained    *Placement
	TrainedErr error
	// PromptTokens and EvalTokens are the probe's; PromptRate and EvalRate its speeds in tokens a
	// second (0 when the server did not time them).
	PromptTokens, EvalTokens int
	PromptRate, EvalRate     float64
	Load                     time.Duration
	// Largest is the largest window that keeps the model wholly in GPU memory, a multiple of
	// NumCtxStep (0: none does, or no GPU is in use); estimated from what each token of the window
	// costs between the two placements.
	Largest int
	// PerToken is that cost, in bytes (0 when only one window was measured).
	PerToken int64
}

// Measure loads the model at its trained length (when larger than numCtx) and reads where it sits,
// then sends a short probe at numCtx and reads the speeds and where it sits there. The model is
// left loaded at numCtx, the window sessions use, so the next session does not reload it.
func (c *Client) Measure(ctx context.Context, numCtx, trained int) (*Measurement, error) {
	if err := c.needModel(); err != nil {
		return nil, err
	}
	m := &Measurement{}
	if trained > numCtx {
		if err := c.renew(ctx, trained); err != nil {
			m.TrainedErr = err
		} else if p, ok, err := c.placement(ctx); err != nil {
			return nil, err
		} else if ok {
			m.Trained = &p
		}
	}
	if err := c.probe(ctx, numCtx, m); err != nil {
		return nil, err
	}
	p, ok, err := c.placement(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s answered the probe but /api/ps does not list it", c.model)
	}
	m.At = p
	m.estimateLargest(trained)
	return m, nil
}

// probe sends a prompt of a few hundred tokens, different at every call (the prompt cache must
// not serve it), and asks for a short answer.
func (c *Client) probe(ctx context.Context, numCtx int, m *Measurement) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Probe %d. Here is some code:\n", time.Now().UnixNano())
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "func scale%d(x int) int { return x * %d }\n", i, i)
	}
	b.WriteString("Count from 1 to 60, separated by spaces, and nothing else.")
	no := false
	req := &api.ChatRequest{
		Model:    c.model,
		Messages: []api.Message{{Role: "user", Content: b.String()}},
		Options:  map[string]any{"num_ctx": numCtx, "num_predict": 64, "temperature": 0},
		Think:    &api.ThinkValue{Value: false},
		Truncate: &no,
		Shift:    &no,
	}
	if c.keepAlive != nil {
		req.KeepAlive = &api.Duration{Duration: *c.keepAlive}
	}
	ctx, ex := withExchange(ctx)
	var done *api.ChatResponse
	err := c.api.Chat(ctx, req, func(r api.ChatResponse) error {
		if r.Done {
			done = &r
		}
		return nil
	})
	if err != nil || done == nil {
		if err == nil {
			err = fmt.Errorf("the probe's reply ended without its done chunk")
		}
		return c.fail(ctx, err, ex.Status())
	}
	m.PromptTokens, m.EvalTokens, m.Load = done.PromptEvalCount, done.EvalCount, done.LoadDuration
	if d := done.PromptEvalDuration.Seconds(); d > 0 {
		m.PromptRate = float64(done.PromptEvalCount) / d
	}
	if d := done.EvalDuration.Seconds(); d > 0 {
		m.EvalRate = float64(done.EvalCount) / d
	}
	return nil
}

// placement reads /api/ps for the model.
func (c *Client) placement(ctx context.Context) (Placement, bool, error) {
	running, err := c.api.ListRunning(ctx)
	if err != nil {
		return Placement{}, false, c.classify(err, 0)
	}
	for _, r := range running.Models {
		if sameModel(r.Name, c.model) || sameModel(r.Model, c.model) {
			return Placement{NumCtx: r.ContextLength, Size: r.Size, VRAM: r.SizeVRAM}, true, nil
		}
	}
	return Placement{}, false, nil
}

// estimateLargest: each token of the window costs (size at the trained length − size at the
// window in use) / (the difference in tokens); the GPU's share for this model is at least what it
// held in either placement. The largest window is what that share holds, rounded down to a
// multiple of NumCtxStep.
func (m *Measurement) estimateLargest(trained int) {
	at := m.At
	if at.VRAM == 0 {
		return // no GPU in use
	}
	if m.Trained != nil && m.Trained.NumCtx > at.NumCtx && m.Trained.Size > at.Size {
		m.PerToken = (m.Trained.Size - at.Size) / int64(m.Trained.NumCtx-at.NumCtx)
	}
	switch {
	case m.Trained != nil && m.Trained.OnGPU():
		m.Largest = m.Trained.NumCtx
	case at.OnGPU() && m.Trained == nil:
		m.Largest = at.NumCtx // nothing larger was measured
	case m.PerToken > 0:
		gpu := max(at.VRAM, m.Trained.VRAM)
		weights := at.Size - m.PerToken*int64(at.NumCtx)
		if room := gpu - weights; room > 0 {
			m.Largest = int(room/m.PerToken) / NumCtxStep * NumCtxStep
		}
		if trained > 0 {
			m.Largest = min(m.Largest, trained)
		}
	case at.OnGPU():
		m.Largest = at.NumCtx
	}
}

// FormatBytes formats bytes for a report: "5.2 GB".
func FormatBytes(n int64) string {
	return strconv.FormatFloat(float64(n)/1e9, 'f', 1, 64) + " GB"
}
