package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

func TestGrantScopes(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{"src", "src2", ".git"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws = canonicalPath(ws)
	p := newTestPolicy(t, ModeAsk, "")
	g := p.Grants()

	in := writeReq(filepath.Join(ws, "src", "a.go"))
	sibling := writeReq(filepath.Join(ws, "src2", "a.go"))
	deep := writeReq(filepath.Join(ws, "src", "x", "y", "new.go")) // does not exist yet
	dotdot := writeReq(filepath.Join(ws, "src", "..", "src2", "a.go"))
	protected := writeReq(filepath.Join(ws, ".git", "config"))
	protected.Permission.Protected = true

	for _, r := range []Request{in, sibling, deep, dotdot, protected} {
		if g.Covers(r) {
			t.Fatalf("covered before any grant: %v", r.Permission.Paths)
		}
	}

	// (c) path prefix: directory-boundary aware.
	pg, err := g.Add(Grant{Scope: ScopePath, Path: filepath.Join(ws, "src")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  Request
		want bool
	}{
		{"inside", in, true},
		{"deeper, not yet existing", deep, true},
		{"sibling with the same string prefix", sibling, false},
		{"dot-dot out of the prefix", dotdot, false},
		{"protected", protected, false},
	} {
		if got := g.Covers(tc.req); got != tc.want {
			t.Errorf("path grant, %s: covers %v, want %v", tc.name, got, tc.want)
		}
	}
	if v := p.Decide(in); v.Decision != Allow {
		t.Errorf("Decide with a path grant: %+v", v)
	}
	if v := p.Decide(protected); v.Decision != Ask {
		t.Errorf("a grant covered a protected path: %+v", v)
	}

	// A symlink inside the granted dir that points outside is judged by its target.
	if err := os.Symlink(filepath.Join(ws, "src2"), filepath.Join(ws, "src", "link")); err != nil {
		t.Fatal(err)
	}
	if g.Covers(writeReq(filepath.Join(ws, "src", "link", "a.go"))) {
		t.Error("a path grant covered a file reached through a symlink to a sibling")
	}

	if !g.Revoke(pg.ID) || g.Revoke(pg.ID) {
		t.Error("Revoke")
	}
	if g.Covers(in) {
		t.Error("covered after revoke")
	}

	// (a) tool.
	if _, err := g.Add(Grant{Scope: ScopeTool, Tool: "edit"}); err != nil {
		t.Fatal(err)
	}
	if !g.Covers(sibling) || g.Covers(protected) {
		t.Error("tool grant: should cover any unprotected edit, never a protected one")
	}
	other := sibling
	other.Tool = "write"
	if g.Covers(other) {
		t.Error("tool grant covered another tool")
	}
}

func TestCommandGrants(t *testing.T) {
	p := newTestPolicy(t, ModeAsk, "")
	g := p.Grants()
	if _, err := g.Add(Grant{Scope: ScopeCommand, Prefix: []string{"npm", "test"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Add(Grant{Scope: ScopeCommand, Prefix: []string{"git", "push"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Add(Grant{Scope: ScopeCommand, Prefix: []string{"sudo"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Add(Grant{Scope: ScopeCommand, Prefix: []string{"rm"}}); err != nil {
		t.Fatal(err)
	}
	unsandboxed := cmdReq("npm test")
	unsandboxed.Unsandboxed = true
	network := cmdReq("npm test")
	network.Network = true
	noSandbox := cmdReq("npm test")
	noSandbox.SandboxAvailable = false
	for _, tc := range []struct {
		name string
		req  Request
		want Decision
	}{
		{"exact prefix", cmdReq("npm test"), Allow},
		{"prefix plus arguments", cmdReq("npm test -- --ci"), Allow},
		{"with a read-only neighbour", cmdReq("npm test && ls"), Allow},
		{"with an uncovered neighbour", cmdReq("npm test && curl x"), Ask},
		{"newline-hidden neighbour", cmdReq("npm test\ncurl x"), Ask},
		{"string prefix only", cmdReq("npm testing"), Ask},
		{"by path", cmdReq("./npm test"), Ask},
		{"redirection", cmdReq("npm test > out"), Ask},
		{"ask rule, grant as specific", cmdReq("git push origin main"), Allow},
		{"forbidden stays denied", cmdReq("sudo ls"), Deny},
		{"forbidden rm -rf / stays denied", cmdReq("rm -rf /"), Deny},
		{"rm grant is broader than the ask rule rm -rf", cmdReq("rm -rf build"), Ask},
		{"rm grant covers plain rm", cmdReq("rm build/x.o"), Allow},
		{"protected target", cmdReq("rm .git/config"), Ask},
		{"sensitive argument", cmdReq("rm .env"), Ask},
		{"unsandboxed", unsandboxed, Ask},
		{"network", network, Ask},
		{"no sandbox", noSandbox, Ask},
		{"parse error", cmdReq("npm test &&"), Ask},
	} {
		if v := p.Decide(tc.req); v.Decision != tc.want {
			t.Errorf("%s (%q): %s (%s), want %s", tc.name, tc.req.Command, v.Decision, v.Reason, tc.want)
		}
	}
	// Plan mode still denies what is not read-only, grant or not.
	_ = p.SetMode(ModePlan)
	if v := p.Decide(cmdReq("npm test")); v.Decision != Deny {
		t.Errorf("plan mode with a grant: %+v", v)
	}
}

func TestToolGrantForCommands(t *testing.T) {
	p := newTestPolicy(t, ModeAsk, "")
	if _, err := p.Grants().Add(Grant{Scope: ScopeTool, Tool: "bash"}); err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]Decision{
		"make build":          Allow, // anything in the sandbox
		"echo $(frob)":        Allow,
		"git push":            Ask, // an ask rule is not covered by a tool grant
		"sudo ls":             Deny,
		"echo x > .git/x":     Ask,
		"ls &&":               Ask,
		"cat ~/.ssh/id_rsa":   Ask,
		"rm -rf node_modules": Ask, // ask rule rm -rf
	} {
		if v := p.Decide(cmdReq(cmd)); v.Decision != want {
			t.Errorf("%q: %s (%s), want %s", cmd, v.Decision, v.Reason, want)
		}
	}
}

func TestSettles(t *testing.T) {
	p := newTestPolicy(t, ModeAsk, "")
	pending := []Request{
		cmdReq("npm test"),           // 0: settled by the grant
		cmdReq("npm test -- --ci"),   // 1: settled
		cmdReq("npm install"),        // 2: not covered
		cmdReq("npm test > log"),     // 3: redirection, not covered
		writeReq("/ws/a.go"),         // 4: not covered
		cmdReq("npm test && sudo x"), // 5: forbidden
	}
	if got := p.Settles(pending); len(got) != 0 {
		t.Fatalf("settled before the grant: %v", got)
	}
	if _, err := p.Grants().Add(Grant{Scope: ScopeCommand, Prefix: []string{"npm", "test"}}); err != nil {
		t.Fatal(err)
	}
	if got := p.Settles(pending); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("Settles = %v, want [0 1]", got)
	}
	if got := p.Grants().Settles(pending); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("Grants.Settles = %v, want [0 1]", got)
	}
	// A mode change settles too: in auto-edit the write applies.
	_ = p.SetMode(ModeAutoEdit)
	if got := p.Settles(pending); !slices.Equal(got, []int{0, 1, 4}) {
		t.Errorf("Settles after auto-edit = %v, want [0 1 4]", got)
	}
}

func TestGrantsValidationAndList(t *testing.T) {
	g := NewGrants()
	for _, bad := range []Grant{
		{Scope: ScopeTool},
		{Scope: ScopeCommand},
		{Scope: ScopeCommand, Prefix: []string{""}},
		{Scope: ScopePath, Path: "relative/dir"},
		{Scope: Scope(9)},
	} {
		if _, err := g.Add(bad); err == nil {
			t.Errorf("Add(%+v) accepted", bad)
		}
	}
	a, _ := g.Add(Grant{Scope: ScopeTool, Tool: "edit"})
	b, _ := g.Add(Grant{Scope: ScopeCommand, Prefix: []string{"go", "generate"}})
	list := g.List()
	if len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID || a.ID == b.ID || list[0].Created.IsZero() {
		t.Fatalf("List = %+v", list)
	}
	list[1].Prefix[0] = "rm" // the list is a copy
	if g.List()[1].Prefix[0] != "go" {
		t.Error("List shares memory with the grants")
	}
	if s := b.String(); s != "command `go generate`" {
		t.Errorf("String = %q", s)
	}
	g.Clear()
	if len(g.List()) != 0 {
		t.Error("Clear")
	}
}

func TestGrantsConcurrent(t *testing.T) {
	p := newTestPolicy(t, ModeAsk, "")
	g := p.Grants()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				gr, err := g.Add(Grant{Scope: ScopeCommand, Prefix: []string{fmt.Sprintf("tool%d", i), "x"}})
				if err != nil {
					t.Error(err)
					return
				}
				if j%2 == 0 {
					g.Revoke(gr.ID)
				}
			}
		}(i)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				_ = g.List()
				_ = p.Decide(cmdReq("tool1 x"))
				_ = g.Covers(cmdReq("tool2 x"))
			}
		}()
	}
	wg.Wait()
	if n := len(g.List()); n != 200 {
		t.Errorf("%d grants left, want 200", n)
	}
}

func TestSuggest(t *testing.T) {
	p := newTestPolicy(t, ModeAsk, "")
	req := cmdReq("npm test -- --ci")
	got := p.Suggest(req, p.Decide(req))
	// Narrowest first: this exact command, its program and subcommand, then the whole tool.
	if len(got) != 3 || !slices.Equal(got[0].Prefix, []string{"npm", "test", "--", "--ci"}) ||
		got[1].Scope != ScopeCommand || !slices.Equal(got[1].Prefix, []string{"npm", "test"}) ||
		got[2].Scope != ScopeTool || got[2].Tool != "bash" {
		t.Errorf("Suggest(npm test -- --ci) = %+v", got)
	}
	got = got[1:]
	// The suggested command grant settles the request.
	if _, err := p.Grants().Add(got[0]); err != nil {
		t.Fatal(err)
	}
	if v := p.Decide(req); v.Decision != Allow {
		t.Errorf("after the suggested grant: %+v", v)
	}
	// For an ask rule, the suggestion is at least as specific as the rule.
	push := cmdReq("git push --force origin main")
	if s := p.Suggest(push, p.Decide(push)); len(s) < 2 || !slices.Equal(s[1].Prefix, []string{"git", "push"}) {
		t.Errorf("Suggest(git push) = %+v", s)
	}
	rmrf := cmdReq("rm -rf build")
	if s := p.Suggest(rmrf, p.Decide(rmrf)); len(s) < 2 || !slices.Equal(s[1].Prefix, []string{"rm", "-rf"}) {
		t.Errorf("Suggest(rm -rf build) = %+v", s)
	}
	// A compound command: one scope per program, never only the whole tool; no "exact" scope
	// when the line runs several commands.
	compound := cmdReq("go vet ./... && go test ./...")
	if s := p.Suggest(compound, p.Decide(compound)); len(s) != 3 || !slices.Equal(s[0].Prefix, []string{"go", "vet"}) ||
		!slices.Equal(s[1].Prefix, []string{"go", "test"}) || s[2].Scope != ScopeTool {
		t.Errorf("Suggest(go vet && go test) = %+v", s)
	}
	twice := cmdReq("go test ./a && go test ./b")
	if s := p.Suggest(twice, p.Decide(twice)); len(s) != 2 || !slices.Equal(s[0].Prefix, []string{"go", "test"}) {
		t.Errorf("Suggest(go test ./a && go test ./b) = %+v", s)
	}
	// Granting both parts covers the compound line.
	p.Grants().Add(Grant{Scope: ScopeCommand, Prefix: []string{"go", "vet"}})
	if v := p.Decide(compound); v.Decision == Allow {
		t.Errorf("half the compound line granted, but it is allowed: %+v", v)
	}
	p.Grants().Add(Grant{Scope: ScopeCommand, Prefix: []string{"go", "test"}})
	if v := p.Decide(compound); v.Decision != Allow {
		t.Errorf("both parts granted, but the compound line is not allowed: %+v", v)
	}
	w := writeReq("/ws/src/a.go")
	if s := p.Suggest(w, p.Decide(w)); len(s) == 0 || s[0].Scope != ScopePath || s[0].Path != "/ws/src" {
		t.Errorf("Suggest(write) = %+v", s)
	}
	prot := writeReq("/ws/.git/config")
	if s := p.Suggest(prot, p.Decide(prot)); s != nil {
		t.Errorf("Suggest(protected) = %+v, want nil", s)
	}
}
