package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/ollama"
	"github.com/agentd/agentd/tools"
)

// measurer is a model client that can measure its model on this machine (Ollama's).
type measurer interface {
	Measure(ctx context.Context, numCtx, trained int) (*ollama.Measurement, error)
}

// contextLengthHow says where the context-length setting goes.
const contextLengthHow = "--context-length N, `context-length N` in $XDG_CONFIG_HOME/agentd/config or AGENTD_CONTEXT_LENGTH=N " +
	"(editors: agentd.contextLength in VS Code, context_length in Neovim)"

// doctorContext checks that the model's trained context holds agentd's prompt and room to work,
// and says which window sessions will use.
func doctorContext(model string, info agent.ModelInfo, defs []tools.Definition, contextCap int,
	report func(ok bool, what, detail, fix string), warn func(what, detail, fix string)) int {
	numCtx := harness.PlanNumCtx(info, defs, contextCap)
	static := agent.StaticTokens(defs, !info.Tools)
	share := harness.WeighTools(defs, numCtx)
	if agent.TooShort(info.ContextLength, defs, !info.Tools) {
		report(false, "context", fmt.Sprintf("%s was trained for only %d tokens: agentd's prompt and tools take about %d, and a task needs about %d more to work in",
			model, info.ContextLength, static, agent.MinWorkTokens),
			"use a model trained for a longer context, e.g. `ollama pull "+harness.DefaultModel+"` (40,960 tokens)")
		return numCtx
	}
	detail := fmt.Sprintf("sessions use a %d-token window (trained for %d); agentd's prompt and %d tools take about %d tokens",
		numCtx, info.ContextLength, share.Tools, static)
	if share.Warning != "" {
		warn("context", share.Warning, "")
	} else {
		report(true, "context", detail, "")
	}
	return numCtx
}

// doctorMeasure measures the model on this machine: where it sits in memory at the window
// sessions use (and at its trained length), how fast it reads a prompt and writes, and the
// largest window that keeps it in GPU memory; it says what to set.
func doctorMeasure(mc harness.ModelClient, model string, info agent.ModelInfo, numCtx int,
	report func(ok bool, what, detail, fix string), warn func(what, detail, fix string)) {
	m, ok := mc.(measurer)
	if !ok {
		warn("measure", "the model server is not Ollama: nothing to measure", "")
		return
	}
	fmt.Printf("measuring %s on this machine: loading it at %d tokens", model, numCtx)
	if info.ContextLength > numCtx {
		fmt.Printf(" (and first at its trained %d)", info.ContextLength)
	}
	fmt.Println("; this can take a few minutes …")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	r, err := m.Measure(ctx, numCtx, info.ContextLength)
	if err != nil {
		report(false, "measure", describeErr(err), "")
		return
	}
	at := r.At
	fit := func() string {
		if r.Largest > 0 {
			return fmt.Sprintf("; the largest window that fits in GPU memory is about %d tokens", r.Largest)
		}
		return ""
	}
	switch {
	case at.VRAM == 0:
		warn("gpu", fmt.Sprintf("%s runs on the CPU at %d tokens (%s, none of it in GPU memory): every step is slow", model, at.NumCtx, ollama.FormatBytes(at.Size)),
			"a GPU with enough memory, or a smaller model, is much faster")
	case at.OnGPU():
		report(true, "gpu", fmt.Sprintf("%s is wholly in GPU memory at %d tokens (%s)%s", model, at.NumCtx, ollama.FormatBytes(at.Size), fit()), "")
	case r.Largest >= ollama.NumCtxStep:
		warn("gpu", fmt.Sprintf("at %d tokens %s takes %s, of which %s (%d%%) in GPU memory: the rest runs on the CPU and every step is slower%s",
			at.NumCtx, model, ollama.FormatBytes(at.Size), ollama.FormatBytes(at.VRAM), at.VRAM*100/at.Size, fit()),
			fmt.Sprintf("set the context length to %d: %s", r.Largest, contextLengthHow))
	default:
		warn("gpu", fmt.Sprintf("at %d tokens %s takes %s, of which %s (%d%%) in GPU memory: even its weights do not fit, and every step is slower",
			at.NumCtx, model, ollama.FormatBytes(at.Size), ollama.FormatBytes(at.VRAM), at.VRAM*100/at.Size),
			"use a smaller model or a more compressed quantization")
	}
	if r.TrainedErr != nil {
		warn("gpu", fmt.Sprintf("%s could not be loaded at its trained %d tokens: %s", model, info.ContextLength, describeErr(r.TrainedErr)), "")
	}
	if r.PromptRate <= 0 || r.EvalRate <= 0 {
		warn("speed", "the server did not time the probe", "")
		return
	}
	first := time.Duration(float64(agent.MinWorkTokens) / r.PromptRate * float64(time.Second)).Round(100 * time.Millisecond)
	report(true, "speed", fmt.Sprintf("prompt %.0f tokens/s, generation %.1f tokens/s (a probe of %d prompt tokens and %d generated; load %s); reading %d new tokens takes about %s",
		r.PromptRate, r.EvalRate, r.PromptTokens, r.EvalTokens, r.Load.Round(time.Millisecond), agent.MinWorkTokens, first), "")
}
