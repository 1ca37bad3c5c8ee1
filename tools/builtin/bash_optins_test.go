package builtin_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/sandbox"
)

// approving is a gate that allows every call with the approval a.
func approving(a tools.Approval) agent.Gate {
	return func(context.Context, agent.GateRequest) (agent.GateDecision, error) {
		cp := a
		return agent.GateDecision{Allow: true, Approval: &cp}, nil
	}
}

// TestBashApprovalOpensTheNamedSocket: the unix sockets of a call's approval reach the sandbox
// of that command; the same command without them cannot connect.
func TestBashApprovalOpensTheNamedSocket(t *testing.T) {
	testutil.NeedTool(t, "nc", "netcat-openbsd")
	forSandboxModes(t, func(t *testing.T, sb *sandbox.Sandbox) {
		sock, accepted := testutil.UnixGreeter(t)
		f := newFixture(t, withBash(func(b *builtin.BashConfig) {
			b.Runner, b.Sandbox = nil, sb
			b.Policy = daemonPolicy(t)
		}))
		cmd := bash("nc -U -w 5 " + sock)
		r := f.run(approving(tools.Approval{UnixSockets: []string{sock}}), "bash", cmd)
		wantType(t, r, tools.OK, "hello-from-socket")
		if d, ok := r.Details.(builtin.BashDetails); !ok || !strings.Contains(d.Sandbox, "unix sockets ON ("+sock+")") {
			t.Errorf("the result's sandbox line does not name the opened socket: %+v", r.Details)
		}
		if n := accepted.Load(); n != 1 {
			t.Errorf("the socket accepted %d connections, want 1", n)
		}
		for name, gate := range map[string]agent.Gate{
			"no approval":          nil,
			"approval, no sockets": approving(tools.Approval{Note: "fine"}),
		} {
			r := f.run(gate, "bash", cmd)
			if strings.Contains(r.Text(), "hello-from-socket") {
				t.Errorf("%s: the command reached the socket:\n%s", name, r.Text())
			}
		}
		if n := accepted.Load(); n != 1 {
			t.Errorf("the socket accepted %d connections after the commands without the opt-in, want still 1", n)
		}
	})
}

// TestBashApprovedSensitiveRead: in bubblewrap mode a sensitive file the approval names is
// readable by that command, and only that file; a command without the approval reads nothing,
// however it spells the name.
func TestBashApprovedSensitiveRead(t *testing.T) {
	sb := bwrapSandbox(t) // only it masks single files
	f := newFixture(t, withBash(func(b *builtin.BashConfig) {
		b.Runner, b.Sandbox = nil, sb
		b.Policy = daemonPolicy(t)
	}))
	f.write(".env", "API_TOKEN=s3cret-env\n")
	f.write("deploy/.env.production", "DB_PASSWORD=s3cret-prod\n")
	env := filepath.Join(f.dir, ".env")
	approved := approving(tools.Approval{ReadableSensitive: []string{env}})

	r := f.run(approved, "bash", bash("cat .env; cat deploy/.env.production"))
	wantType(t, r, tools.OK, "API_TOKEN=s3cret-env")
	if strings.Contains(r.Text(), "s3cret-prod") {
		t.Errorf("a sensitive file the approval does not name was readable:\n%s", r.Text())
	}
	for _, c := range []struct {
		name    string
		gate    agent.Gate
		command string
	}{
		{"yolo, computed name", nil, "e=.en; cat ${e}v"},
		{"yolo, plain name", nil, "cat .env"},
		{"approved for another file", approving(tools.Approval{ReadableSensitive: []string{filepath.Join(f.dir, "deploy/.env.production")}}), "cat .env"},
		{"approval of a directory", approving(tools.Approval{ReadableSensitive: []string{f.dir}}), "cat .env"},
		{"relative path", approving(tools.Approval{ReadableSensitive: []string{".env"}}), "cat .env"},
	} {
		r := f.run(c.gate, "bash", bash(c.command))
		if r.Type != tools.OK || strings.Contains(r.Text(), "s3cret-env") {
			t.Errorf("%s: %s: %s", c.name, r.Type, r.Text())
		}
	}
}
