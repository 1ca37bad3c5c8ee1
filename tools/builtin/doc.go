// Package builtin holds the seven tools every agentd session offers the model: read, glob, grep,
// ls, edit, write and bash. Each is a thin wiring of layers that exist elsewhere:
//
//	read, edit, write   tools/fsafe (confinement, read stamps, atomic or editor writes,
//	                    BOM/line-ending round trips) and preview (diffs, partial application)
//	glob, grep, ls      tools/search (ripgrep or pure Go, same semantics), after fsafe
//	                    confined the path
//	bash                tools/sandbox (bubblewrap / Landlock + seccomp) through the Runner seam
//
// Each tool has a typed argument struct (its JSON Schema is derived from it), a model-facing
// description in a .md file beside it, and typed results: every refusal is a *tools.Error whose
// message a small model can act on, and every path in a result is workspace-relative with
// forward slashes.
//
// Tools never ask for approval: the kernel's pipeline validates (Validator), previews
// (Previewer), gates and then executes. File changes are computed in Validate and Preview (so a
// bad old_string fails before the user is asked) and computed again in Execute against the
// file as it is after the approval wait; fsafe.Commit re-checks freshness under the per-file
// lock right before the write. Only the hunks the user accepted are applied.
//
// Invariant: New returns the tools in a fixed order with byte-identical schemas, so the tool
// list sent to the model never changes within or across sessions (Ollama's prompt cache).
package builtin
