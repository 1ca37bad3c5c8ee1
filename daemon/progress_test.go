package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentd/agentd/harness"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools/sandbox"
)

// slowProgressEditor answers window/workDoneProgress/create for a turn only once it has seen that
// turn end on the session/update stream: progress the daemon sends without waiting for the
// token (or out of order) arrives before the begin.
type slowProgressEditor struct {
	mu       sync.Mutex
	notes    []note
	changed  chan struct{} // closed and replaced when a note arrives
	requests []string      // server→client requests, by method
	problems []string
}

func (e *slowProgressEditor) Notify(ctx context.Context, method string, params json.RawMessage) {
	e.mu.Lock()
	e.notes = append(e.notes, note{method, params})
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

func (e *slowProgressEditor) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	e.mu.Lock()
	e.requests = append(e.requests, method)
	e.mu.Unlock()
	if method != rpc.MethodWorkDoneProgressCreate {
		return nil, rpc.ErrMethodNotFound
	}
	var p rpc.WorkDoneProgressCreateParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	turn := p.Token[strings.LastIndex(p.Token, "/")+1:]
	deadline := time.After(20 * time.Second)
	for {
		e.mu.Lock()
		ended := e.turnEndedLocked(turn)
		changed := e.changed
		e.mu.Unlock()
		if ended {
			return nil, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			e.fail("create %s: the daemon gave up before turn %s ended (%v)", p.Token, turn, ctx.Err())
			return nil, ctx.Err()
		case <-deadline:
			e.fail("create %s: turn %s never ended", p.Token, turn)
			return nil, fmt.Errorf("turn %s never ended", turn)
		}
	}
}

func (e *slowProgressEditor) fail(format string, args ...any) {
	e.mu.Lock()
	e.problems = append(e.problems, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

// turnEndedLocked reports whether a turnCompleted or turnFailed of turn arrived. e.mu held.
func (e *slowProgressEditor) turnEndedLocked(turn string) bool {
	for _, n := range e.notes {
		if n.method != rpc.MethodSessionUpdate {
			continue
		}
		var u rpc.SessionUpdateParams
		if json.Unmarshal(n.params, &u) == nil && u.TurnID == turn &&
			(u.Update.Type == rpc.UpdateTurnCompleted || u.Update.Type == rpc.UpdateTurnFailed) {
			return true
		}
	}
	return false
}

// waitNote waits for the first note, from index from on, that matches; it returns its index.
func (e *slowProgressEditor) waitNote(t *testing.T, what string, from int, match func(note) bool) int {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		e.mu.Lock()
		for i := from; i < len(e.notes); i++ {
			if match(e.notes[i]) {
				e.mu.Unlock()
				return i
			}
		}
		changed := e.changed
		e.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			e.mu.Lock()
			t.Fatalf("timed out waiting for %s (%d notifications; problems %v)", what, len(e.notes), e.problems)
		}
	}
}

// TestProgressArrivesInOrderOverManyTurns: for every turn the editor gets $/progress begin, then
// the reports, then end — even when it answers window/workDoneProgress/create late.
func TestProgressArrivesInOrderOverManyTurns(t *testing.T) {
	const turns = 15
	env := newEnvWith(t, nil, func(o *harness.Options) {
		// Without a sandbox every command asks, even in yolo: the test approves each one, and
		// the approved command runs, which reports its activity as progress.
		o.SandboxFeatures = &sandbox.Features{Arch: "x86_64"}
		o.ApprovalMode = "yolo"
	})
	for range turns {
		env.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("bash", `{"command":"true"}`)), ollamatest.Text("done"))
	}
	a, b := net.Pipe()
	go env.srv.ServeConn(a)
	ed := &slowProgressEditor{changed: make(chan struct{})}
	conn := rpc.NewConn(b)
	conn.Go(ed)
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	init := map[string]any{
		"processId": nil, "rootUri": fileURI(env.ws), "capabilities": map[string]any{},
		"workspaceFolders":      []map[string]any{{"uri": fileURI(env.ws), "name": "ws"}},
		"initializationOptions": rpc.InitializationOptions{ProtocolVersion: 1, Reviews: true},
	}
	if err := conn.Call(ctx, rpc.MethodInitialize, init, nil); err != nil {
		t.Fatal(err)
	}
	var sess rpc.SessionNewResult
	if err := conn.Call(ctx, rpc.MethodSessionNew, rpc.SessionNewParams{}, &sess); err != nil {
		t.Fatal(err)
	}
	sid := sess.Session.SessionID
	var turnIDs []string
	from := 0
	for i := range turns {
		var res rpc.SessionPromptResult
		if err := conn.Call(ctx, rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: sid, Text: "run true"}, &res); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		turnIDs = append(turnIDs, res.TurnID)
		at := ed.waitNote(t, "review of turn "+res.TurnID, from, func(n note) bool { return n.method == rpc.MethodReviewRequested })
		var r rpc.ReviewRequestedParams
		ed.mu.Lock()
		json.Unmarshal(ed.notes[at].params, &r)
		ed.mu.Unlock()
		if err := conn.Call(ctx, rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID,
			Decision: rpc.Decision{Type: rpc.DecisionAccept}}, nil); err != nil {
			t.Fatalf("turn %d: decide: %v", i, err)
		}
		from = ed.waitNote(t, "end of turn "+res.TurnID, at, func(n note) bool {
			var u rpc.SessionUpdateParams
			return n.method == rpc.MethodSessionUpdate && json.Unmarshal(n.params, &u) == nil &&
				u.TurnID == res.TurnID && u.Update.Type == rpc.UpdateTurnCompleted
		}) + 1
	}
	// Wait for the end of the last turn's progress, then read every token's sequence.
	lastToken := "agentd/" + sid + "/" + turnIDs[len(turnIDs)-1]
	ed.waitNote(t, "$/progress end of "+lastToken, 0, func(n note) bool {
		var p rpc.ProgressParams
		return n.method == rpc.MethodProgress && json.Unmarshal(n.params, &p) == nil && p.Token == lastToken && p.Value.Kind == rpc.ProgressEnd
	})
	ed.mu.Lock()
	defer ed.mu.Unlock()
	if len(ed.problems) > 0 {
		t.Errorf("editor: %v", ed.problems)
	}
	kinds := map[string][]string{}
	for _, n := range ed.notes {
		m, ok := rpc.Method(n.method)
		if !ok || m.Direction != rpc.ServerToClient || m.Kind != rpc.Notification {
			t.Errorf("the daemon sent notification %s, not a server→client notification of rpc.Methods", n.method)
		}
		if n.method != rpc.MethodProgress {
			continue
		}
		var p rpc.ProgressParams
		dec := json.NewDecoder(strings.NewReader(string(n.params)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("$/progress %s: %v", n.params, err)
		}
		kinds[p.Token] = append(kinds[p.Token], p.Value.Kind)
	}
	for _, m := range ed.requests {
		if info, ok := rpc.Method(m); !ok || info.Direction != rpc.ServerToClient || info.Kind != rpc.Request {
			t.Errorf("the daemon sent request %s, not a server→client request of rpc.Methods", m)
		}
	}
	want := strings.Join([]string{rpc.ProgressBegin, rpc.ProgressReport, rpc.ProgressEnd}, " ")
	for _, turn := range turnIDs {
		token := "agentd/" + sid + "/" + turn
		if got := strings.Join(kinds[token], " "); got != want {
			t.Errorf("token %s: progress %q, want %q", token, got, want)
		}
	}
	if len(kinds) != turns {
		t.Errorf("%d progress tokens, want %d (one per turn)", len(kinds), turns)
	}
}
