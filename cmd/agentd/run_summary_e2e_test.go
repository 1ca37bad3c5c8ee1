package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
)

// TestRunPrintsTheTurnsChanges: a run that changes files ends with each file's +added −removed
// and the revert command, which works as printed; a run that changes nothing prints no summary.
func TestRunPrintsTheTurnsChanges(t *testing.T) {
	e := newRunEnv(t)
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"answer.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"answer.go","old_string":"return 1","new_string":"return 2"}`)),
		ollamatest.Calls(ollamatest.Call("write", `{"path":"notes.md","content":"a\nb\nc\n"}`)),
		ollamatest.Text("Done."),
	)
	cmd := exec.Command(agentdBin, "run", "--approval", "auto-edit", "change it")
	cmd.Dir, cmd.Env = e.ws, e.env()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, stdout.String(), stderr.String())
	}
	errOut := stderr.String()
	for _, want := range []string{"agentd: changed 2 files:", "  answer.go  +1 −1\n", "  notes.md  +3 −0  (created)\n"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(stdout.String(), "changed 2 files") || strings.Contains(errOut, "\x1b[") {
		t.Errorf("the summary went to stdout or was coloured without a terminal:\n%s", stdout.String())
	}
	m := regexp.MustCompile(`undo them: agentd revert --session (\S+) --turn (\S+)\n`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no revert hint:\n%s", errOut)
	}
	rev := exec.Command(agentdBin, "revert", "--session", m[1], "--turn", m[2])
	rev.Dir, rev.Env = e.ws, e.env()
	if out, err := rev.CombinedOutput(); err != nil {
		t.Fatalf("the printed revert command failed: %v\n%s", err, out)
	}
	if e.read("answer.go") != answerGo {
		t.Errorf("answer.go after the printed revert:\n%s", e.read("answer.go"))
	}

	// Nothing changed: no summary.
	e.ollama.Enqueue(ollamatest.Text("Nothing to do."))
	cmd = exec.Command(agentdBin, "run", "--approval", "auto-edit", "look")
	cmd.Dir, cmd.Env = e.ws, e.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(string(out), "agentd: changed") {
		t.Errorf("a run that changed nothing printed a summary:\n%s", out)
	}
}
