package builtin

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentd/agentd/tools"
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

// OptIns are what one approved command may do beyond the base policy: they come from the
// call's tools.Approval and hold for that command only.
type OptIns struct {
	// UnixSockets are host Unix sockets (absolute) the command may connect to
	// (sandbox.Policy.UnixSockets).
	UnixSockets []string
	// ReadableSensitive are sensitive workspace files (absolute) the sandbox leaves unmasked
	// (sandbox.Policy.ReadableSensitive).
	ReadableSensitive []string
}

func (o OptIns) empty() bool { return len(o.UnixSockets) == 0 && len(o.ReadableSensitive) == 0 }

// OptInRunner is a Runner that can give one command the opt-ins of its approval. The bash tool
// runs a command through a Runner that is not one without them: unix sockets stay denied and
// sensitive files masked (fail closed).
type OptInRunner interface {
	Runner
	// CommandWith is Command with the opt-ins o.
	CommandWith(ctx context.Context, argv []string, dir string, network bool, o OptIns) (*sandbox.Cmd, error)
	// DescribeWith is Describe with the opt-ins o.
	DescribeWith(network bool, o OptIns) (string, error)
}

// SandboxRunner runs commands through a sandbox.Sandbox under a base policy (Network and the
// opt-ins are set per command).
type SandboxRunner struct {
	Sandbox *sandbox.Sandbox
	Policy  sandbox.Policy
}

var _ OptInRunner = (*SandboxRunner)(nil)

// NewSandboxRunner returns a runner over sb for the workspace roots of ws (the policy's
// WorkspaceRoots when nil). The copy-on-write layers of commands whose agentd died are
// discarded now: what they changed was never applied, and never will be.
func NewSandboxRunner(sb *sandbox.Sandbox, p sandbox.Policy, ws *fsafe.Workspace) *SandboxRunner {
	if p.WorkspaceRoots == nil && ws != nil {
		p.WorkspaceRoots = ws.Roots()
	}
	if dir := p.Layers(); dir != "" {
		for _, l := range sandbox.SweepLayers(dir) {
			slog.Warn("bash: discarded the changes of a command that was running when agentd stopped; they were never applied", "layer", l)
		}
	}
	return &SandboxRunner{Sandbox: sb, Policy: p}
}

func (r *SandboxRunner) policy(network bool, o OptIns) sandbox.Policy {
	p := r.Policy
	p.Network = network
	if p.Env == nil {
		p.Env = os.Environ()
	}
	p.Env = scrubEnv(p.Env)
	// The base policy's own lists are kept; the opt-ins are added for this command only (the
	// copies never share a backing array with r.Policy).
	p.UnixSockets = append(slices.Clip(p.UnixSockets), o.UnixSockets...)
	p.ReadableSensitive = append(slices.Clip(p.ReadableSensitive), o.ReadableSensitive...)
	return p
}

// Command implements Runner.
func (r *SandboxRunner) Command(ctx context.Context, argv []string, dir string, network bool) (*sandbox.Cmd, error) {
	return r.CommandWith(ctx, argv, dir, network, OptIns{})
}

// CommandWith implements OptInRunner.
func (r *SandboxRunner) CommandWith(ctx context.Context, argv []string, dir string, network bool, o OptIns) (*sandbox.Cmd, error) {
	return r.Sandbox.Command(ctx, r.policy(network, o), argv, dir)
}

// Describe implements Runner.
func (r *SandboxRunner) Describe(network bool) (string, error) {
	return r.DescribeWith(network, OptIns{})
}

// DescribeWith implements OptInRunner.
func (r *SandboxRunner) DescribeWith(network bool, o OptIns) (string, error) {
	p := r.policy(network, o)
	switch {
	case p.Unsandboxed:
		return "none", nil
	case r.Sandbox.Mode() == sandbox.ModeNone:
		return "", errors.New("no sandbox works on this machine (" + strings.Join(r.Sandbox.Features().Missing(), "; ") + ")")
	}
	return r.Sandbox.Describe(p), nil
}

// optInsOf returns the opt-ins of a call's approval that may hold for a command in the workspace
// roots: the unix sockets as approved (the sandbox refuses a path that is not a socket), and of
// the approved sensitive files only those that are regular files with one link, below a root,
// reached through canonical directories (a symlink is followed: its target must qualify too, and
// both are left unmasked). Anything else stays masked: fail closed.
func optInsOf(a *tools.Approval, roots []string) OptIns {
	if a == nil {
		return OptIns{}
	}
	o := OptIns{UnixSockets: slices.Clone(a.UnixSockets)}
	for _, p := range a.ReadableSensitive {
		ok := readableSensitive(p, roots)
		if len(ok) == 0 {
			slog.Warn("bash: an approved sensitive read stays masked", "path", p)
		}
		for _, q := range ok {
			if !slices.Contains(o.ReadableSensitive, q) {
				o.ReadableSensitive = append(o.ReadableSensitive, q)
			}
		}
	}
	return o
}

// readableSensitive checks one approved sensitive path (see optInsOf) and returns the names the
// sandbox must leave unmasked for it, or nil.
func readableSensitive(p string, roots []string) []string {
	if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return nil
	}
	p = filepath.Clean(p)
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return nil
	}
	name := filepath.Join(dir, filepath.Base(p))
	single := func(fi os.FileInfo) bool {
		st, ok := fi.Sys().(*syscall.Stat_t)
		return fi.Mode().IsRegular() && ok && st.Nlink == 1
	}
	fi, err := os.Lstat(name)
	switch {
	case err != nil || !underRoot(name, roots):
		return nil
	case single(fi):
		return []string{name}
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := filepath.EvalSymlinks(name)
		if err != nil || !underRoot(target, roots) {
			return nil
		}
		if ti, err := os.Lstat(target); err != nil || !single(ti) {
			return nil
		}
		return []string{name, target}
	}
	return nil
}

func underRoot(p string, roots []string) bool {
	for _, r := range roots {
		if strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// commandWith wraps a planned command through r with the opt-ins o. It also returns how the
// command is confined with them ("" when that is the plan's own description).
func commandWith(ctx context.Context, r Runner, pl *bashPlan, o OptIns) (*sandbox.Cmd, string, error) {
	if o.empty() {
		cmd, err := r.Command(ctx, pl.argv, pl.dir, pl.network)
		return cmd, "", err
	}
	or, ok := r.(OptInRunner)
	if !ok {
		slog.Warn("bash: the runner cannot give a command its approved opt-ins; it runs without them",
			"unixSockets", o.UnixSockets, "readableSensitive", o.ReadableSensitive)
		cmd, err := r.Command(ctx, pl.argv, pl.dir, pl.network)
		return cmd, "", err
	}
	desc, err := or.DescribeWith(pl.network, o)
	if err != nil {
		return nil, "", err
	}
	cmd, err := or.CommandWith(ctx, pl.argv, pl.dir, pl.network, o)
	return cmd, desc, err
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
