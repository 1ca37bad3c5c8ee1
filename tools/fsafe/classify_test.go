package fsafe

import (
	"testing"

	"github.com/agentd/agentd/tools"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		rel                  string
		protected, sensitive bool
	}{
		{"main.go", false, false},
		{"README.md", false, false},
		{".git", true, false},
		{".git/config", true, false},
		{".git/hooks/pre-commit", true, false},
		{".GIT/HOOKS/pre-commit", true, false},
		{"vendor/lib/.git/config", true, false},
		{".gitignore", false, false},
		{".github/workflows/ci.yml", true, false},
		{".agentd/config.toml", true, false},
		{".vscode/settings.json", true, false},
		{".Vscode/tasks.json", true, false},
		{".idea/workspace.xml", true, false},
		{".nvim.lua", true, false},
		{"sub/.nvimrc", true, false},
		{".exrc", true, false},
		{".envrc", true, true},
		{".gitmodules", true, false},
		{".bashrc", true, false},
		{".zshrc", true, false},
		{".profile", true, false},
		{".bash_profile", true, false},
		{".zprofile", true, false},
		{".mcp.json", true, false},
		{".gitconfig", true, false},
		{".husky/pre-commit", true, false},
		{".env", false, true},
		{".env.local", false, true},
		{"config/.ENV.production", false, true},
		{"prod.env", false, true},
		{"environment.go", false, false},
		{"id_rsa", false, true},
		{"keys/id_ed25519", false, true},
		{"id_rsa.pub", false, false},
		{"server.pem", false, true},
		{"tls/server.KEY", false, true},
		{"keyboard.go", false, false},
		{".netrc", false, true},
		{".npmrc", true, true},
		{".pypirc", false, true},
		{".ssh/authorized_keys", true, true},
		{".aws/credentials", false, true},
		// A bare-repository shape planted by file tools (HEAD + objects/ + refs/ + config).
		{"x/HEAD", true, false},
		{"HEAD", true, false},
		{"sub/wt/commondir", true, false},
		{"sub/wt/gitdir", true, false},
		{"x/config", false, false},
		{"x/refs/heads/main", false, false},
		{"header.go", false, false},
	} {
		p, s, reason := Classify(tc.rel)
		if p != tc.protected || s != tc.sensitive {
			t.Errorf("Classify(%q) = protected %v, sensitive %v; want %v, %v", tc.rel, p, s, tc.protected, tc.sensitive)
		}
		if (p || s) != (reason != "") {
			t.Errorf("Classify(%q): reason %q", tc.rel, reason)
		}
	}
}

// TestOrdinary: the allowlist every change passes (file tools, commands, MCP servers). The names
// issue 22's attack found writable are all reviewed, at any depth; project files, build
// outputs and git's data (for commands) are not.
func TestOrdinary(t *testing.T) {
	for _, tc := range []struct {
		rel           string
		ordinary, git bool // Ordinary, OrdinaryGitData
	}{
		{"main.go", true, true},
		{"src/pkg/a_test.go", true, true},
		{"bin/app", true, true},
		{".gitignore", true, true},
		{"web/.next/cache/x.json", true, true},
		{"node_modules/.bin/jest", true, true},
		{".git/objects/ab/cdef", false, true},
		{".git/refs/heads/main", false, true},
		{".git/index", false, true},
		{".git/HEAD", false, true},
		{".git/logs/HEAD", false, true},
		{"sub/.git/COMMIT_EDITMSG", false, true},
		{".git/config", false, false},
		{".git/hooks/pre-commit", false, false},
		{".git/info/exclude", false, false},
		{".git/objects/info/alternates", false, false},
		{".git/worktrees/x/gitdir", false, false},
		{".git", false, false},
		{"sub/.git", false, false},
		{"plant/HEAD", false, false},
		{"HEAD", false, false},
		{"x/commondir", false, false},
		{".husky/pre-commit", false, false},
		{".pre-commit-config.yaml", false, false},
		{"sub/.envrc", false, false},
		{"sub/.nvim.lua", false, false},
		{"a/b/.exrc", false, false},
		{"sub/.vscode/tasks.json", false, false},
		{".zed/settings.json", false, false},
		{".helix/languages.toml", false, false},
		{".devcontainer/devcontainer.json", false, false},
		{".vimrc", false, false},
		{".npmrc", false, false},
		{".claude/settings.json", false, false},
		{".agentd/config", false, false},
		{"AGENTS.md", false, false},
		{"docs/agents.md", false, false},
		{"x.code-workspace", false, false},
		{".unknown-tool-rc", false, false},
		{".GIT/config", false, false},
		{".Husky/pre-commit", false, false},
	} {
		ok, why := Ordinary(tc.rel)
		if ok != tc.ordinary || ok == (why != "") {
			t.Errorf("Ordinary(%q) = %v, %q; want %v", tc.rel, ok, why, tc.ordinary)
		}
		if ok, _ := OrdinaryGitData(tc.rel); ok != tc.git {
			t.Errorf("OrdinaryGitData(%q) = %v; want %v", tc.rel, ok, tc.git)
		}
	}
}

func TestPermissionOfAZeroPath(t *testing.T) {
	perm := Path{}.Permission(tools.AccessWrite)
	if perm.Access != tools.AccessWrite || len(perm.Paths) != 0 || perm.Protected {
		t.Fatalf("zero path permission = %+v", perm)
	}
}
