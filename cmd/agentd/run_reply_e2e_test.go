package main

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/termtext"
	"github.com/agentd/agentd/ollama/ollamatest"
)

// greetName is the new file of the reply: its name holds a bidi override, which the list and the
// question must show escaped.
const greetName = "greet\u202e.go"

// One reply proposes three file changes: the terminal lists them first (path, created or edited,
// added and removed lines; the second change of answer.go as waiting for the first), then asks
// about each in that order; the model gets the three results in the order of its calls.
func TestRunListsTheReplysChangesThenAsksPerFile(t *testing.T) {
	e := newRunEnv(t)
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"answer.go"}`)),
		ollamatest.Calls(
			ollamatest.Call("edit", `{"path":"answer.go","old_string":"return 1","new_string":"return 2"}`),
			ollamatest.Call("edit", `{"path":"answer.go","old_string":"// Answer returns the answer.","new_string":"// Answer returns two."}`),
			ollamatest.Call("write", `{"path":"greet\u202e.go","content":"package answer\n\nconst Greeting = \"hi\"\n"}`),
		),
		ollamatest.Text("Done."),
	)
	out, code := e.runPTY([]answer{
		{"change 1 of 3:", ""}, {"[y] apply", "y\n"},
		{"change 2 of 3:", ""}, {"[y] apply", "n\n"}, {"reason", "keep the comment\n"},
		{"change 3 of 3:", ""}, {"[y] apply", "y\n"},
	}, "run", "make it two")
	plain := strings.ReplaceAll(out, "\r\n", "\n")
	if code != exitRefused {
		t.Fatalf("exit %d, want %d (one change rejected); output:\n%s", code, exitRefused, termtext.Escape(plain))
	}
	list := strings.Index(plain, "the reply proposes 3 file changes")
	first := strings.Index(plain, "change 1 of 3:")
	if list < 0 || first < list {
		t.Fatalf("the changes were not listed before the first question:\n%s", termtext.Escape(plain))
	}
	listed := plain[list:first]
	for _, want := range []string{
		"1. answer.go  edited  +1 −1",
		"2. edit answer.go  after 1: shown once that one is decided",
		`3. greet\u202e.go  created  +3 −0`,
	} {
		if !strings.Contains(listed, want) {
			t.Errorf("the list lacks %q:\n%s", want, termtext.Escape(listed))
		}
	}
	if bad := rawControls(out); len(bad) > 0 {
		t.Errorf("control characters reached the terminal raw:\n%s", strings.Join(bad, "\n"))
	}
	// The second change of answer.go was previewed against what the first left.
	if i := strings.Index(plain, "change 2 of 3:"); i < 0 || !strings.Contains(plain[i:], "+// Answer returns two.") {
		t.Errorf("the second change of answer.go was not shown:\n%s", termtext.Escape(plain))
	}
	if got, want := e.read("answer.go"), strings.Replace(answerGo, "return 1", "return 2", 1); got != want {
		t.Errorf("answer.go =\n%s\nwant\n%s", got, want)
	}
	if got := e.read(greetName); !strings.Contains(got, "Greeting") {
		t.Errorf("%s = %q", greetName, got)
	}
	chats := e.ollama.Chats()
	results := chats[len(chats)-1].ToolResults()
	if len(results) < 3 {
		t.Fatalf("the model got %d results", len(results))
	}
	results = results[len(results)-3:]
	for i, want := range []string{"answer.go", "keep the comment", "greet"} {
		if !strings.Contains(results[i], want) {
			t.Errorf("result %d (in call order) lacks %q: %q", i+1, want, results[i])
		}
	}
}

// N at the first change rejects it and the rest of the reply with one reason, without asking
// again; nothing is written.
func TestRunRejectsTheRestOfTheReply(t *testing.T) {
	e := newRunEnv(t)
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"answer.go"}`)),
		ollamatest.Calls(
			ollamatest.Call("edit", `{"path":"answer.go","old_string":"return 1","new_string":"return 2"}`),
			ollamatest.Call("write", `{"path":"greet.go","content":"package answer\n"}`),
		),
		ollamatest.Text("Understood."),
	)
	out, code := e.runPTY([]answer{{"change 1 of 2:", ""}, {"[N] reject it and the rest", "N\n"}, {"reason, for it and the rest", "not today\n"}}, "run", "make it two")
	plain := strings.ReplaceAll(out, "\r\n", "\n")
	if code != exitRefused {
		t.Fatalf("exit %d, want %d; output:\n%s", code, exitRefused, termtext.Escape(plain))
	}
	if strings.Contains(plain, "change 2 of 2:") {
		t.Errorf("the second change was asked after N:\n%s", termtext.Escape(plain))
	}
	if e.read("answer.go") != answerGo || e.read("greet.go") != "" {
		t.Error("a rejected change was written")
	}
	chats := e.ollama.Chats()
	results := chats[len(chats)-1].ToolResults()
	for _, r := range results[len(results)-2:] {
		if !strings.Contains(r, "not today") {
			t.Errorf("a result lacks the reason: %q", r)
		}
	}
}
