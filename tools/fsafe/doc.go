// Package fsafe is the one choke point for every file operation a tool performs on behalf of the
// model. Model output is untrusted: a path, a write, a symlink the model planted with bash — each
// may be an attempt to reach outside the workspace or to plant code that runs later.
//
// The layers, from the bottom:
//
//   - Workspace and Path: confinement. Resolve validates a path (no NUL bytes, no over-long
//     names), canonicalizes it (symlinks and ".." resolved physically, dangling links followed),
//     and refuses anything outside every root with a permission_denied error. The canonical path
//     is for policy and display only: every open, stat, mkdir and rename then goes through the
//     root's os.Root (openat-based) on the canonical RELATIVE path, so a directory swapped for a
//     symlink between the check and the use cannot lead outside. After opening, the descriptor's
//     real path is checked against the canonical one, which also catches a swap that stays inside
//     the root (say "foo" → ".git"). Non-regular files (FIFOs, devices, sockets) are refused;
//     hard links are reported in Info and in Path.Permission.
//   - Classify: protected paths (writes always ask: .git/, .vscode/, shell rc files, …) and
//     sensitive paths (reads ask: .env*, private keys, .netrc, …), case-folded, at any depth.
//   - ReadState: what this session's model has seen of each file (a content-hash Stamp, whole or
//     partial). Editing an existing file requires a whole read; a changed file yields a stale
//     error carrying the current content, which then counts as read.
//   - WriteFile: atomic replace (temp file in the same directory, fsync, mode and owner kept,
//     rename, directory fsync; Commit leaves the directory fsync to SyncDirs, see dirsync.go).
//     SweepTemps removes temp files left by a crash.
//   - FS: the facade tools use. Read/ReadLines (editor buffers win over disk), PrepareWrite
//     (resolve + read-first/freshness check, returns the verified current content), Commit
//     (per-file lock, compare-and-swap against what the edit was computed from, write through
//     the editor for open documents or atomically to disk, refresh the stamp).
//   - Normalize/Format.Restore: BOM, line endings and final newline preserved across edits.
//
// Policy (whether to ask) is not decided here: Path.Permission reports the facts for the
// harness's gate. Errors the model can act on are *tools.Error values with a ResultType.
package fsafe
