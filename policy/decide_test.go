package policy

import (
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/tools"
)

func newTestPolicy(t *testing.T, mode Mode, extraRules string) *Policy {
	t.Helper()
	rules := DefaultRules()
	if extraRules != "" {
		rules = Merge(rules, mustRules(t, extraRules))
	}
	p, err := New(Config{Mode: mode, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readReq(path string) Request {
	return Request{Tool: "read", Permission: tools.Permission{Access: tools.AccessRead, Paths: []string{path}}}
}

func writeReq(path string) Request {
	return Request{Tool: "edit", Permission: tools.Permission{Access: tools.AccessWrite, Paths: []string{path}}}
}

func cmdReq(cmd string) Request {
	return Request{Tool: "bash", Permission: tools.Permission{Access: tools.AccessExec}, Command: cmd, SandboxAvailable: true}
}

const (
	A = Allow
	Q = Ask
	D = Deny
)

func TestDecideTable(t *testing.T) {
	protectedWrite := writeReq("/ws/.git/config")
	protectedWrite.Permission.Protected = true
	protectedWrite.Permission.Reason = "protected path .git/config"
	sensitiveRead := readReq("/ws/.env")
	sensitiveRead.Permission.Sensitive = true
	unsandboxed := cmdReq("ls")
	unsandboxed.Unsandboxed = true
	previewUnsandboxed := cmdReq("ls")
	previewUnsandboxed.Preview = &tools.Preview{Command: &tools.CommandPreview{Argv: []string{"bash", "-c", "ls"}, Sandbox: "none"}}
	network := cmdReq("ls")
	network.Network = true
	previewNetwork := cmdReq("ls")
	previewNetwork.Preview = &tools.Preview{Command: &tools.CommandPreview{Argv: []string{"bash", "-c", "ls"}, Network: true}}
	noLandlock := cmdReq("ls")
	noLandlock.SandboxAvailable = false
	argvOnly := Request{Tool: "exec", Permission: tools.Permission{Access: tools.AccessExec}, SandboxAvailable: true,
		Preview: &tools.Preview{Command: &tools.CommandPreview{Argv: []string{"git", "status"}}}}
	noMetadata := Request{Tool: "mystery", SandboxAvailable: true} // no Access: counts as exec

	rows := []struct {
		name   string
		req    Request
		want   [4]Decision // ask, auto-edit, plan, yolo
		reason string      // substring of every verdict's reason, if set
	}{
		{"read", readReq("/ws/main.go"), [4]Decision{A, A, A, A}, "allowed: reads are free"},
		{"write", writeReq("/ws/main.go"), [4]Decision{Q, A, D, A}, ""},
		{"protected write", protectedWrite, [4]Decision{Q, Q, D, Q}, ""},
		{"protected write (name only)", writeReq("/ws/.vscode/settings.json"), [4]Decision{Q, Q, D, Q}, ""},
		{"sensitive read", sensitiveRead, [4]Decision{Q, Q, Q, Q}, "asks: sensitive read /ws/.env"},
		{"sensitive read (name only)", readReq("/home/u/.ssh/id_ed25519"), [4]Decision{Q, Q, Q, Q}, "sensitive"},
		{"read-only command", cmdReq("ls -la"), [4]Decision{Q, A, A, A}, ""},
		{"read-only pipeline", cmdReq("cat a | grep x | wc -l"), [4]Decision{Q, A, A, A}, ""},
		{"write command", cmdReq("rm x"), [4]Decision{Q, Q, D, A}, ""},
		{"newline-hidden write", cmdReq("ls\nrm x"), [4]Decision{Q, Q, D, A}, ""},
		{"network command", cmdReq("curl https://example.com"), [4]Decision{Q, Q, D, A}, ""},
		{"unknown command", cmdReq("frobnicate"), [4]Decision{Q, Q, D, A}, ""},
		{"unsandboxed", unsandboxed, [4]Decision{Q, Q, Q, Q}, "outside the sandbox"},
		{"unsandboxed (preview)", previewUnsandboxed, [4]Decision{Q, Q, Q, Q}, "outside the sandbox"},
		{"network on", network, [4]Decision{Q, Q, Q, Q}, "network access"},
		{"network on (preview)", previewNetwork, [4]Decision{Q, Q, Q, Q}, "network access"},
		{"unsandboxed write in plan", func() Request { r := cmdReq("rm x"); r.Unsandboxed = true; return r }(), [4]Decision{Q, Q, D, Q}, ""},
		{"forbidden rule", cmdReq("sudo ls"), [4]Decision{D, D, D, D}, "denied: forbidden by rule `forbid sudo`"},
		{"forbidden rule, unsandboxed", func() Request { r := cmdReq("sudo ls"); r.Unsandboxed = true; return r }(), [4]Decision{D, D, D, D}, "forbid"},
		{"forbidden inside a list", cmdReq("ls && rm -rf /"), [4]Decision{D, D, D, D}, "forbid"},
		{"no landlock", noLandlock, [4]Decision{Q, Q, Q, Q}, "no sandbox on this machine"},
		{"no landlock, write", func() Request { r := cmdReq("rm x"); r.SandboxAvailable = false; return r }(), [4]Decision{Q, Q, D, Q}, ""},
		{"parse error", cmdReq("ls &&"), [4]Decision{Q, Q, D, Q}, ""},
		{"ask rule", cmdReq("git push"), [4]Decision{Q, Q, D, Q}, ""},
		{"ask rule on a read-only command", cmdReq("git log"), [4]Decision{Q, Q, Q, Q}, "ask git log"},
		{"allow rule", cmdReq("npm test"), [4]Decision{A, A, D, A}, ""},
		{"allow rule plus write", cmdReq("npm test && rm x"), [4]Decision{Q, Q, D, A}, ""},
		{"command writes a protected path", cmdReq("echo x > .git/hooks/pre-commit"), [4]Decision{Q, Q, D, Q}, ".git/hooks/pre-commit"},
		{"command reads a secret", cmdReq("cat .env"), [4]Decision{Q, Q, Q, Q}, "sensitive"},
		{"direct argv", argvOnly, [4]Decision{Q, A, A, A}, ""},
		{"tool without metadata", noMetadata, [4]Decision{Q, Q, D, A}, ""},
		{"read metadata with a shell command", func() Request {
			r := cmdReq("rm -f x")
			r.Permission.Access = tools.AccessRead
			return r
		}(), [4]Decision{Q, Q, D, A}, ""},
	}
	modes := [4]Mode{ModeAsk, ModeAutoEdit, ModePlan, ModeYolo}
	for _, row := range rows {
		for i, mode := range modes {
			p := newTestPolicy(t, mode, "allow npm test\n  example npm test\nask git log\n  example git log -1\n")
			v := p.Decide(row.req)
			if v.Decision != row.want[i] {
				t.Errorf("%s in %s: %s (%s), want %s", row.name, mode, v.Decision, v.Reason, row.want[i])
				continue
			}
			prefix := map[Decision]string{Allow: "allowed: ", Ask: "asks: ", Deny: "denied: "}[v.Decision]
			if !strings.HasPrefix(v.Reason, prefix) {
				t.Errorf("%s in %s: reason %q does not start with %q", row.name, mode, v.Reason, prefix)
			}
			if row.reason != "" && !strings.Contains(v.Reason, row.reason) {
				t.Errorf("%s in %s: reason %q does not contain %q", row.name, mode, v.Reason, row.reason)
			}
		}
	}
}

func TestDecideReasons(t *testing.T) {
	tests := []struct {
		mode Mode
		req  Request
		want string
	}{
		{ModeAsk, func() Request {
			r := writeReq("/ws/.git/config")
			r.Permission.Protected, r.Permission.Reason = true, "protected path .git/config"
			return r
		}(), "asks: protected path .git/config"},
		{ModeAutoEdit, cmdReq("ls"), "allowed: read-only command in sandbox (auto-edit)"},
		{ModePlan, cmdReq("ls"), "allowed: read-only command in sandbox (plan)"},
		{ModePlan, writeReq("/ws/a.go"), "denied: plan mode forbids writes"},
		{ModeAutoEdit, writeReq("/ws/a.go"), "allowed: edit applies without asking (auto-edit) and stays revertible"},
		{ModeAsk, cmdReq("ls"), "asks: commands ask in ask mode"},
		{ModeAsk, cmdReq("git push"), "asks: rule `ask git push` (built-in:"},
		{ModePlan, cmdReq("rm x"), "denied: plan mode allows only read-only commands (rm changes files or processes)"},
	}
	for _, tc := range tests {
		p := newTestPolicy(t, tc.mode, "")
		if v := p.Decide(tc.req); !strings.HasPrefix(v.Reason, tc.want) {
			t.Errorf("%s: reason %q, want prefix %q", tc.mode, v.Reason, tc.want)
		}
	}
}

func TestDecideGrantable(t *testing.T) {
	p := newTestPolicy(t, ModeAsk, "")
	for _, tc := range []struct {
		req       Request
		grantable bool
	}{
		{cmdReq("rm x"), true},
		{writeReq("/ws/a.go"), true},
		{cmdReq("git push"), true},
		{cmdReq("ls &&"), false},
		{cmdReq("echo x > .git/config"), false},
		{func() Request { r := cmdReq("ls"); r.Network = true; return r }(), false},
		{writeReq("/ws/.git/config"), false},
	} {
		if v := p.Decide(tc.req); v.Decision != Ask || v.Grantable != tc.grantable {
			t.Errorf("%+v: %+v, want ask grantable=%v", tc.req.Command, v, tc.grantable)
		}
	}
}

func TestDecideIgnoresAStaleClassification(t *testing.T) {
	p := newTestPolicy(t, ModeAutoEdit, "")
	stale := Classify("ls")
	req := cmdReq("rm -rf x")
	req.Class = &stale // a classification of another command must not decide
	if v := p.Decide(req); v.Decision == Allow {
		t.Fatalf("allowed rm with a stale read-only classification: %s", v.Reason)
	}
	// With no command at all, a hand-built classification never matches rules or grants.
	handmade := &Classification{Class: ReadOnly, Commands: []Command{{Argv: []string{"ls"}, Class: ReadOnly}}}
	if v := p.Decide(Request{Tool: "x", Class: handmade, SandboxAvailable: true}); v.Decision != Allow {
		t.Errorf("a read-only classification without a command: %+v", v)
	}
}

func TestModeChangesConcurrently(t *testing.T) {
	p := newTestPolicy(t, ModeAsk, "")
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				_ = p.SetMode(Modes[j%len(Modes)])
			}
		}()
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				if v := p.Decide(cmdReq("sudo ls")); v.Decision != Deny {
					t.Errorf("forbidden command not denied: %+v", v)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := p.SetMode(Mode(42)); err == nil {
		t.Error("invalid mode accepted")
	}
}

func TestParseMode(t *testing.T) {
	for s, want := range map[string]Mode{"ask": ModeAsk, "auto-edit": ModeAutoEdit, "AutoEdit": ModeAutoEdit,
		" plan ": ModePlan, "yolo": ModeYolo} {
		if got, err := ParseMode(s); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseMode("bypass"); err == nil {
		t.Error("unknown mode accepted")
	}
	var m Mode
	if err := m.UnmarshalText([]byte("plan")); err != nil || m != ModePlan {
		t.Errorf("UnmarshalText: %v %v", m, err)
	}
	if b, err := ModeAutoEdit.MarshalText(); err != nil || string(b) != "auto-edit" {
		t.Errorf("MarshalText: %q %v", b, err)
	}
	order := []Mode{ModeYolo, ModeAutoEdit, ModeAsk, ModePlan}
	for i := 1; i < len(order); i++ {
		if !order[i].StricterThan(order[i-1]) || order[i-1].StricterThan(order[i]) {
			t.Errorf("%s should be stricter than %s", order[i], order[i-1])
		}
	}
	if Strictest(ModeYolo, ModePlan) != ModePlan || Strictest(ModeAsk, ModeAutoEdit) != ModeAsk {
		t.Error("Strictest")
	}
}
