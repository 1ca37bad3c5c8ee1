package daemon

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/ollama/ollamatest"
)

// BenchmarkInlineCompletion measures what the daemon adds to a completion against a fake Ollama
// that answers at once: from the editor sending textDocument/inlineCompletion to the generate
// request arriving (in), and from the fake writing the done line to the editor holding the answer
// (out), p50 and p95 over b.N requests typed one character apart into live.go, next to the same
// requests sent by the Ollama client alone (ref-in, ref-out); and cancel: from
// the editor cancelling a running completion to the fake seeing its HTTP request closed.
// -benchtime 200x gives the 200 requests of docs/benchmarks.md. With AGENTD_FIM_PARTS set, it writes
// the prompt windows of the last request there (scripts/tokens counts them).
func BenchmarkInlineCompletion(b *testing.B) {
	src, err := os.ReadFile("live.go")
	if err != nil {
		b.Fatal(err)
	}
	env := completionEnv(b, nil, ollamatest.GenerateTurn{Repeat: true, When: &ollamatest.GenerateMatch{PromptSuffix: "x"}, Reply: ollamatest.Text("x")})
	ed := env.editor(true)
	text := string(src)
	cursor := len(text)/2 + strings.Index(text[len(text)/2:], "\n\treturn") + 1 // a line start in the middle of the file
	line := uint32(strings.Count(text[:cursor], "\n"))
	uri := ed.open("live.go", text)
	var in, out []time.Duration
	b.ResetTimer()
	for i := range b.N {
		typed := strings.Repeat("x", i%40+1)
		ed.sendChange(uri, int32(i+2), text[:cursor]+typed+text[cursor:])
		start := time.Now()
		res, err := ed.complete(context.Background(), uri, line, uint32(len(typed)))
		end := time.Now()
		if err != nil || len(res.Items) != 1 {
			b.Fatalf("completion %d: %+v, %v", i, res, err)
		}
		g := env.ollama.Generates()[i]
		in = append(in, g.Received.Sub(start))
		out = append(out, end.Sub(g.DoneSent))
	}
	b.StopTimer()
	report(b, "in", in)
	report(b, "out", out)

	// The reference: the same requests sent to the fake by the Ollama client alone, without the
	// daemon and the editor connection (what in and out cost anyway).
	inf, err := env.srv.rt.Infiller("", coderModel)
	if err != nil {
		b.Fatal(err)
	}
	in, out = in[:0], out[:0]
	for i := range b.N {
		typed := strings.Repeat("x", i%40+1)
		req := fimRequest(text[:cursor]+typed+text[cursor:], cursor+len(typed))
		n := len(env.ollama.Generates())
		start := time.Now()
		if _, err := inf.Infill(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		g := env.ollama.Generates()[n]
		in = append(in, g.Received.Sub(start))
		out = append(out, end.Sub(g.DoneSent))
	}
	report(b, "ref-in", in)
	report(b, "ref-out", out)

	// Cancellation: the fake hangs; the editor cancels once the request arrived.
	env.ollama.AddGenerates(ollamatest.GenerateTurn{Repeat: true, When: &ollamatest.GenerateMatch{PromptSuffix: "y"}, Reply: ollamatest.Reply{Text: "z", Hang: true}})
	var cancels []time.Duration
	for i := range 20 {
		ed.sendChange(uri, int32(2*b.N+i+2), text[:cursor]+"y"+text[cursor:])
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { ed.complete(ctx, uri, line, 1); close(done) }()
		n := 2*b.N + i
		if _, err := env.ollama.WaitGenerates(context.Background(), n+1, false); err != nil {
			b.Fatal(err)
		}
		at := time.Now()
		cancel()
		gens, err := env.ollama.WaitGenerates(context.Background(), n+1, true)
		if err != nil || !gens[n].ClientGone {
			b.Fatalf("cancelled generation: %+v, %v", gens[n], err)
		}
		cancels = append(cancels, gens[n].Ended.Sub(at))
		<-done
	}
	report(b, "cancel", cancels)

	if p := os.Getenv("AGENTD_FIM_PARTS"); p != "" {
		req := fimRequest(text, cursor)
		parts, _ := json.Marshal([]map[string]string{{"name": "prompt window (before the cursor)", "text": req.Prompt},
			{"name": "suffix window (after the cursor)", "text": req.Suffix}})
		if err := os.WriteFile(p, parts, 0o644); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(req.Prompt)+len(req.Suffix)), "window-bytes")
	}
}

func report(b *testing.B, name string, ds []time.Duration) {
	slices.Sort(ds)
	ms := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))]) / 1e6 }
	b.ReportMetric(ms(0.5), name+"-p50-ms")
	b.ReportMetric(ms(0.95), name+"-p95-ms")
}
