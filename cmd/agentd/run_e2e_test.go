package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/creack/pty"
	"github.com/ollama/ollama/api"
)

// These tests drive the real agentd binary against the fake Ollama server.

var (
	agentdBin string
	// testCache is shared by every test and kept between runs, so sandboxed `go test` builds are
	// compiled once, not per test.
	testCache = filepath.Join(os.TempDir(), "agentd-test-cache")
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentd-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agentdBin = filepath.Join(dir, "agentd")
	// Static (CGO_ENABLED=0), as `make build` builds it: no libc's pages resident, pure-Go
	// resolver for the loopback Ollama host.
	build := exec.Command("go", "build", "-o", agentdBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building agentd: %v\n%s", err, out)
		os.Exit(1)
	}
	// The dedicated sandbox helper, installed beside agentd as `make build` does.
	sbBuild := exec.Command("go", "build", "-o", filepath.Join(dir, "agentd-sandbox"), "../agentd-sandbox")
	sbBuild.Env = append(os.Environ(), "CGO_ENABLED=0") // static: it starts once per command
	if out, err := sbBuild.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building agentd-sandbox: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runEnv is a temporary git repository with a Go module, a private home and a fake Ollama.
type runEnv struct {
	t      *testing.T
	ws     string
	home   string
	ollama *ollamatest.Server
}

const answerGo = "package answer\n\n// Answer returns the answer.\nfunc Answer() int {\n\treturn 1\n}\n"
const answerTestGo = "package answer\n\nimport \"testing\"\n\nfunc TestAnswer(t *testing.T) {\n\tif Answer() != 2 {\n\t\tt.Fatal(\"want 2\")\n\t}\n}\n"

func newRunEnv(t *testing.T) *runEnv {
	t.Helper()
	e := &runEnv{t: t, ws: t.TempDir(), home: t.TempDir()}
	e.ws, _ = filepath.EvalSymlinks(e.ws)
	files := map[string]string{"go.mod": "module answer\n\ngo 1.22\n", "answer.go": answerGo, "answer_test.go": answerTestGo}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(e.ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = e.ws
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	e.ollama = ollamatest.NewServer(&ollamatest.Script{Models: []ollamatest.Model{
		{Name: "qwen3:8b", Capabilities: []string{"completion", "tools"}, ContextLength: 40960}}})
	t.Cleanup(e.ollama.Close)
	testutil.GoTelemetryOff(t, filepath.Join(e.home, "config"))
	return e
}

func (e *runEnv) env() []string {
	gocache, _ := exec.Command("go", "env", "GOCACHE").Output()
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + e.home, "TERM=dumb", "NO_COLOR=1",
		"XDG_STATE_HOME=" + filepath.Join(e.home, "state"), "XDG_CONFIG_HOME=" + filepath.Join(e.home, "config"),
		"XDG_RUNTIME_DIR=" + filepath.Join(e.home, "run"), "XDG_CACHE_HOME=" + testCache,
		"OLLAMA_HOST=" + e.ollama.URL, "AGENTD_MODEL=qwen3:8b",
		"GOCACHE=" + strings.TrimSpace(string(gocache)), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
	}
}

// answer is typed at the terminal when the output so far contains Prompt.
type answer struct{ prompt, reply string }

// runPTY runs agentd with a terminal, answering prompts in order, and returns everything it
// printed and its exit code.
func (e *runEnv) runPTY(answers []answer, args ...string) (string, int) {
	e.t.Helper()
	return e.runPTYEnv(e.env(), answers, args...)
}

// runPTYEnv is runPTY with the environment env.
func (e *runEnv) runPTYEnv(env []string, answers []answer, args ...string) (string, int) {
	e.t.Helper()
	cmd := exec.Command(agentdBin, args...)
	cmd.Dir, cmd.Env = e.ws, env
	f, err := pty.Start(cmd)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var mu sync.Mutex
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	next, from := 0, 0
	deadline := time.Now().Add(240 * time.Second) // generous: the machine may be loaded
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case err := <-exited:
			<-done
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			return out.String(), code
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			e.t.Fatalf("agentd did not finish; output:\n%s", out.String())
		}
		mu.Lock()
		text := out.String()
		mu.Unlock()
		if next < len(answers) {
			if i := strings.Index(text[from:], answers[next].prompt); i >= 0 {
				from += i + len(answers[next].prompt)
				f.Write([]byte(answers[next].reply))
				next++
			}
		}
	}
}

func (e *runEnv) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(e.ws, name))
	return string(b)
}

// lastToolResult returns the last tool message the model received.
func (e *runEnv) lastToolResult() string {
	r, _ := e.ollama.LastToolResult()
	return r
}

var sessionRE = regexp.MustCompile(`session (s-[0-9a-f-]+)`)

// answerCheckSh is the workspace's test as a shell script: the command the model runs must be cheap
// and independent of the machine's state (a sandboxed `go test` would compile the standard library
// into a cold build cache first, which alone can exceed the command's time limit on a loaded
// machine).
const answerCheckSh = "if grep -q 'return 2' answer.go; then echo 'ok  answer'; else echo 'FAIL answer: Answer() does not return 2'; exit 1; fi\n"

func TestRunReadEditTestAndAnswer(t *testing.T) {
	e := newRunEnv(t)
	if err := os.WriteFile(filepath.Join(e.ws, "test.sh"), []byte(answerCheckSh), 0o644); err != nil {
		t.Fatal(err)
	}
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"answer.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"answer.go","old_string":"return 1","new_string":"return 2"}`)),
		ollamatest.Calls(ollamatest.Call("bash", `{"command":"sh test.sh","description":"run the tests"}`)),
		ollamatest.Text("Answer now returns 2 and the tests pass."),
	)
	out, code := e.runPTY([]answer{{"[y] apply", "y\n"}, {"[y] run", "y\n"}}, "run", "make the test pass")
	if code != 0 {
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
	for _, want := range []string{"-\treturn 1", "+\treturn 2", "$ sh test.sh", "Answer now returns 2 and the tests pass."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := e.read("answer.go"); got != strings.Replace(answerGo, "return 1", "return 2", 1) {
		t.Errorf("answer.go =\n%s", got)
	}
	if tr := e.lastToolResult(); !strings.Contains(tr, "ok  answer") || strings.Contains(tr, "FAIL") {
		t.Errorf("the model did not see the passing test's output:\n%s", tr)
	}

	// Revert the turn: the file is restored, the git index untouched.
	index, _ := os.ReadFile(filepath.Join(e.ws, ".git", "index"))
	cmd := exec.Command(agentdBin, "revert")
	cmd.Dir, cmd.Env = e.ws, e.env()
	rout, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("revert: %v\n%s", err, rout)
	}
	if !strings.Contains(string(rout), "restored answer.go") || e.read("answer.go") != answerGo {
		t.Errorf("revert output:\n%s\nanswer.go =\n%s", rout, e.read("answer.go"))
	}
	if after, _ := os.ReadFile(filepath.Join(e.ws, ".git", "index")); !bytes.Equal(index, after) {
		t.Error("revert touched the git index")
	}
}

func TestRunRejectedEditLeavesTheFileAndTellsTheModel(t *testing.T) {
	e := newRunEnv(t)
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"answer.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"answer.go","old_string":"return 1","new_string":"return 3"}`)),
		ollamatest.Text("Understood, I left it."),
	)
	out, code := e.runPTY([]answer{{"[y] apply", "n\n"}, {"reason", "three is the wrong answer\n"}}, "run", "change it")
	if code != exitRefused || !strings.Contains(out, "1 call was refused") { // not everything asked was done
		t.Fatalf("exit %d; output:\n%s", code, out)
	}
	if e.read("answer.go") != answerGo {
		t.Error("a rejected edit changed the file")
	}
	if tr := e.lastToolResult(); !strings.Contains(tr, "three is the wrong answer") {
		t.Errorf("the model did not get the reason:\n%s", tr)
	}
}

func TestRunWithoutATerminalRejectsWhatTheModeDoesNotAllow(t *testing.T) {
	e := newRunEnv(t)
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"answer.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"answer.go","old_string":"return 1","new_string":"return 2"}`)),
	)
	cmd := exec.Command(agentdBin, "run", "change it")
	cmd.Dir, cmd.Env = e.ws, e.env()
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitNoApprove { // the turn stops there: run_honest_e2e_test.go
		t.Fatalf("%v (want exit status %d)\n%s", err, exitNoApprove, out)
	}
	if e.read("answer.go") != answerGo {
		t.Error("an edit ran without anyone to approve it")
	}
	if !strings.Contains(string(out), "no one can approve") {
		t.Errorf("output:\n%s", out)
	}
	// auto-edit applies edits without asking.
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("read", `{"path":"answer.go"}`)),
		ollamatest.Calls(ollamatest.Call("edit", `{"path":"answer.go","old_string":"return 1","new_string":"return 2"}`)),
		ollamatest.Text("Done."),
	)
	cmd = exec.Command(agentdBin, "run", "--approval", "auto-edit", "change it")
	cmd.Dir, cmd.Env = e.ws, e.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(e.read("answer.go"), "return 2") {
		t.Error("auto-edit did not apply the edit")
	}
}

func TestKilledMidSessionIsResumable(t *testing.T) {
	e := newRunEnv(t)
	e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("read", `{"path":"answer.go"}`)),
		ollamatest.Reply{Text: "Let me think about", Hang: true})
	cmd := exec.Command(agentdBin, "run", "first task")
	cmd.Dir, cmd.Env = e.ws, e.env()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stderr)
	deadline := time.Now().Add(30 * time.Second)
	for len(e.ollama.Chats()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("agentd never reached the second model call")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	// The session is on disk; find it and resume it.
	matches, _ := filepath.Glob(filepath.Join(e.home, "state", "agentd", "sessions", "s-*.jsonl"))
	if len(matches) != 1 {
		t.Fatalf("sessions on disk: %v", matches)
	}
	id := strings.TrimSuffix(filepath.Base(matches[0]), ".jsonl")
	e.ollama.Enqueue(ollamatest.Text("Resumed: the answer is 1."))
	rc := exec.Command(agentdBin, "run", "--resume", id, "what did you find?")
	rc.Dir, rc.Env = e.ws, e.env()
	out, err := rc.CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Resumed: the answer is 1.") {
		t.Errorf("output:\n%s", out)
	}
	// Ending a run sends nothing (an options-less "hand-back" made Ollama reload the model twice
	// per session), and no request made the fake reload the model: every session, killed or
	// resumed, is served by the runner the first one loaded.
	chats := e.ollama.Chats()
	if end := chats[len(chats)-1].Request; len(end.Messages) == 0 {
		t.Errorf("the run ended with a request without messages: %s", chats[len(chats)-1].Body)
	}
	for _, c := range chats {
		if c.Load == "reload" {
			t.Errorf("a request reloaded the model: %s", c.Body)
		}
	}
	var last []api.Message
	for i := len(chats) - 1; i >= 0 && last == nil; i-- {
		if len(chats[i].Request.Messages) > 0 {
			last = chats[i].Request.Messages
		}
	}
	var prompts []string
	readResult := false
	for _, m := range last {
		if m.Role == "user" {
			prompts = append(prompts, m.Content)
		}
		if m.Role == "tool" && strings.Contains(m.Content, "func Answer") {
			readResult = true
		}
	}
	if len(prompts) != 2 || !strings.HasSuffix(prompts[0], "</context>\n\nfirst task") || !readResult { // the context block: agent/prompt.go
		t.Errorf("resumed history: prompts %q, read result kept %v", prompts, readResult)
	}
	if !sessionRE.MatchString(string(out)) {
		t.Errorf("no session line in:\n%s", out)
	}
}

func TestDoctorReportsWhatIsMissing(t *testing.T) {
	e := newRunEnv(t)
	cmd := exec.Command(agentdBin, "doctor", "--model", "missing:1b")
	cmd.Env = e.env()
	out, _ := cmd.CombinedOutput()
	sc := bufio.NewScanner(bytes.NewReader(out))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	text := strings.Join(lines, "\n")
	if !strings.Contains(text, "[ok  ] ollama: reachable") || !strings.Contains(text, "run `ollama pull missing:1b`") {
		t.Errorf("doctor output:\n%s", text)
	}
	if cmd.ProcessState.ExitCode() == 0 {
		t.Error("doctor exited 0 with the model missing")
	}
	// With Ollama down, doctor says how to start it.
	down := exec.Command(agentdBin, "doctor")
	down.Env = append(e.env(), "OLLAMA_HOST=127.0.0.1:1")
	out, _ = down.CombinedOutput()
	if !strings.Contains(string(out), "ollama serve") {
		t.Errorf("doctor with Ollama down:\n%s", out)
	}
}
