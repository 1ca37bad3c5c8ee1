package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
	"github.com/ollama/ollama/api"
)

// These tests check that `agentd run` reports honestly what it did not do: its exit code, its
// stderr, and what the model is told.

// runPiped runs agentd without a terminal (stdin, stdout and stderr are not terminals) and
// returns its stdout, stderr and exit code.
func (e *runEnv) runPiped(extraEnv []string, args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	cmd := exec.Command(agentdBin, args...)
	cmd.Dir, cmd.Env = e.ws, append(e.env(), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("running agentd %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// modelRequests are the chat requests that asked the model something (not the empty requests
// that load or release a model).
func (e *runEnv) modelRequests() []ollamatest.ChatRecord {
	var out []ollamatest.ChatRecord
	for _, c := range e.ollama.Chats() {
		if len(c.Request.Messages) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func wantAll(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// In ask mode without a terminal, an edit is not run, the turn stops there (the model is not
// asked to go on as if it had been applied), the exit code is 5, stderr says in full what was
// not run and how to allow it, and the model reads the truth when the session continues.
func TestRunWithoutATerminalStopsWhereNoOneCanApprove(t *testing.T) {
	e := newRunEnv(t)
	edit := ollamatest.Call("edit", `{"path":"answer.go","old_string":"return 1","new_string":"return 2"}`)
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"answer.go"}`)),
		ollamatest.Calls(edit),
	)
	stdout, stderr, code := e.runPiped(nil, "run", "change it")
	if code != exitNoApprove {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitNoApprove, stdout, stderr)
	}
	if e.read("answer.go") != answerGo {
		t.Error("an edit ran without anyone to approve it")
	}
	if n := len(e.modelRequests()); n != 2 {
		t.Errorf("%d model requests, want 2: the model was asked to go on after the edit was not run", n)
	}
	config := filepath.Join(e.home, "config", "agentd", "config")
	wantAll(t, "stderr", stderr,
		"1 call was not run because it needs an approval and there is no terminal to ask in:",
		`edit {"path":"answer.go","old_string":"return 1","new_string":"return 2"}`,
		"Not run: this call needs an approval that no one can give here; nothing was changed. The turn ends here.",
		"Reason: asks: edits ask in ask mode; no one can approve it here: there is no terminal or editor to ask the user.",
		"To allow it: run with --approval auto-edit (edits apply without asking, and `agentd revert` undoes them), put `mode auto-edit` in "+
			config+", or run `agentd run` in a terminal to be asked.\n")
	if strings.Contains(stderr, "rejected") {
		t.Errorf("stderr says the call was rejected, but nobody was asked:\n%s", stderr)
	}

	// The session goes on with --approval auto-edit: the model first reads what happened.
	m := sessionRE.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no session line in:\n%s", stderr)
	}
	e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("read", `{"path":"answer.go"}`)), ollamatest.Calls(edit),
		ollamatest.Text("Answer returns 2 now."))
	stdout, stderr, code = e.runPiped(nil, "run", "--resume", m[1], "--approval", "auto-edit", "go on")
	if code != exitOK {
		t.Fatalf("resumed run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	next := e.modelRequests()[2].Request.Messages
	var result string
	for _, msg := range next {
		if msg.Role == "tool" && msg.ToolName == "edit" {
			result = msg.Content
		}
	}
	if !strings.HasPrefix(result, "Error (approval_unavailable): Not run: this call needs an approval that no one can give here") ||
		strings.Contains(result, "rejected") {
		t.Errorf("the model's next request carries this edit result:\n%s", result)
	}
	if !strings.Contains(e.read("answer.go"), "return 2") {
		t.Errorf("--approval auto-edit on the resumed session did not apply the edit:\n%s", stderr)
	}
}

// yolo still asks about a command writing a git hook; without a terminal that is not a success.
func TestRunYoloCommandWritingAGitHookIsNotASuccess(t *testing.T) {
	e := newRunEnv(t)
	e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("bash", `{"command":"echo 'make lint' > .git/hooks/pre-commit"}`)))
	stdout, stderr, code := e.runPiped(nil, "run", "--approval", "yolo", "add a pre-commit hook")
	if code != exitNoApprove {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitNoApprove, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("the hook was written")
	}
	wantAll(t, "stderr", stderr, "asks: protected path .git/hooks/pre-commit",
		"No approval mode, rule or grant allows this without asking: run `agentd run` in a terminal to be asked, or use an editor.")
}

// --think on a model without the thinking capability says so, and sends no think.
func TestRunThinkOnAModelThatCannotThinkSaysSo(t *testing.T) {
	e := newRunEnv(t) // qwen3:8b here has completion and tools only
	e.ollama.Enqueue(ollamatest.Text("Hello."))
	stdout, stderr, code := e.runPiped(nil, "run", "--think", "hi")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	wantAll(t, "stderr", stderr, "level=WARN", "thinking is off: qwen3:8b does not have the thinking capability")
	if c, ok := e.ollama.LastChat(); !ok || (c.Request.Think != nil && c.Request.Think.Bool()) {
		t.Errorf("think sent to a model that cannot think: %s", c.Body)
	}
}

// A context overflow that compaction cannot help is not resent; the message names the user's
// setting, the window in use and the model's trained length.
func TestRunContextOverflowStopsOnceAndNamesTheSetting(t *testing.T) {
	e := newRunEnv(t)
	e.ollama.HandleChat(func(*api.ChatRequest) ollamatest.Reply {
		return ollamatest.HTTPError(400, "the input length exceeds the context length")
	})
	stdout, stderr, code := e.runPiped([]string{"AGENTD_CONTEXT_LENGTH=8192"}, "run", "read everything")
	if code != exitError {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitError, stdout, stderr)
	}
	chats := e.modelRequests()
	if len(chats) != 1 {
		t.Errorf("%d model requests, want 1 (the request that overflowed must not be resent unchanged)", len(chats))
	}
	if len(chats) > 0 && chats[0].Option("num_ctx") != 8192 {
		t.Errorf("num_ctx = %d, want 8192", chats[0].Option("num_ctx"))
	}
	wantAll(t, "stderr", stderr, "context window in use (8192 tokens)", "trained for 40960 tokens",
		"--context-length N", "`context-length N` in the config", "AGENTD_CONTEXT_LENGTH=N")
	if strings.Contains(stderr, "num_ctx") {
		t.Errorf("stderr names num_ctx, which users cannot set:\n%s", stderr)
	}
}

// Without a terminal, a command that asks says what would let it run.
func TestRunWithoutATerminalSaysHowToAllowACommand(t *testing.T) {
	e := newRunEnv(t)
	config := filepath.Join(e.home, "config", "agentd", "config")
	for _, tc := range []struct{ command, want string }{
		{"ls", "To allow it: run with --approval auto-edit (read-only commands run in the sandbox without asking), put `mode auto-edit` in " +
			config + ", or run `agentd run` in a terminal to be asked."},
		{"touch made.txt", "To allow it: add the rule `allow touch` to " + config +
			", run with --approval yolo (commands run in the sandbox without asking), or run `agentd run` in a terminal to be asked."},
	} {
		e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("bash", `{"command":"`+tc.command+`"}`)))
		stdout, stderr, code := e.runPiped(nil, "run", "run it")
		if code != exitNoApprove {
			t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.command, code, exitNoApprove, stdout, stderr)
		}
		wantAll(t, "stderr", stderr, tc.want)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "made.txt")); err == nil {
		t.Error("a command ran without anyone to approve it")
	}
}

// The editor daemon forwards the warning to the editor as window/logMessage.
func TestServeForwardsTheThinkWarningToTheEditor(t *testing.T) {
	e := newRunEnv(t)
	e.ollama.Enqueue(ollamatest.Text("Hello."))
	w := startServeStdio(t, e, "--think").editor
	var s rpc.SessionNewResult
	w.call(rpc.MethodSessionNew, map[string]any{}, &s)
	w.call(rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: s.Session.SessionID, Text: "hi"}, nil)
	note := w.waitFor("thinking is off: qwen3:8b does not have the thinking capability")
	if !strings.HasPrefix(note, "window/logMessage ") || !strings.Contains(note, `"type":2`) {
		t.Errorf("the warning reached the editor as %s", note)
	}
}
