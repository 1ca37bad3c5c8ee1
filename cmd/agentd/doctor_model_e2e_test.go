package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/ollama/ollama/api"
)

// doctorWith runs `agentd doctor args…` against a fake Ollama serving script.
func doctorWith(t *testing.T, script *ollamatest.Script, args ...string) (string, *ollamatest.Server) {
	t.Helper()
	e := newRunEnv(t)
	srv := ollamatest.NewServer(script)
	t.Cleanup(srv.Close)
	srv.HandleChat(func(*api.ChatRequest) ollamatest.Reply {
		return ollamatest.Reply{Text: "1 2 3", PromptEvalCount: 600, EvalCount: 64}
	})
	cmd := exec.Command(agentdBin, append([]string{"doctor"}, args...)...)
	cmd.Dir = e.ws
	cmd.Env = append(e.env(), "OLLAMA_HOST="+srv.URL)
	out, _ := cmd.CombinedOutput()
	return string(out), srv
}

// `agentd doctor --model M` measures M on this machine against what /api/ps reports: whether it
// is wholly in GPU memory at the window sessions use, the largest window that would be, the
// prompt and generation speeds of a short probe, and what to set; it leaves the model loaded at
// the sessions' window.
func TestDoctorMeasuresTheModel(t *testing.T) {
	model := func(trained int) ollamatest.Model {
		return ollamatest.Model{Name: "qwen3:8b", Capabilities: []string{"completion", "tools"}, ContextLength: trained,
			Weights: 5_000_000_000, KVPerToken: 100_000, PromptRate: 400, EvalRate: 20}
	}
	for _, tc := range []struct {
		name      string
		gpu       int64
		trained   int
		args      []string
		want      []string
		forbidden []string
	}{
		{"fits, with room to spare", 16_000_000_000, 40960, []string{"--model", "qwen3:8b"},
			[]string{"[ok  ] gpu: qwen3:8b is wholly in GPU memory at 24576 tokens (7.5 GB); the largest window that fits in GPU memory is about 40960 tokens",
				"[ok  ] speed: prompt 400 tokens/s, generation 20.0 tokens/s (a probe of 600 prompt tokens and 64 generated",
				"reading 8192 new tokens takes about 20.5s"}, []string{"fix:"}},
		{"spills to the CPU: set a smaller window", 6_500_000_000, 40960, []string{"--model", "qwen3:8b"},
			[]string{"[warn] gpu: at 24576 tokens qwen3:8b takes 7.5 GB, of which 6.5 GB (87%) in GPU memory",
				"the largest window that fits in GPU memory is about 12288 tokens",
				"fix: set the context length to 12288: --context-length N"}, nil},
		{"weights alone do not fit", 4_000_000_000, 40960, []string{"--model", "qwen3:8b"},
			[]string{"even its weights do not fit", "fix: use a smaller model or a more compressed quantization"}, nil},
		{"no GPU", 0, 40960, []string{"--model", "qwen3:8b"},
			[]string{"[warn] gpu: qwen3:8b runs on the CPU at 24576 tokens (7.5 GB, none of it in GPU memory)"}, nil},
		{"trained for 8k", 16_000_000_000, 8192, []string{"--model", "qwen3:8b"},
			[]string{"[FAIL] context: qwen3:8b was trained for only 8192 tokens: agentd's prompt and tools take about",
				"fix: use a model trained for a longer context"}, []string{"everything agentd needs is in place"}},
		{"without --model, no measurement", 16_000_000_000, 40960, nil,
			[]string{"[ok  ] context: sessions use a 24576-token window (trained for 40960)", "measure it on this machine (GPU fit, speed, largest window): agentd doctor --model qwen3:8b"},
			[]string{"[ok  ] gpu", "measuring"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, srv := doctorWith(t, &ollamatest.Script{GPUMemory: tc.gpu, Models: []ollamatest.Model{model(tc.trained)}}, tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("doctor output lacks %q:\n%s", w, out)
				}
			}
			for _, f := range tc.forbidden {
				if strings.Contains(out, f) {
					t.Errorf("doctor output has %q:\n%s", f, out)
				}
			}
			if tc.args == nil {
				return
			}
			// The model stays loaded at the window sessions use: the next session does not reload it.
			chats := srv.Chats()
			if last := chats[len(chats)-1]; last.NumCtx() != 24576 && tc.trained > 24576 {
				t.Errorf("the last request loaded num_ctx %d, want the sessions' 24576", last.NumCtx())
			}
		})
	}
}

// `agentd run` warns on stderr when the tool definitions take more than a quarter of the window
// (here the seven built-ins in 4096 tokens).
func TestRunWarnsWhenToolsCrowdTheWindow(t *testing.T) {
	e := newRunEnv(t)
	e.ollama.Enqueue(ollamatest.Text("Hello."))
	_, stderr, code := e.runPiped(nil, "run", "--context-length", "4096", "hi")
	if code != 0 || !strings.Contains(stderr, "the definitions of the 7 tools take about") || !strings.Contains(stderr, "of the 4096-token context window") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
