package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/ollama/ollama/api"
)

// TestMain lets the test binary run as the command (re-executed with FAKEOLLAMA_RUN_MAIN=1), so the
// test exercises main itself without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("FAKEOLLAMA_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestCommandServesScript(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-script", "testdata/example.json", "-exit-with-stdin")
	cmd.Env = append(os.Environ(), "FAKEOLLAMA_RUN_MAIN=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			t.Error("fakeollama did not exit when stdin closed")
		}
	}()

	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v (stderr %s)", err, stderr.String())
	}
	base, err := url.Parse(strings.TrimSpace(line))
	if err != nil || base.Scheme != "http" {
		t.Fatalf("first line %q is not the base URL", line)
	}
	c := api.NewClient(base, http.DefaultClient)
	chat := func(msgs ...api.Message) []api.ChatResponse {
		var out []api.ChatResponse
		err := c.Chat(context.Background(), &api.ChatRequest{Model: "qwen3:8b", Messages: msgs}, func(r api.ChatResponse) error {
			out = append(out, r)
			return nil
		})
		if err != nil {
			t.Fatalf("chat: %v", err)
		}
		return out
	}
	got := chat(api.Message{Role: "user", Content: "please explain main.go"})
	if len(got) != 8 || got[0].Message.Thinking != "I" || got[6].Message.ToolCalls[0].Function.Name != "read_file" || !got[7].Done {
		t.Errorf("first turn: %+v", got)
	}
	got = chat(api.Message{Role: "user", Content: "?"}, api.Message{Role: "tool", Content: "package main"})
	if got[0].Message.Content != "main.go" {
		t.Errorf("second turn: %+v", got)
	}

	resp, err := http.Get(base.String() + "/_fake/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var recs []struct{ Turn int }
	json.NewDecoder(resp.Body).Decode(&recs)
	if len(recs) != 2 || recs[0].Turn != 0 || recs[1].Turn != 1 {
		t.Errorf("requests %+v", recs)
	}
}

func TestCommandRejectsBadScript(t *testing.T) {
	exe, _ := os.Executable()
	path := t.TempDir() + "/bad.json"
	os.WriteFile(path, []byte(`{"turns":[{"reply":{"txt":"typo"}}]}`), 0o644)
	cmd := exec.Command(exe, "-script", path)
	cmd.Env = append(os.Environ(), "FAKEOLLAMA_RUN_MAIN=1")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), `unknown field "txt"`) {
		t.Errorf("exit %v, output %s", err, out)
	}
}

// TestReadmeExample: the script shown in README.md is testdata/example.json, and it parses.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("no json block in README.md")
	}
	file, err := os.ReadFile("testdata/example.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(m[1]), bytes.TrimSpace(file)) {
		t.Error("README.md's example differs from testdata/example.json")
	}
	if _, err := ollamatest.ParseScript(file); err != nil {
		t.Error(err)
	}
}
