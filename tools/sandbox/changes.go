package sandbox

import "io/fs"

// ChangeKind says what a command did to a path.
type ChangeKind string

// Change kinds.
const (
	Created  ChangeKind = "created"
	Modified ChangeKind = "modified"
	Deleted  ChangeKind = "deleted"
	Renamed  ChangeKind = "renamed"
	// ModeChanged: only the permission bits changed (the content is the same).
	ModeChanged ChangeKind = "mode"
)

// Entry types of a Change.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	// TypeOther is a FIFO, socket or device: never applied.
	TypeOther = "other"
)

// Change is one entry of a command's change set, read from its copy-on-write layer.
type Change struct {
	// Root is the workspace root (absolute, canonical); Path is relative to it, slash-separated.
	Root string     `json:"root"`
	Path string     `json:"path"`
	Kind ChangeKind `json:"kind"`
	// From is a rename's old path (relative to Root).
	From string `json:"from,omitzero"`
	// Type is the new entry's type (TypeFile, …), or the deleted entry's.
	Type string `json:"type"`
	// Mode is the new entry's permission bits (files and directories).
	Mode fs.FileMode `json:"mode,omitzero"`
	// Target is a symlink's target.
	Target string `json:"target,omitzero"`
	// Size is a file's new size.
	Size int64 `json:"size,omitzero"`
	// Source is where the new content is (a file in the layer; absolute). Valid until Release.
	Source string `json:"-"`
	// Conflict: the path also changed in the workspace while the command ran (the user, an
	// editor, another program): applying the command's version would overwrite that change.
	Conflict bool `json:"conflict,omitzero"`
}
