// Package preview turns a proposed change to a file into what a reviewer sees and what an editor
// applies: hunks with stable IDs, unified diff text, and LSP text edits with UTF-16 columns. It can
// also apply a chosen subset of hunks.
//
// preview knows nothing of tools, editors or JSON-RPC; it is pure computation on strings.
package preview

// Diff is the difference between two versions of one file.
type Diff struct {
	// Path is the file's workspace-relative path with forward slashes, as shown to the user.
	Path string
	// Old and New are the whole contents before and after. Old is "" for a new file.
	Old, New string
	// Created and Deleted mark a file that did not exist before / will not exist after.
	Created, Deleted bool
	// Hunks are the changed regions in file order. Empty when Old == New.
	Hunks []Hunk
}

// Hunk is one contiguous run of removed and added lines.
//
// Lines keep their line terminators ("\n", "\r\n" or none for a last line without one), so that
// joining them reproduces the exact bytes.
type Hunk struct {
	// ID is stable for the same change: it depends only on the hunk's position and content, so
	// recomputing the diff of the same two texts yields the same IDs.
	ID string
	// OldStart is the 1-based line in Old where the removed lines begin (for a pure insertion, the
	// line before which the added lines go; len(old lines)+1 for an append). OldLines is how many.
	OldStart, OldLines int
	// NewStart is the 1-based line in New where the added lines begin. NewLines is how many.
	NewStart, NewLines int
	// Removed are the OldLines lines of Old that the hunk takes out (nil for a pure insertion).
	Removed []string
	// Added are the NewLines lines of New that the hunk puts in (nil for a pure deletion).
	Added []string
}

// Position is an LSP position: zero-based line and UTF-16 code unit offset.
type Position struct {
	Line      uint32 `json:"line"`
	Character uint32 `json:"character"`
}

// Range is an LSP range, end exclusive.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// TextEdit is an LSP text edit against the Old text.
type TextEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

// Outcome says what a partial application did, in words a model can act on.
type Outcome struct {
	Applied  []string // hunk IDs applied, in file order
	Rejected []string // hunk IDs not applied, in file order
}
