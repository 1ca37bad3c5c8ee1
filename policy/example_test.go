package policy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools"
)

// Example shows the daemon's side: load the configuration once per workspace, decide each call,
// bind approvals, and settle pending reviews after an "allow for this session".
func Example() {
	home, _ := os.MkdirTemp("", "agentd-example")
	defer os.RemoveAll(home)
	loc := policy.Locations{ConfigDir: filepath.Join(home, "config"), StateDir: filepath.Join(home, "state")}
	_ = os.MkdirAll(loc.ConfigDir, 0o700)
	_ = os.WriteFile(loc.UserConfigFile(), []byte(`
mode auto-edit
allow npm test
    example npm test -- --ci
`), 0o600)

	cfg, err := policy.Load(loc, "") // pass the workspace root to read a trusted workspace's config
	if err != nil {
		fmt.Println("config:", err)
		return
	}
	p, err := policy.New(*cfg)
	if err != nil {
		fmt.Println(err)
		return
	}

	// The gate: one Request per tool call. sandboxOK comes from the daemon's Landlock probe.
	sandboxOK := true
	bash := func(cmd string) policy.Request {
		return policy.Request{
			Tool:             "bash",
			Permission:       tools.Permission{Access: tools.AccessExec},
			Command:          cmd,
			Preview:          &tools.Preview{Command: &tools.CommandPreview{Argv: []string{"bash", "-c", cmd}, Cwd: "/ws", Sandbox: "landlock"}},
			SandboxAvailable: sandboxOK,
		}
	}
	for _, cmd := range []string{"git status", "npm test", "make build", "sudo make install"} {
		v := p.Decide(bash(cmd))
		fmt.Printf("%-18s %-5s %s\n", cmd, v.Decision, strings.ReplaceAll(v.Reason, loc.UserConfigFile(), "config"))
	}

	// The user answers "allow for this session" on make build: add the suggested grant, then
	// settle every pending review it now covers.
	pending := []policy.Request{bash("make build"), bash("make test"), bash("make build -j8")}
	v := p.Decide(pending[0])
	suggestions := p.Suggest(pending[0], v) // narrowest first: command `make build`, then tool bash
	g, _ := p.Grants().Add(suggestions[0])
	fmt.Println("granted:", g, "settles:", p.Settles(pending))

	// Output:
	// git status         allow allowed: read-only command in sandbox (auto-edit)
	// npm test           allow allowed: rule `allow npm test` (config:3), in sandbox
	// make build         ask   asks: make runs project-defined commands
	// sudo make install  deny  denied: forbidden by rule `forbid sudo` (built-in:12): privilege escalation is never run by the agent
	// granted: command `make build` settles: [0 2]
}
