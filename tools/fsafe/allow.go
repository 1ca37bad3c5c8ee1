package fsafe

import (
	"path"
	"strings"
)

// The allowlist: what a change may do to a workspace without the user's review. It is one list
// for every way a change reaches the workspace — the file tools (edit, write), commands and MCP
// servers (their change sets, read from the copy-on-write layer) — because the question is the
// same: could this path make something run later, outside the sandbox (git, a hook manager, an
// editor opening the folder, a shell entering it, another agent)? Names are matched case-folded
// (on a case-insensitive file system .GIT is .git) at any depth.
//
// A path is ordinary when every component is:
//   - a name that does not start with "." (project files, sources, build outputs), other than
//     the names git treats as a repository's own (HEAD, commondir, gitdir) and the files that
//     instruct agents (AGENTS.md) or define editor workspaces (*.code-workspace); or
//   - one of ordinaryDotNames: ignore files, editor-neutral settings and the caches and output
//     directories of common build tools; or
//   - below a .git directory, git's own data for ordinary commands (objects, refs, logs, the
//     index, HEAD and the other *_HEAD files, COMMIT_EDITMSG, packed-refs) — for changes of
//     commands only (see OrdinaryGitData); the file tools never write there without asking.
//
// Everything else — every other dot name (.vscode, .husky, .envrc, .nvim.lua, .exrc, .zed,
// .helix, .devcontainer, .claude, .github, .pre-commit-config.yaml, .npmrc, .vimrc, .agentd, …,
// known or not), every other entry of .git (config, hooks, info, worktrees, modules, alternates)
// and the names above — is reviewed like an edit, in every approval mode.

// ordinaryDotNames are the dot names (lower case) that are ordinary.
var ordinaryDotNames = map[string]bool{
	// Ignore and attribute files: they select files, they run nothing.
	".gitignore": true, ".gitattributes": true, ".gitkeep": true, ".keep": true,
	".dockerignore": true, ".npmignore": true, ".prettierignore": true, ".eslintignore": true,
	".editorconfig": true,
	// Build outputs and caches of common tools.
	".cache": true, ".next": true, ".nuxt": true, ".svelte-kit": true, ".turbo": true,
	".parcel-cache": true, ".angular": true, ".sass-cache": true, ".eslintcache": true,
	".pytest_cache": true, ".mypy_cache": true, ".ruff_cache": true, ".hypothesis": true,
	".tox": true, ".nox": true, ".gradle": true, ".coverage": true, ".nyc_output": true,
	".ds_store": true,
	// What package managers write inside node_modules.
	".bin": true, ".pnpm": true, ".package-lock.json": true, ".yarn-integrity": true,
	".modules.yaml": true,
}

// reviewedNames are names (lower case) that are not ordinary although they do not start with ".".
var reviewedNames = map[string]string{
	"head":      "a file named HEAD makes its directory a git repository, whose config can run programs",
	"commondir": "a commondir file makes its directory a git repository, whose config can run programs",
	"gitdir":    "a gitdir file links a git worktree, whose config can run programs",
	"agents.md": "AGENTS.md instructs coding agents (agentd's included) what to do in this project",
}

// gitData are the entries of a .git directory (lower case, first component below it) that git
// writes for ordinary commands: data, never configuration or code.
var gitData = map[string]bool{
	"objects": true, "refs": true, "logs": true, "index": true, "head": true, "orig_head": true,
	"fetch_head": true, "merge_head": true, "cherry_pick_head": true, "revert_head": true,
	"commit_editmsg": true, "merge_msg": true, "merge_mode": true, "packed-refs": true,
	"shallow": true, "description": true,
}

// Ordinary reports whether a change to the workspace-relative path rel applies without review,
// and if not, why. It does not allow git data (see OrdinaryGitData).
func Ordinary(rel string) (bool, string) { return ordinary(rel, false) }

// OrdinaryGitData is Ordinary, except that git's own data below an existing .git directory
// (objects, refs, logs, the index, HEAD…) is ordinary too: what a command's `git commit` writes.
// The caller checks that the .git directory existed before the change (a new one is a new
// repository, which is reviewed) and that the entry is a regular file or a directory.
func OrdinaryGitData(rel string) (bool, string) { return ordinary(rel, true) }

func ordinary(rel string, gitOK bool) (bool, string) {
	lower := strings.ToLower(strings.Trim(path.Clean("/"+rel), "/"))
	if lower == "" {
		return true, ""
	}
	comps := strings.Split(lower, "/")
	for i, c := range comps {
		if c == ".git" {
			if i == len(comps)-1 {
				return false, "a .git entry makes its directory a git repository, whose config and hooks run programs"
			}
			below := comps[i+1]
			switch {
			case !gitOK:
				return false, "writes under .git/ can install hooks or change git's configuration, which run code later"
			case !gitData[below]:
				return false, ".git/" + below + " is not data git writes for ordinary commands: git's configuration, hooks and links run programs or change what git does"
			case below == "objects" && len(comps) > i+3 && comps[i+2] == "info" && strings.Contains(comps[i+3], "alternates"):
				return false, "objects/info/alternates makes git read objects from another repository"
			}
			return true, "" // the rest of the path is git's own data
		}
		if r, ok := reviewedNames[c]; ok {
			return false, r
		}
		if strings.HasSuffix(c, ".code-workspace") {
			return false, "a VS Code workspace file can define tasks and settings that VS Code runs"
		}
		if strings.HasPrefix(c, ".") && !ordinaryDotNames[c] {
			if r := knownReason(comps[:i+1]); r != "" {
				return false, r
			}
			return false, c + " is not on agentd's list of ordinary names: editors, shells, git hook managers and other tools run or obey such files"
		}
	}
	return true, ""
}

// knownReason is the specific reason for a known protected name (the end of comps), if any.
func knownReason(comps []string) string {
	if r, ok := matchDirs(comps, protectedDirs); ok {
		return r
	}
	return protectedFiles[comps[len(comps)-1]]
}
