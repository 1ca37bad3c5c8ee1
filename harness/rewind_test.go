package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
)

// TestRewind goes back to before the second turn: the file that turn created is gone, the file
// the user changed since is left as the user made it and listed, the conversation goes on in a
// fork, and the fork's first request repeats the original's prompt prefix byte for byte.
func TestRewind(t *testing.T) {
	env := newSessionEnv(t, "yolo",
		ollamatest.Calls(ollamatest.Call("write", `{"path":"a.txt","content":"one\n"}`)),
		ollamatest.Text("Wrote a."),
		ollamatest.Calls(ollamatest.Call("write", `{"path":"b.txt","content":"two\n"}`),
			ollamatest.Call("write", `{"path":"c.txt","content":"three\n"}`)),
		ollamatest.Text("Wrote b and c."),
		ollamatest.Text("Only b this time."))
	h, err := env.rt.Open(SessionSpec{Workspace: env.ws})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession(h, nil)
	defer s.Close()
	ends, _ := turnEnds(s)
	for _, p := range []string{"write a", "write b and c"} {
		if _, err := s.Prompt(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		waitEnd(t, ends)
	}
	second := len(env.fake.Chats()) - 2 // the second turn's first request
	// The user changes c.txt after the turn.
	if err := os.WriteFile(filepath.Join(env.ws, "c.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	res, err := s.Rewind("t2")
	if err != nil {
		t.Fatal(err)
	}
	if res.Prompt != "write b and c" || res.Session == "" || res.Session == s.ID() {
		t.Fatalf("rewind = %+v: want the second prompt and a new session", res)
	}
	if !slices.Equal(res.Restored, []string{"b.txt"}) || len(res.Skipped) != 1 || res.Skipped[0].Path != "c.txt" {
		t.Errorf("restored %v, skipped %+v: want b.txt restored, c.txt skipped", res.Restored, res.Skipped)
	}
	if _, err := os.Stat(filepath.Join(env.ws, "b.txt")); err == nil {
		t.Error("b.txt, created by the rewound turn, is still there")
	}
	if b, _ := os.ReadFile(filepath.Join(env.ws, "c.txt")); string(b) != "mine\n" {
		t.Errorf("c.txt = %q: the user's change was overwritten", b)
	}
	if b, _ := os.ReadFile(filepath.Join(env.ws, "a.txt")); string(b) != "one\n" {
		t.Errorf("a.txt = %q: the first turn's file changed", b)
	}

	h2, err := env.rt.Open(SessionSpec{ID: res.Session})
	if err != nil {
		t.Fatal(err)
	}
	fork := NewSession(h2, nil)
	defer fork.Close()
	if turns := fork.Transcript(); len(turns) != 1 || turns[0].ID != "t1" {
		t.Fatalf("the fork's transcript has %d turns: want the first only", len(turns))
	}
	forkEnds, _ := turnEnds(fork)
	id, err := fork.Prompt(context.Background(), "write only b")
	if err != nil {
		t.Fatal(err)
	}
	if id != "t2" {
		t.Errorf("the fork's next turn is %s, want t2", id)
	}
	waitEnd(t, forkEnds)
	chats := env.fake.Chats()
	orig, again := chats[second].Request, chats[len(chats)-1].Request
	prefix := func(msgs any) string { b, _ := json.Marshal(msgs); return string(b) }
	if len(orig.Messages) != len(again.Messages) {
		t.Fatalf("the fork sent %d messages, the original %d", len(again.Messages), len(orig.Messages))
	}
	k := len(orig.Messages) - 1 // all but the new prompt
	if a, b := prefix(orig.Messages[:k]), prefix(again.Messages[:k]); a != b {
		t.Errorf("the prompt prefix changed:\noriginal %s\nfork     %s", a, b)
	}
	if a, b := prefix([]any{orig.Tools, orig.Options, orig.Model}), prefix([]any{again.Tools, again.Options, again.Model}); a != b {
		t.Errorf("the tools or options changed:\noriginal %s\nfork     %s", a, b)
	}
	if again.Messages[k].Content == orig.Messages[k].Content {
		t.Error("the fork sent the old prompt")
	}
}

// TestFork copies a session: the copy has the same transcript under a new ID, and the original
// is left as it is.
func TestFork(t *testing.T) {
	env := newSessionEnv(t, "yolo", ollamatest.Text("Hello."))
	h, err := env.rt.Open(SessionSpec{Workspace: env.ws})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession(h, nil)
	ends, _ := turnEnds(s)
	if _, err := s.Prompt(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	waitEnd(t, ends)
	id, err := env.rt.Fork(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	want := s.Transcript()
	s.Close()
	h2, err := env.rt.Open(SessionSpec{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if h2.ID() != id || h2.Workspace() != h.Workspace() {
		t.Errorf("fork %s in %s, want %s in %s", h2.ID(), h2.Workspace(), id, h.Workspace())
	}
	if got := comparable(NewSession(h2, nil).Transcript()); prefixJSON(got) != prefixJSON(comparable(want)) {
		t.Errorf("the fork's transcript %s, want %s", prefixJSON(got), prefixJSON(comparable(want)))
	}
}

func prefixJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
