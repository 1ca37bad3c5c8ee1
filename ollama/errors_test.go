package ollama_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama"
	"github.com/agentd/agentd/ollama/ollamatest"
)

// An overflow's fix names the setting users have (context-length, in its three spellings and the
// editors'), never num_ctx, and the model's trained length once Info has read it.
func TestOverflowFixNamesTheUsersSetting(t *testing.T) {
	srv := fakeServer(t, ollamatest.Model{Name: testModel, ContextLength: 40960})
	c := newClient(t, srv.URL, testModel, ollama.RetryPolicy{Attempts: 1})
	for _, withInfo := range []bool{false, true} {
		if withInfo {
			if _, err := c.Info(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		srv.Enqueue(ollamatest.HTTPError(400, "the input length exceeds the context length"))
		me := modelError(t, runChat(context.Background(), c, userRequest("hi")).err, agent.ErrContextOverflow)
		for _, want := range []string{"--context-length N", "`context-length N` in the config", "AGENTD_CONTEXT_LENGTH=N",
			"agentd.contextLength", "context_length"} {
			if !strings.Contains(me.Fix, want) {
				t.Errorf("fix (info read: %v) lacks %q: %s", withInfo, want, me.Fix)
			}
		}
		if strings.Contains(me.Fix, "num_ctx") {
			t.Errorf("fix names num_ctx, which users cannot set: %s", me.Fix)
		}
		if trained := strings.Contains(me.Fix, "trained 40960 tokens"); trained != withInfo {
			t.Errorf("fix (info read: %v) names the trained length: %v: %s", withInfo, trained, me.Fix)
		}
	}
}
