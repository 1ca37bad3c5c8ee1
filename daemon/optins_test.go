package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.HelperMain() // the test binary is the sandbox helper, as the agentd binary is
	os.Exit(m.Run())
}

// turnEndOf waits for the end of one turn and returns it.
func (ed *fakeEditor) turnEndOf(turnID string) rpc.Update {
	ed.t.Helper()
	var u rpc.SessionUpdateParams
	json.Unmarshal(ed.waitFor("the end of turn "+turnID, func(n note) bool {
		var p rpc.SessionUpdateParams
		return n.method == rpc.MethodSessionUpdate && json.Unmarshal(n.params, &p) == nil && p.TurnID == turnID &&
			(p.Update.Type == rpc.UpdateTurnCompleted || p.Update.Type == rpc.UpdateTurnFailed)
	}), &u)
	return u.Update
}

// nextReview waits for a review not in seen, adds it there and returns it.
func (ed *fakeEditor) nextReview(seen map[string]bool) rpc.ReviewRequestedParams {
	ed.t.Helper()
	var r rpc.ReviewRequestedParams
	json.Unmarshal(ed.waitFor("a new review", func(n note) bool {
		var p rpc.ReviewRequestedParams
		return n.method == rpc.MethodReviewRequested && json.Unmarshal(n.params, &p) == nil && !seen[p.ReviewID]
	}), &r)
	seen[r.ReviewID] = true
	return r
}

// toolResults returns the tool messages of the model's last request, in order.
func (e *testEnv) toolResults() []string {
	chats := e.ollama.Chats()
	if len(chats) == 0 {
		e.t.Fatal("the model was never asked")
	}
	return chats[len(chats)-1].ToolResults()
}

func bashCall(command string) ollamatest.Reply {
	b, _ := json.Marshal(map[string]string{"command": command})
	return ollamatest.Calls(ollamatest.Call("bash", string(b)))
}

// TestOptInsReachTheSandbox drives the whole chain — the user's config, the policy, the gate,
// the review, the bash tool, the runner, bubblewrap — as an editor would: a `socket` line opens
// the socket for the commands its rule decides (allowed by the rule, or approved in a review
// that says so), not for another command the user approves; approving `cat .env` lets that
// command read it; a command nobody approved reads nothing, however it spells the name.
func TestOptInsReachTheSandbox(t *testing.T) {
	testutil.NeedTool(t, "nc", "netcat-openbsd")
	sock, accepted := testutil.UnixGreeter(t)
	env := newEnvWith(t, map[string]string{".env": "API_TOKEN=s3cret-env\n"}, func(o *harness.Options) {
		cfg := "allow nc -U\n    example nc -U /x.sock\n    socket " + sock + "\n" +
			"ask nc -N -U\n    example nc -N -U /x.sock\n    socket " + sock + "\n"
		if err := os.MkdirAll(o.Policy.ConfigDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(o.Policy.ConfigDir, "config"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	if sb, sbErr := env.srv.rt.Sandbox(); sb == nil || sb.Mode() != sandbox.ModeBwrap {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no bubblewrap sandbox in CI: %v", sbErr)
		}
		t.Skipf("BUBBLEWRAP UNAVAILABLE (only it masks single files), not tested: %v", sbErr)
	}
	env.ollama.Enqueue(
		bashCall("nc -U -w 5 "+sock),            // allowed by its rule: no review
		bashCall("nc -N -U -w 5 "+sock),         // asks by its rule
		bashCall(`sh -c "nc -U -w 5 `+sock+`"`), // asks (a wrapper); no rule names the socket
		bashCall("cat .env"),                    // asks (a sensitive read)
		ollamatest.Text("done"),
	)
	ed := env.editor(true)
	s := ed.newSession()
	turn := ed.prompt(s, "talk to the daemon")
	seen := map[string]bool{}
	var reviews []rpc.ReviewRequestedParams
	for range 3 {
		r := ed.nextReview(seen)
		reviews = append(reviews, r)
		ed.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: "accept"}}, nil)
	}
	if end := ed.turnEndOf(turn); end.Reason != "done" {
		t.Fatalf("turn end = %+v", end)
	}
	sandboxLine := func(r rpc.ReviewRequestedParams) string {
		if r.Command == nil {
			t.Fatalf("review %+v has no command", r)
		}
		return r.Command.Sandbox
	}
	if l := sandboxLine(reviews[0]); !strings.Contains(l, "unix sockets ON ("+sock+")") {
		t.Errorf("the review of `nc -N -U` does not say the socket opens: %q", l)
	}
	if l := sandboxLine(reviews[1]); strings.Contains(l, "unix sockets") {
		t.Errorf("the review of `sh -c …` offers a socket: %q", l)
	}
	if l := sandboxLine(reviews[2]); !strings.Contains(l, "approving unmasks "+filepath.Join(env.ws, ".env")) {
		t.Errorf("the review of `cat .env` does not say approving unmasks it: %q", l)
	}
	res := env.toolResults()
	if len(res) != 4 {
		t.Fatalf("the model got %d tool results, want 4: %q", len(res), res)
	}
	for i, want := range []bool{true, true, false} {
		if got := strings.Contains(res[i], "hello-from-socket"); got != want {
			t.Errorf("command %d reached the socket: %v, want %v:\n%s", i+1, got, want, res[i])
		}
	}
	if n := accepted.Load(); n != 2 {
		t.Errorf("the socket accepted %d connections, want 2", n)
	}
	if !strings.Contains(res[3], "API_TOKEN=s3cret-env") {
		t.Errorf("the approved `cat .env` did not read it:\n%s", res[3])
	}

	// yolo: nothing asks about a name the classifier cannot see, and nothing unmasks it.
	ed.mustCall(rpc.MethodSessionSetMode, rpc.SessionSetModeParams{SessionID: s, ApprovalMode: "yolo"}, nil)
	env.ollama.Enqueue(bashCall("e=.en; cat ${e}v"), ollamatest.Text("done"))
	turn = ed.prompt(s, "read it another way")
	if end := ed.turnEndOf(turn); end.Reason != "done" {
		t.Fatalf("turn end = %+v", end)
	}
	res = env.toolResults()
	// (It ran — "[exit status" — and read nothing: an empty mask, or a refusal.)
	if last := res[len(res)-1]; strings.Contains(last, "s3cret") || !strings.Contains(last, "[exit status") {
		t.Errorf("the unapproved `e=.en; cat ${e}v` in yolo:\n%s", last)
	}
	if len(seen) != 3 || len(reviews) != 3 {
		t.Errorf("reviews: %d", len(seen))
	}
}
