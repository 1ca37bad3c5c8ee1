package builtin

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/sandbox"
)

// Runner turns a command line into an unstarted process: the seam between the bash tool and
// the sandbox. SandboxRunner is the production implementation; a test or a harness that has
// the user's explicit "run unsandboxed" decision passes another (a SandboxRunner whose policy
// sets Unsandboxed, say).
//
// The bash tool owns everything after Command: it sets Stdin (nil: /dev/null), Stdout and
// Stderr, replaces Cancel with SIGTERM → grace → SIGKILL to the process group, scrubs Env,
// starts, waits and calls Release. The command must be the leader of its own process group
// (sandbox.Command sets Setsid).
type Runner interface {
	// Command wraps argv to run in the absolute directory dir, with network access or not.
	Command(ctx context.Context, argv []string, dir string, network bool) (*sandbox.Cmd, error)
	// Describe says how a command would be confined, for the approval prompt: the sandbox's
	// summary, or "none" for an unsandboxed command. An error means no command can run.
	Describe(network bool) (string, error)
}

// SandboxRunner runs commands through a sandbox.Sandbox under a base policy (Network is set per
// command).
type SandboxRunner struct {
	Sandbox *sandbox.Sandbox
	Policy  sandbox.Policy
}

// NewSandboxRunner returns a runner over sb for the workspace roots of ws, filling the policy's
// defaults: WorkspaceRoots (nil: the roots of ws) and ProtectedPaths (nil: fsafe's protected
// paths, the same ones the file tools ask about).
func NewSandboxRunner(sb *sandbox.Sandbox, p sandbox.Policy, ws *fsafe.Workspace) *SandboxRunner {
	if p.WorkspaceRoots == nil && ws != nil {
		p.WorkspaceRoots = ws.Roots()
	}
	if p.ProtectedPaths == nil {
		for _, pp := range fsafe.ProtectedPaths() {
			p.ProtectedPaths = append(p.ProtectedPaths, strings.TrimSuffix(pp, "/"))
		}
	}
	return &SandboxRunner{Sandbox: sb, Policy: p}
}

func (r *SandboxRunner) policy(network bool) sandbox.Policy {
	p := r.Policy
	p.Network = network
	if p.Env == nil {
		p.Env = os.Environ()
	}
	p.Env = scrubEnv(p.Env)
	return p
}

// Command implements Runner.
func (r *SandboxRunner) Command(ctx context.Context, argv []string, dir string, network bool) (*sandbox.Cmd, error) {
	return r.Sandbox.Command(ctx, r.policy(network), argv, dir)
}

// Describe implements Runner.
func (r *SandboxRunner) Describe(network bool) (string, error) {
	p := r.policy(network)
	switch {
	case p.Unsandboxed:
		return "none", nil
	case r.Sandbox.Mode() == sandbox.ModeNone:
		return "", errors.New("no sandbox works on this machine (" + strings.Join(r.Sandbox.Features().Missing(), "; ") + ")")
	}
	return r.Sandbox.Describe(p), nil
}

// scrubEnv drops the variables a command must never see, whatever the sandbox's allowlist says:
// anything that looks like a credential, and the ssh agent's socket.
func scrubEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !secretEnvName(name) {
			out = append(out, kv)
		}
	}
	return out
}

func secretEnvName(name string) bool {
	u := strings.ToUpper(name)
	if u == "SSH_AUTH_SOCK" {
		return true
	}
	for _, w := range []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}
