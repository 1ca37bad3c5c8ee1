package fsafe

import (
	"slices"
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
		{".github/workflows/ci.yml", false, false},
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
		{".npmrc", false, true},
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

func TestProtectedPathsListsTheRootLevelNames(t *testing.T) {
	got := ProtectedPaths()
	for _, want := range []string{".git/", ".agentd/", ".vscode/", ".idea/", ".nvim.lua", ".nvimrc", ".exrc", ".envrc",
		".gitmodules", ".bashrc", ".zshrc", ".profile", ".bash_profile", ".zprofile", ".mcp.json", ".gitconfig"} {
		if !slices.Contains(got, want) {
			t.Errorf("ProtectedPaths() lacks %q", want)
		}
	}
	for _, p := range got {
		if prot, _, _ := Classify(p); !prot {
			t.Errorf("%q is listed but Classify does not protect it", p)
		}
	}
}

func TestPermissionOfAZeroPath(t *testing.T) {
	perm := Path{}.Permission(tools.AccessWrite)
	if perm.Access != tools.AccessWrite || len(perm.Paths) != 0 || perm.Protected {
		t.Fatalf("zero path permission = %+v", perm)
	}
}
