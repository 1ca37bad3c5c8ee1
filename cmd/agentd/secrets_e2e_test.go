package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
)

// toolResults returns the tool messages of the model's longest history, in order.
func (e *runEnv) toolResults() []string {
	var out []string
	for _, c := range e.ollama.Chats() { // the request that carried the most history
		if rs := c.ToolResults(); len(rs) > len(out) {
			out = rs
		}
	}
	return out
}

// grep through the real binary never hands the model what .env or a private key holds; named as
// the path, the search asks like a read (and, with no one to ask, is refused).
func TestRunGrepDoesNotPrintSecrets(t *testing.T) {
	e := newRunEnv(t)
	for name, content := range map[string]string{
		".env": "API_KEY=sk-live-0123\n", "keys/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nsk-live-4567\n",
	} {
		p := filepath.Join(e.ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.ollama.Enqueue(
		ollamatest.Calls(ollamatest.Call("grep", `{"pattern":"sk-live|API_KEY"}`)),
		ollamatest.Calls(ollamatest.Call("grep", `{"pattern":"sk-live","glob":".env*"}`)),
		ollamatest.Calls(ollamatest.Call("grep", `{"pattern":"sk-live","path":"keys/id_rsa"}`)),
		ollamatest.Text("Nothing found."),
	)
	cmd := exec.Command(agentdBin, "run", "--approval", "yolo", "find the key")
	cmd.Dir, cmd.Env = e.ws, e.env()
	out, err := cmd.CombinedOutput()
	// Exit 5: the third grep needed an approval no one could give, which stops the turn (the
	// model sees its result only when the session continues; stderr has it in full).
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitNoApprove {
		t.Fatalf("%v (want exit status %d)\n%s", err, exitNoApprove, out)
	}
	results := append(e.toolResults(), string(out))
	if len(results) != 3 {
		t.Fatalf("%d tool results, want 2 and the output: %q\n%s", len(results), results, out)
	}
	for i, r := range results {
		if strings.Contains(r, "sk-live-") || strings.Contains(r, "BEGIN OPENSSH") {
			t.Errorf("grep %d handed the model a secret:\n%s", i+1, r)
		}
	}
	for _, r := range results[:2] {
		if !strings.Contains(r, "not searched because") || !strings.Contains(r, "read it or grep with its path") {
			t.Errorf("the result does not say what was skipped and how to see it:\n%s", r)
		}
	}
	if !strings.Contains(results[2], "no one can approve") {
		t.Errorf("grep of a named key was not asked about (and refused without a terminal):\n%s", results[2])
	}
}

// secretsFixture is a workspace with .env, a hard link to it (notes.txt), a hard link to a file
// outside the workspace (docs/aws.txt), a token in the remote URL of .git/config, and a bare
// repository (mirror.git) whose config holds another.
func secretsFixture(t *testing.T) *runEnv {
	t.Helper()
	e := newRunEnv(t)
	outside := filepath.Join(e.home, "aws-credentials")
	for name, content := range map[string]string{
		filepath.Join(e.ws, ".env"): "API_KEY=sk-live-0123\n", outside: "aws_secret_access_key=sk-live-4567\n",
		filepath.Join(e.ws, "mirror.git", "HEAD"):   "ref: refs/heads/main\n",
		filepath.Join(e.ws, "mirror.git", "config"): "[remote \"origin\"]\n\turl = https://me:ghp_tok4567@github.com/o/r.git\n",
	} {
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(e.ws, "docs"), 0o755)
	for link, target := range map[string]string{"notes.txt": filepath.Join(e.ws, ".env"), "docs/aws.txt": outside} {
		if err := os.Link(target, filepath.Join(e.ws, link)); err != nil {
			t.Skipf("no hard links here: %v", err)
		}
	}
	git := exec.Command("git", "remote", "add", "origin", "https://me:ghp_tok0123@github.com/o/r.git")
	git.Dir = e.ws
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git remote add: %v\n%s", err, out)
	}
	return e
}

// Issue 23: a hard link to .env (or to a file outside the workspace) and a token in a git
// remote URL were handed to the model by grep with no path, a broad glob, and read in plan mode.
// Now grep withholds them and says so, glob marks them, reading one asks (and, with no one to
// ask, is not run), and a sandboxed command sees the remote URL redacted.
func TestRunToolsKeepHardLinkedSecretsAndGitCredentials(t *testing.T) {
	secret := regexp.MustCompile(`sk-live-\d|ghp_tok\d`)
	type call struct{ tool, args string }
	for _, c := range []struct {
		name  string
		calls []call // the last one needs an approval no one can give
	}{
		{"grep, glob, then read .git/config", []call{
			{"grep", `{"pattern":"sk-live|ghp_tok"}`},
			{"grep", `{"pattern":"sk-live|ghp_tok","glob":"**/*.txt"}`},
			{"grep", `{"pattern":"sk-live|ghp_tok","path":"mirror.git"}`},
			{"glob", `{"pattern":"**/*"}`},
			{"bash", `{"command":"cat .git/config && echo listed"}`},
			{"read", `{"path":".git/config"}`},
		}},
		{"read a hard link to .env", []call{{"read", `{"path":"notes.txt"}`}}},
		{"read a hard link to an outside file", []call{{"read", `{"path":"docs/aws.txt"}`}}},
		{"read a bare repository's config", []call{{"read", `{"path":"mirror.git/config"}`}}},
	} {
		e := secretsFixture(t)
		var replies []ollamatest.Reply
		for _, c := range c.calls {
			replies = append(replies, ollamatest.Calls(ollamatest.Call(c.tool, c.args)))
		}
		e.ollama.Enqueue(append(replies, ollamatest.Text("Nothing found."))...)
		cmd := exec.Command(agentdBin, "run", "--approval", "plan", "find the keys")
		cmd.Dir, cmd.Env = e.ws, e.env()
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitNoApprove {
			t.Fatalf("%s: %v (want exit status %d: the last call asks)\n%s", c.name, err, exitNoApprove, out)
		}
		results := e.toolResults()
		if len(results) != len(c.calls)-1 {
			t.Fatalf("%s: %d tool results, want %d:\n%q", c.name, len(results), len(c.calls)-1, results)
		}
		for i, r := range append(results, string(out)) {
			if m := secret.FindString(r); m != "" {
				t.Errorf("%s: result %d handed the model a secret (%s):\n%s", c.name, i+1, m, r)
			}
		}
		if len(results) > 0 {
			for i, r := range results[:3] {
				if !strings.Contains(r, "not searched because") {
					t.Errorf("%s: grep %d does not say what it withheld:\n%s", c.name, i+1, r)
				}
			}
			if !strings.Contains(results[0], "hard link") || !strings.Contains(results[2], "mirror.git/config") {
				t.Errorf("%s: the withheld files are not named:\n%s\n%s", c.name, results[0], results[2])
			}
			if !strings.Contains(results[3], "may hold secrets") || !strings.Contains(results[3], "notes.txt") || !strings.Contains(results[3], "mirror.git/config") {
				t.Errorf("%s: glob does not mark the hard links and the config:\n%s", c.name, results[3])
			}
			if !strings.Contains(results[4], "https://REDACTED@github.com/o/r.git") || !strings.Contains(results[4], "listed") {
				t.Errorf("%s: the sandboxed command did not see the redacted remote URL:\n%s", c.name, results[4])
			}
		}
		if !strings.Contains(string(out), "no one can approve") {
			t.Errorf("%s: the read was not asked about (and refused without a terminal):\n%s", c.name, out)
		}
	}
}
