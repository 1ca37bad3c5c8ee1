package daemon

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/rpc"
)

// daemon/status says whether Ollama has the editor's model before any session exists: "ok" for a
// pulled one (with or without ":latest"), else that it is not pulled, the `ollama pull` fix and
// the models Ollama has — the model of the request, else the connection's initialize model.
func TestDaemonStatusSaysWhetherTheModelIsPulled(t *testing.T) {
	env := newEnv(t, nil)
	ed := env.editorWith(rpc.InitializationOptions{ProtocolVersion: 1, Reviews: true, Model: "llama3.2:3b"})
	var st rpc.DaemonStatusResult
	ed.mustCall(rpc.MethodDaemonStatus, rpc.DaemonStatusParams{}, &st)
	if st.Ollama != "ok" {
		t.Fatalf("ollama = %q", st.Ollama)
	}
	for _, want := range []string{"model llama3.2:3b is not pulled", "run `ollama pull llama3.2:3b`", "Ollama has: qwen3:8b"} {
		if !strings.Contains(st.Model, want) {
			t.Errorf("model = %q, want it to contain %q", st.Model, want)
		}
	}
	st = rpc.DaemonStatusResult{}
	ed.mustCall(rpc.MethodDaemonStatus, rpc.DaemonStatusParams{Model: "qwen3:8b"}, &st)
	if st.Model != "ok" {
		t.Errorf("qwen3:8b: model = %q, want ok", st.Model)
	}
	env.ollama.Reset(nil) // no models at all
	st = rpc.DaemonStatusResult{}
	ed.mustCall(rpc.MethodDaemonStatus, rpc.DaemonStatusParams{Model: "qwen3:8b"}, &st)
	if !strings.Contains(st.Model, "model qwen3:8b is not pulled") || !strings.Contains(st.Model, "Ollama has no models yet") {
		t.Errorf("with no models: model = %q", st.Model)
	}
}
