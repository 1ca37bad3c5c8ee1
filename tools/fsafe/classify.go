package fsafe

import (
	"path"
	"slices"
	"strings"

	"github.com/agentd/agentd/tools"
)

// A protected directory: a write anywhere under a path component (or component sequence) with
// this name, at any depth, is protected.
type dirRule struct {
	name   string // lower case, slash-separated components
	reason string
}

// Write-protected directories. Writing under them can run code later (git hooks, editor tasks,
// agent hooks) or change how tools behave.
var protectedDirs = []dirRule{
	{".git", "writes under .git/ can install hooks or change git's configuration, which run code later"},
	{".agentd", "writes under .agentd/ change agentd's own configuration"},
	{".vscode", "writes under .vscode/ can define tasks and settings that VS Code runs"},
	{".idea", "writes under .idea/ can define run configurations that JetBrains IDEs execute"},
	{".husky", "writes under .husky/ install git hooks, which run code on commit"},
	{".claude", "writes under .claude/ can define hooks that another agent runs"},
	{".ssh", "writes under .ssh/ can grant remote access or run commands (ProxyCommand)"},
	{".config/git", "writes under .config/git/ change git's configuration, which can run code"},
	{".config/fish", "writes under .config/fish/ change shell startup files, which run code"},
	{".zed", "writes under .zed/ change Zed's project settings and tasks, which run code"},
	{".helix", "writes under .helix/ change Helix's project configuration (language servers it starts)"},
	{".devcontainer", "writes under .devcontainer/ define containers and commands editors run when the folder opens"},
	{".github", "writes under .github/ change CI workflows, which run with the repository's secrets"},
}

// Write-protected file names (lower case), at any depth: files that an editor, a shell, direnv,
// git or an MCP client executes or obeys.
var protectedFiles = map[string]string{
	".nvim.lua":     "Neovim runs .nvim.lua on start (exrc)",
	".nvimrc":       "Neovim runs .nvimrc on start (exrc)",
	".exrc":         "Vim and Neovim run .exrc on start (exrc)",
	".lazy.lua":     "lazy.nvim runs a project's .lazy.lua",
	".envrc":        "direnv runs .envrc when a shell enters the directory",
	".gitmodules":   "git follows .gitmodules to fetch and check out code",
	".gitconfig":    "git configuration can run code (aliases, hooks path, filters)",
	".mcp.json":     "MCP clients start the servers listed in .mcp.json",
	".bashrc":       "shells run their startup files",
	".bash_profile": "shells run their startup files",
	".bash_login":   "shells run their startup files",
	".bash_logout":  "shells run their startup files",
	".profile":      "shells run their startup files",
	".zshrc":        "shells run their startup files",
	".zshenv":       "shells run their startup files",
	".zprofile":     "shells run their startup files",
	".zlogin":       "shells run their startup files",
	".zlogout":      "shells run their startup files",
	".kshrc":        "shells run their startup files",
	".cshrc":        "shells run their startup files",
	".tcshrc":       "shells run their startup files",
	".inputrc":      "readline startup files can bind keys to commands",
	".vimrc":        "Vim runs a .vimrc it finds (exrc)",
	".gvimrc":       "Vim runs a .gvimrc it finds (exrc)",
	".npmrc":        ".npmrc can change what npm runs (scripts, the node and shell it uses)",
	".yarnrc":       ".yarnrc can change what yarn runs",
	".yarnrc.yml":   ".yarnrc.yml can load yarn plugins, which run code",
	".pnpmfile.cjs": "pnpm runs .pnpmfile.cjs on install",

	".pre-commit-config.yaml": "pre-commit runs the hooks .pre-commit-config.yaml lists on every commit",
	"agents.md":               "AGENTS.md instructs coding agents (agentd's included) what to do in this project",
}

// Write-protected file names (lower case) that make a directory a git directory: git treats a
// directory holding HEAD (with objects/ and refs/), or a commondir file, as a repository and obeys
// its config, which can run programs (core.fsmonitor, core.hooksPath, filters). A file tool may
// not make one without asking, at any depth: a later command, or the user's own git, would find a
// repository a model planted. Commands' change sets pass the same allowlist (Ordinary).
var gitDirFiles = map[string]string{
	"head":      "a file named HEAD makes its directory a git repository, whose config can run programs",
	"commondir": "a commondir file makes its directory a git repository, whose config can run programs",
	"gitdir":    "a gitdir file links a git worktree, whose config can run programs",
}

// Read-sensitive directories (any depth).
var sensitiveDirs = []dirRule{
	{".ssh", "files under .ssh/ hold private keys"},
	{".aws", "files under .aws/ hold cloud credentials"},
	{".gnupg", "files under .gnupg/ hold private keys"},
}

// Read-sensitive file names (lower case), at any depth.
var sensitiveFiles = map[string]string{
	".netrc":           ".netrc holds passwords",
	"_netrc":           "_netrc holds passwords",
	".npmrc":           ".npmrc may hold registry tokens",
	".pypirc":          ".pypirc may hold registry tokens",
	".yarnrc.yml":      ".yarnrc.yml may hold registry tokens",
	".pgpass":          ".pgpass holds database passwords",
	".git-credentials": ".git-credentials holds git passwords",
	".htpasswd":        ".htpasswd holds password hashes",
	"id_rsa":           "a private SSH key",
	"id_dsa":           "a private SSH key",
	"id_ecdsa":         "a private SSH key",
	"id_ecdsa_sk":      "a private SSH key",
	"id_ed25519":       "a private SSH key",
	"id_ed25519_sk":    "a private SSH key",
	"credentials":      "a credentials file",
	"environ":          "a process environment (/proc/<pid>/environ) may hold secrets",
}

// Read-sensitive name prefixes: private SSH keys under other names (id_rsa_work); their .pub
// halves are public.
var sensitiveKeyPrefixes = []string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"}

// Read-sensitive extensions (lower case): key and certificate stores.
var sensitiveExts = []string{".pem", ".key", ".p12", ".pfx", ".p8", ".jks", ".keystore", ".ppk", ".kdbx"}

// Classify reports whether writing the canonical relative path rel (as Path.Rel gives it) is
// protected, and whether reading it is sensitive, with a reason for the approval prompt. The
// match is case-folded (".GIT/config" is protected: on a case-insensitive file system it is
// .git/config) and applies at any depth (a nested repository's .git, a subdirectory's .envrc).
func Classify(rel string) (protected, sensitive bool, reason string) {
	prot, sens := classify(rel)
	var reasons []string
	for _, r := range []string{prot, sens} {
		if r != "" {
			reasons = append(reasons, r)
		}
	}
	return prot != "", sens != "", strings.Join(reasons, "; ")
}

// classify returns why writing rel is protected and why reading it is sensitive ("" for no).
func classify(rel string) (protected, sensitive string) {
	lower := strings.ToLower(strings.Trim(path.Clean("/"+rel), "/"))
	comps := strings.Split(lower, "/")
	base := comps[len(comps)-1]

	if r, ok := matchDirs(comps, protectedDirs); ok {
		protected = r
	} else if r, ok := protectedFiles[base]; ok {
		protected = r
	} else if r, ok := gitDirFiles[base]; ok {
		protected = r
	}

	if r, ok := matchDirs(comps, sensitiveDirs); ok {
		sensitive = r
	} else if r, ok := sensitiveFiles[base]; ok {
		sensitive = r
	} else if strings.HasPrefix(base, ".env") || strings.HasSuffix(base, ".env") {
		sensitive = base + " may hold secrets (environment files usually do)"
	} else if ext := path.Ext(base); ext != "" && slices.Contains(sensitiveExts, ext) {
		sensitive = base + " looks like a key or certificate store"
	} else if ext != ".pub" && slices.ContainsFunc(sensitiveKeyPrefixes, func(p string) bool { return strings.HasPrefix(base, p) }) {
		sensitive = base + " looks like a private SSH key"
	}
	return protected, sensitive
}

// matchDirs reports whether the component sequence of a rule occurs anywhere in comps. The
// directory itself counts: ".git" alone (a worktree's gitdir file, or the directory) matches.
func matchDirs(comps []string, rules []dirRule) (string, bool) {
	for _, r := range rules {
		rc := strings.Split(r.name, "/")
		for i := 0; i+len(rc) <= len(comps); i++ {
			if slices.Equal(comps[i:i+len(rc)], rc) {
				return r.reason, true
			}
		}
	}
	return "", false
}

// Permission describes an access to p for the harness's policy (tools.PermissionMetadata).
//
// A write to a protected path sets Protected; a read of a sensitive path, of a hard-linked file
// (whose content may also live outside the workspace), or of a git configuration that holds a
// credential (see GitConfigName), sets Sensitive. Hard links are not flagged for writes:
// WriteFile replaces the name atomically and leaves other links alone.
func (p Path) Permission(access tools.Access) tools.Permission {
	perm := tools.Permission{Access: access}
	if p.root == nil {
		return perm
	}
	perm.Paths = []string{p.abs}
	protected, sensitive := classify(p.rel)
	switch access {
	case tools.AccessWrite:
		// The allowlist every change passes (Ordinary), commands' and MCP servers' included.
		if ok, why := Ordinary(p.rel); !ok {
			perm.Protected = true
			perm.Reason = why
		} else if protected != "" {
			perm.Protected = true
			perm.Reason = protected
		}
	case tools.AccessRead:
		var reasons []string
		if sensitive != "" {
			perm.Sensitive = true
			reasons = append(reasons, sensitive)
		}
		if p.info.HardLinked() {
			perm.Sensitive = true
			reasons = append(reasons, "the file has other hard links, which may be outside the workspace")
		}
		if p.gitCredentials() {
			perm.Sensitive = true
			reasons = append(reasons, "this git configuration holds a credential (a token or password in a URL, or an http header)")
		}
		perm.Reason = strings.Join(reasons, "; ")
	}
	return perm
}
