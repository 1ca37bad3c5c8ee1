package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
)

// TestRunHoldsGitMetadataACommandPlants: in yolo mode, without a terminal, the model's command
// plants a nested repository whose configuration names a program. It lands in the command's
// copy-on-write layer and is held: the workspace never has it, the model is told, and the user's
// own `git status` afterwards runs nothing.
func TestRunHoldsGitMetadataACommandPlants(t *testing.T) {
	e := newRunEnv(t)
	marker := filepath.Join(t.TempDir(), "ran")
	script := "printf '#!/bin/sh\\ntouch " + marker + "\\necho\\n' > evil.sh && chmod +x evil.sh && " +
		`git init -q sub && git -C sub config core.fsmonitor "$PWD/evil.sh" && echo planted`
	args, _ := json.Marshal(map[string]string{"command": script})
	e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("bash", string(args))), ollamatest.Text("Done."))
	cmd := exec.Command(agentdBin, "run", "--approval", "yolo", "set things up")
	cmd.Dir, cmd.Env = e.ws, e.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tr := e.lastToolResult()
	if !strings.Contains(tr, "planted") {
		t.Fatalf("the command did not run (was it sandboxed and allowed?):\n%s\n%s", tr, out)
	}
	if !strings.Contains(tr, "NOT applied") || !strings.Contains(tr, "sub/.git is a new git repository") {
		t.Errorf("the model was not told what was held:\n%s", tr)
	}
	if _, err := os.Lstat(filepath.Join(e.ws, "sub", ".git")); err == nil {
		t.Error("sub/.git reached the workspace")
	}
	for _, dir := range []string{e.ws, filepath.Join(e.ws, "sub")} {
		st := exec.Command("git", "status")
		st.Dir = dir
		st.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		_, _ = st.CombinedOutput() // the exit status does not matter, the marker does
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the user's git status ran the program the command planted:\n%s", tr)
	}
}

// TestRunCommandChangesJoinTheTurn: what a command changes is in the run's summary of the turn
// and reverted by the printed `agentd revert`, like an edit.
func TestRunCommandChangesJoinTheTurn(t *testing.T) {
	e := newRunEnv(t)
	args, _ := json.Marshal(map[string]string{"command": "sed -i 's/return 1/return 3/' answer.go && printf 'x\\ny\\n' > made.txt"})
	e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("bash", string(args))), ollamatest.Text("Done."))
	cmd := exec.Command(agentdBin, "run", "--approval", "yolo", "change it")
	cmd.Dir, cmd.Env = e.ws, e.env()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, stdout.String(), stderr.String())
	}
	errOut := stderr.String()
	for _, want := range []string{"agentd: changed 2 files:", "  answer.go  +1 −1\n", "  made.txt  +2 −0  (created)\n"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s\n%s", want, errOut, e.lastToolResult())
		}
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
		t.Errorf("answer.go after the revert:\n%s", e.read("answer.go"))
	}
	if _, err := os.Stat(filepath.Join(e.ws, "made.txt")); !os.IsNotExist(err) {
		t.Errorf("made.txt after the revert: %v", err)
	}
}

// TestRunAsksAboutACommandsHookLikeAnEdit: on a terminal in yolo mode (the command runs without a
// question), the hook a command wrote is asked about after it ran, as an edit is — why, and its
// diff —; applied, it is written and in the turn's summary of changed files.
func TestRunAsksAboutACommandsHookLikeAnEdit(t *testing.T) {
	e := newRunEnv(t)
	args, _ := json.Marshal(map[string]string{"command": "d=.hus; mkdir -p ${d}ky && echo 'npm test' > ${d}ky/pre-commit"})
	e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("bash", string(args))), ollamatest.Text("Done."))
	out, code := e.runPTY([]answer{{"[y] apply", "y\n"}}, "run", "--approval", "yolo", "set up the hook")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	plain := strings.ReplaceAll(out, "\r\n", "\n")
	for _, want := range []string{"approval needed:", "the command `d=.hus; mkdir", "changed .husky/pre-commit, and it needs your review",
		"+++ b/.husky/pre-commit", "+npm test", ".husky/pre-commit  +1 −0  (created)"} {
		if !strings.Contains(plain, want) {
			t.Errorf("output lacks %q:\n%s", want, plain)
		}
	}
	if got, err := os.ReadFile(filepath.Join(e.ws, ".husky/pre-commit")); err != nil || string(got) != "npm test\n" {
		t.Errorf("the applied hook: %q %v", got, err)
	}
	if tr := e.lastToolResult(); !strings.Contains(tr, "Review of the created .husky/pre-commit: accepted by the user and written") {
		t.Errorf("the model was not told:\n%s", tr)
	}
}
