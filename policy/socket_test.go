package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/sandbox"
)

// TestSocketOptIn: a `socket PATH` line under an allow or ask rule in the user config opens that
// unix socket for the commands the rule decides, and only for command lines in which every
// command that is not read-only is decided by a rule naming it.
func TestSocketOptIn(t *testing.T) {
	f := newConfigFixture(t, `
allow docker ps
    example docker ps -a
    socket /run/docker.sock
ask docker run
    example docker run alpine
    socket /run/docker.sock
    socket /run/user/1000/podman/podman.sock
allow npm test
    example npm test
`, "")
	cfg, err := Load(f.loc, "")
	if err != nil {
		t.Fatal(err)
	}
	for src, want := range map[string][]string{
		"docker ps -a":                   {"/run/docker.sock"},
		"docker ps | grep web":           {"/run/docker.sock"}, // grep is read-only
		"docker run alpine":              {"/run/docker.sock", "/run/user/1000/podman/podman.sock"},
		"docker ps && docker run alpine": {"/run/docker.sock"}, // both rules name it
		"docker ps; npm test":            nil,                  // npm test's rule names none
		"docker ps; python3 x.py":        nil,                  // not read-only, no rule
		"d=docker; $d ps":                nil,                  // not clean
		"npm test":                       nil,
		"ls":                             nil,
		"nc -U /run/docker.sock":         nil,
	} {
		cl := cfg.Rules.Classify(src)
		if got := cl.UnixSockets(); !slices.Equal(got, want) {
			t.Errorf("%q: sockets %q, want %q", src, got, want)
		}
	}
	for _, bad := range []string{
		"socket /run/docker.sock\n",                                  // no rule
		"forbid rm\n    example rm x\n    socket /run/docker.sock\n", // forbid
		"allow docker ps\n    example docker ps\n    socket run/docker.sock\n",
		"allow docker ps\n    example docker ps\n    socket /a /b\n",
	} {
		f := newConfigFixture(t, bad, "")
		if _, err := Load(f.loc, ""); err == nil {
			t.Errorf("config accepted:\n%s", bad)
		}
	}
}

// TestWorkspaceCannotOpenSockets: a trusted workspace's config can add ask rules, but their socket
// lines are dropped with a warning (opening a socket loosens the sandbox).
func TestWorkspaceCannotOpenSockets(t *testing.T) {
	f := newConfigFixture(t, "", "ask docker\n    example docker run x\n    socket /run/docker.sock\n")
	f.trust(t)
	cfg, err := Load(f.loc, f.ws)
	if err != nil {
		t.Fatal(err)
	}
	cl := cfg.Rules.Classify("docker run x")
	if got := cl.UnixSockets(); got != nil {
		t.Errorf("workspace config opened sockets %q", got)
	}
	found := false
	for _, w := range cfg.Warnings {
		found = found || strings.Contains(w, "socket lines")
	}
	if !found {
		t.Errorf("no warning: %q", cfg.Warnings)
	}
}

// TestUnmaskedSensitiveFilesAsk: when the sandbox says it cannot mask the workspace's sensitive
// files (Landlock without bubblewrap), every command asks, in every mode, and no grant covers it.
func TestUnmaskedSensitiveFilesAsk(t *testing.T) {
	p, err := New(Config{Mode: ModeYolo, Rules: DefaultRules()})
	if err != nil {
		t.Fatal(err)
	}
	req := cmdReq("ls")
	req.Preview = &tools.Preview{Command: &tools.CommandPreview{Argv: []string{"bash", "-c", "ls"},
		Sandbox: "Landlock ABI 7 + seccomp (no bubblewrap); network off; " + sandbox.SensitiveUnmasked + " (no bubblewrap): .env, keys/id_rsa"}}
	v := p.Decide(req)
	if v.Decision != Ask || v.Grantable || !strings.Contains(v.Reason, ".env, keys/id_rsa") {
		t.Errorf("yolo, sensitive files unmasked: %+v, want a non-grantable ask naming the files", v)
	}
	req.Preview.Command.Sandbox = "Landlock ABI 7 + seccomp (no bubblewrap); network off"
	if v := p.Decide(req); v.Decision != Allow {
		t.Errorf("yolo, nothing unmasked: %+v, want allow", v)
	}
}

// TestNoLayerAsks: when the sandbox has no copy-on-write layer (Landlock without bubblewrap),
// every command asks, in every mode (read-only ones too), and no grant covers it.
func TestNoLayerAsks(t *testing.T) {
	for _, mode := range []Mode{ModeYolo, ModeAutoEdit, ModePlan} {
		p, err := New(Config{Mode: mode, Rules: DefaultRules()})
		if err != nil {
			t.Fatal(err)
		}
		req := cmdReq("ls")
		req.Preview = &tools.Preview{Command: &tools.CommandPreview{Argv: []string{"bash", "-c", "ls"},
			Sandbox: "Landlock ABI 7 + seccomp (no bubblewrap); network off; " + sandbox.NoLayer + " (no bubblewrap): the command writes your files directly, unreviewed"}}
		if v := p.Decide(req); v.Decision != Ask || v.Grantable || !strings.Contains(v.Reason, "copy-on-write") {
			t.Errorf("%s, no layer: %+v, want a non-grantable ask", mode, v)
		}
	}
}
