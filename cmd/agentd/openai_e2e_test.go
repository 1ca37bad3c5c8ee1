package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/openai/openaitest"
)

// engine openai against the fake OpenAI-compatible server: what the real llama-server cannot be
// made to do on demand.

func fakeEngine(t *testing.T, props string, f func(openaitest.Request) openaitest.Reply) *openaitest.Server {
	t.Helper()
	s := openaitest.NewServer([]openaitest.Model{{ID: "tiny.gguf"}}, props)
	s.HandleChat(f)
	t.Cleanup(s.Close)
	return s
}

func engineEnv(e *runEnv, url string) []string {
	return append(e.env(), "AGENTD_ENGINE=openai", "AGENTD_ENGINE_URL="+url)
}

// A call the server did not parse, left as text in the content, is read by agentd's text
// tool-call fallback and run; so are calls written as text when the server's template takes no
// tools (the request then carries none, and the tools are described in the system prompt).
func TestRunOpenAITextToolCalls(t *testing.T) {
	for _, tc := range []struct {
		name      string
		props     string
		wantTools bool
	}{
		{"native tools, a call left in the text", "", true},
		{"a template without tools", `{"default_generation_settings":{"n_ctx":32768},"chat_template_caps":{"supports_tools":false}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRunEnv(t)
			if err := os.WriteFile(filepath.Join(e.ws, "hello.txt"), []byte("hello from the file\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var sawResult string
			s := fakeEngine(t, tc.props, func(r openaitest.Request) openaitest.Reply {
				if len(r.Tools) > 0 != tc.wantTools {
					return openaitest.Reply{Status: 400, Body: `{"error":{"message":"unexpected tools"}}`}
				}
				last := r.Messages[len(r.Messages)-1]
				if strings.Contains(string(last.Content), "hello from the file") {
					sawResult = string(last.Content)
					return openaitest.Reply{Events: openaitest.Text("It says hello.")}
				}
				return openaitest.Reply{Events: openaitest.Text(`<tool_call>{"name": "read", "arguments": {"path": "hello.txt"}}</tool_call>`)}
			})
			out, code := e.runPTYEnv(engineEnv(e, s.URL), nil, "run", "what does hello.txt say?")
			if code != 0 || !strings.Contains(out, "It says hello.") || sawResult == "" {
				t.Fatalf("exit %d, result seen %q; output:\n%s", code, sawResult, out)
			}
		})
	}
}

// A prompt the server's window cannot hold (llama-server's and vLLM's answers): agentd compacts
// if it can, and never sends the same request again; a fresh session that cannot shrink ends
// with the overflow error and what to do.
func TestRunOpenAIOverflowIsNotResent(t *testing.T) {
	for name, body := range map[string]string{"llama-server": openaitest.OverflowLlama, "vLLM": openaitest.OverflowVLLM} {
		t.Run(name, func(t *testing.T) {
			e := newRunEnv(t)
			s := fakeEngine(t, "", func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Status: 400, Body: body} })
			out, code := e.runPTYEnv(engineEnv(e, s.URL), nil, "run", "hi")
			if code == 0 || !strings.Contains(out, "does not fit the context window") || !strings.Contains(out, "llama-server -c") {
				t.Fatalf("exit %d; output:\n%s", code, out)
			}
			seen := map[string]bool{}
			for _, r := range s.Requests() {
				if seen[string(r)] {
					t.Fatalf("the same request was sent twice after an overflow:\n%s", r)
				}
				seen[string(r)] = true
			}
		})
	}
}

// doctor with engine openai: the server, the model it serves and its window; with nothing
// listening, the URL and how to start a server.
func TestDoctorOpenAIEngine(t *testing.T) {
	e := newRunEnv(t)
	s := fakeEngine(t, `{"default_generation_settings":{"n_ctx":32768},"build_info":"b11669-Debian","chat_template_caps":{"supports_tools":true}}`, nil)
	cmd := exec.Command(agentdBin, "doctor", "--engine", "openai", "--engine-url", s.URL)
	cmd.Dir, cmd.Env = e.ws, e.env()
	out, _ := cmd.CombinedOutput()
	for _, want := range []string{"[ok  ] engine: openai " + s.URL + " reachable (llama-server b11669-Debian)",
		"[ok  ] model: tiny.gguf, context 32768 tokens"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/v1"
	l.Close()
	down := exec.Command(agentdBin, "doctor", "--engine", "openai", "--engine-url", url)
	down.Dir, down.Env = e.ws, e.env()
	out, _ = down.CombinedOutput()
	if !strings.Contains(string(out), "[FAIL] engine: nothing listens at "+url) || !strings.Contains(string(out), "llama-server -m MODEL.gguf") {
		t.Errorf("doctor with nothing listening:\n%s", out)
	}
	if down.ProcessState.ExitCode() == 0 {
		t.Error("doctor exited 0 with nothing listening")
	}
}

// The static prefix — the tools and the system prompt — is the same bytes in every workspace,
// so one server's prefix cache serves every agentd pointed at it.
func TestRunOpenAIStaticPrefixAcrossWorkspaces(t *testing.T) {
	s := fakeEngine(t, "", func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Events: openaitest.Text("ok")} })
	for range 2 {
		e := newRunEnv(t) // a new workspace and home each time
		if out, code := e.runPTYEnv(engineEnv(e, s.URL), nil, "run", "hi"); code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := strings.Index(string(reqs[0]), `"messages":[`)
	end := strings.Index(string(reqs[0])[msgs:], `},{"role":`) // the end of the system message
	if msgs < 0 || end < 0 {
		t.Fatalf("request: %s", reqs[0])
	}
	if prefix := reqs[0][:msgs+end+1]; !strings.HasPrefix(string(reqs[1]), string(prefix)) {
		t.Errorf("the second workspace's request does not start with the first's tools and system prompt:\n%s\n%s", reqs[0], reqs[1])
	}
}
