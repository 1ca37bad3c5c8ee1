// Package store keeps what agentd must never lose: sessions (append-only JSONL journals that
// survive crashes and can be resumed), per-turn file checkpoints (so every turn can be reverted,
// without git), and the audit log of tool calls.
//
// # On-disk layout
//
// Everything lives under one state directory (DefaultDir: $XDG_STATE_HOME/agentd, by default
// ~/.local/state/agentd), created 0700; every file in it is created 0600.
//
//	sessions/<id>.jsonl                   one agent.Entry per line, append-only (the journal)
//	sessions/<id>.meta.json               small index for List: the Summary as of a byte offset
//	                                      of the journal; rebuilt (or caught up) from the journal
//	                                      when missing, corrupt or behind
//	checkpoints/objects/<sha256>          content-addressed pre-images of files (deduplicated,
//	                                      written atomically, shared by every session)
//	checkpoints/<session-id>/<turn>.json  one manifest per turn that changed files
//	checkpoints/<session-id>/<turn>.intents  append-only: the content each write of the turn
//	                                      was about to put on disk (Intend), one fsync a record
//	audit/<yyyy-mm-dd>.jsonl              one AuditRecord per tool call, and one per change a
//	                                      call proposed for review (a follow-up), one file per
//	                                      UTC day, for every session (each names its session)
//
// The audit log is split by day rather than by session: it answers "what did agentd do
// yesterday", across sessions, and old days can be deleted by age without touching sessions.
//
// # Durability
//
// A journal line is written to the file (one write, O_APPEND) as soon as it is appended, so a
// crash of agentd (panic, SIGKILL, OOM) loses nothing that was appended; Sync fsyncs, so an
// operating-system crash or a power loss loses at most what came after the last Sync (the loop
// syncs at turn boundaries). A torn last line is ignored by Load and cut off by Resume; a line
// that does not parse is skipped with a log line, never failing the session.
//
// Checkpoint objects and manifests are written to a temporary file, fsynced and renamed into place
// (then the directory is fsynced): a reader sees the old or the new file, never a mix. The meta
// index is replaced the same way without fsyncs: it is checked against the journal and rebuilt.
// A pre-image and the manifest naming it are durable before the file is first changed (the two
// are written in parallel); each later write of the turn costs one fsync, of its intent record
// (the turn's log stays open), and the manifest's post-images are saved at the turn's end (a
// crash before that reverts from the intent log). Sync also makes the renames of the tools'
// writes durable (fsafe.SyncDirs), in parallel with the journal's own fsync.
//
// # Concurrency
//
// One process owns a state directory's writers: a session has one writer (Create or Resume; a
// second one, in this process or another, gets ErrSessionOpen through an advisory lock), while
// List and Load may run concurrently with it from any goroutine. Checkpoints and Audit are safe
// for concurrent use.
package store
