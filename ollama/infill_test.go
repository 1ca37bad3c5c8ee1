package ollama_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama"
	"github.com/agentd/agentd/ollama/ollamatest"
)

func infillClient(t *testing.T, host, model string, keep *time.Duration) *ollama.Client {
	t.Helper()
	c, err := ollama.New(ollama.Config{Host: host, Model: model, KeepAlive: keep})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestInfillReplaysARealGenerateStream reads the recorded stream of a real server's /api/generate.
func TestInfillReplaysARealGenerateStream(t *testing.T) {
	rs := newReplayServer(t, loadRecording(t, "18g-generate-stream"))
	resp, err := infillClient(t, rs.URL, "tiny", nil).Infill(context.Background(), &agent.InfillRequest{Prompt: "Hi"})
	if err != nil {
		t.Fatal(err)
	}
	want := agent.InfillResponse{Text: "Hello! I am a tiny test model.", DoneReason: "stop", PromptTokens: 28, Duration: 187542016}
	if *resp != want {
		t.Errorf("got %+v, want %+v", *resp, want)
	}
}

// TestInfillRequestShape checks the wire request: the suffix goes with the template (never raw),
// a prompt alone goes raw, and num_ctx, num_predict, stop, keep_alive and think:false are sent.
func TestInfillRequestShape(t *testing.T) {
	srv := ollamatest.NewServer(&ollamatest.Script{Generates: []ollamatest.GenerateTurn{{Repeat: true, Reply: ollamatest.Text("x + 1")}}})
	defer srv.Close()
	keep := 30 * time.Minute
	c := infillClient(t, srv.URL, "qwen2.5-coder:1.5b-base", &keep)
	for _, suffix := range []string{"\nreturn y", ""} {
		resp, err := c.Infill(context.Background(), &agent.InfillRequest{Prompt: "y = ", Suffix: suffix, NumCtx: 2048, NumPredict: 64, Stop: []string{"\n"}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "x + 1" || resp.DoneReason != "stop" {
			t.Errorf("suffix %q: got %+v", suffix, resp)
		}
	}
	gens := srv.Generates()
	if len(gens) != 2 {
		t.Fatalf("%d generate requests, want 2", len(gens))
	}
	for i, g := range gens {
		var body map[string]any
		json.Unmarshal(g.Body, &body)
		want := map[string]any{"model": "qwen2.5-coder:1.5b-base", "prompt": "y = ", "suffix": "\nreturn y", "system": "", "template": "",
			"keep_alive": "30m0s", "think": false,
			"options": map[string]any{"num_ctx": 2048.0, "num_predict": 64.0, "stop": []any{"\n"}}}
		if i == 1 {
			want["suffix"], want["raw"] = "", true
		}
		if !reflect.DeepEqual(body, want) {
			t.Errorf("request %d:\n got %v\nwant %v", i, body, want)
		}
	}
}

// TestInfillErrors: a chat model without the insert capability, a model not pulled, a stream
// without its done line, and a server that is not running are typed errors with a fix.
func TestInfillErrors(t *testing.T) {
	srv := ollamatest.NewServer(&ollamatest.Script{
		Models:    []ollamatest.Model{{Name: "qwen3:8b"}, {Name: "coder", Capabilities: []string{"completion", "insert"}}},
		Generates: []ollamatest.GenerateTurn{{Reply: ollamatest.Reply{Text: "half", NoDone: true}}},
	})
	defer srv.Close()
	cases := []struct {
		model string
		kind  agent.ModelErrorKind
	}{{"qwen3:8b", agent.ErrBadRequest}, {"missing", agent.ErrModelNotFound}, {"coder", agent.ErrStreamBroken}}
	for _, tc := range cases {
		_, err := infillClient(t, srv.URL, tc.model, nil).Infill(context.Background(), &agent.InfillRequest{Prompt: "a", Suffix: "b"})
		var me *agent.ModelError
		if !errors.As(err, &me) || me.Kind != tc.kind {
			t.Errorf("%s: got %v, want kind %s", tc.model, err, tc.kind)
		}
		if tc.model == "qwen3:8b" && (me == nil || me.Fix == "") {
			t.Errorf("no fix for a model without insert: %v", err)
		}
	}
	url := srv.URL
	srv.Close()
	_, err := infillClient(t, url, "coder", nil).Infill(context.Background(), &agent.InfillRequest{Prompt: "a"})
	var me *agent.ModelError
	if !errors.As(err, &me) || me.Kind != agent.ErrServerNotRunning {
		t.Errorf("server down: got %v", err)
	}
}

// TestInfillCancelClosesTheRequest: cancelling the context closes the HTTP request mid-stream.
func TestInfillCancelClosesTheRequest(t *testing.T) {
	srv := ollamatest.NewServer(&ollamatest.Script{Generates: []ollamatest.GenerateTurn{{Reply: ollamatest.Reply{Text: "loop loop", Hang: true}}}})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := infillClient(t, srv.URL, "coder", nil).Infill(ctx, &agent.InfillRequest{Prompt: "a"})
		errc <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if _, err := srv.WaitGenerates(wctx, 1, false); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	gens, err := srv.WaitGenerates(wctx, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if !gens[0].ClientGone {
		t.Errorf("the server did not see the request closed: %+v", gens[0])
	}
}
