// Package gitguard undoes the git metadata a sandboxed command plants in the workspace.
//
// The sandbox lets a command write the workspace, and git acts on what it finds there when
// the user runs it later, unsandboxed: core.fsmonitor, core.hooksPath, core.sshCommand,
// core.pager, filter and diff drivers in a repository's configuration are programs, hooks are
// programs, and a commondir file, a config.worktree, a nested repository (a sub/.git
// directory, a .git file saying "gitdir: …", a bare repository's HEAD + objects/ + refs/) or
// a link into a directory the sandbox can write outside the workspace all bring in
// configuration git would read. The user's next `git status` — or the editor's — would run
// them.
//
// A Guard runs in agentd (unsandboxed) around every command, in every sandbox mode: Begin
// walks each workspace root (names and types only, in parallel, never following a link, never
// entering a .git directory) and records every entry named .git at any depth, every git
// directory (the .git directories, bare-repository shaped directories, the targets of .git
// files, modules/** and worktrees/* inside them) with its control paths — config,
// config.worktree, commondir, gitdir, info/attributes, hooks/**, modules/**, worktrees/** —
// by type, content and mode, and every symbolic link. End, after the command ended however it
// ended, walks again and undoes every difference: a .git entry, a control path or a link into
// a writable directory outside the workspace that the command created or replaced is moved to
// the quarantine directory (agentd's state, outside the sandbox); a control path it changed
// or removed is restored. Everything else git writes for ordinary commands (objects, refs,
// logs, index, HEAD, packed-refs, lock files, rebase and merge state) is left alone. Every
// file operation goes through openat2 with RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH or *at
// calls with O_NOFOLLOW on directories opened that way.
//
// Guarded commands on one workspace root are serialized process-wide, so that no snapshot is
// taken in the middle of another guarded command.
package gitguard
