package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

// TestFileChangedDuringTheReviewIsNotOverwritten: the user changes the file on disk while the
// review waits; accepting the (now stale) proposal writes nothing, and the model is told to read
// the file again. The one post-gate check is the edit tool's own, next to its write.
func TestFileChangedDuringTheReviewIsNotOverwritten(t *testing.T) {
	env := newEnv(t, map[string]string{"cart.go": cartGo})
	env.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"cart.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"cart.go","old_string":"return \"cart\"","new_string":"return \"basket\""}`)),
		ollamatest.Text("Done."),
	)
	ed := env.editor(true)
	s := ed.newSession()
	ed.prompt(s, "rename")
	r := ed.review()
	theirs := strings.Replace(cartGo, "func Label", "// the user's own change\nfunc Label", 1)
	if err := os.WriteFile(filepath.Join(env.ws, "cart.go"), []byte(theirs), 0o644); err != nil {
		t.Fatal(err)
	}
	ed.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: "accept"}}, nil)
	ed.turnEnd()
	if got, _ := os.ReadFile(filepath.Join(env.ws, "cart.go")); string(got) != theirs {
		t.Errorf("the approved but stale edit overwrote the user's change:\n%s", got)
	}
	if tr := env.lastToolResult(); !strings.Contains(tr, "stale") || !strings.Contains(tr, "changed since you last read it") {
		t.Errorf("the model was not told the file changed under the approval:\n%s", tr)
	}
}
