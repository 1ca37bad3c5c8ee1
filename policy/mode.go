package policy

import (
	"fmt"
	"strings"
)

// Mode is an approval mode. The zero value is ModeAsk, the default.
type Mode int

const (
	// ModeAsk: reads are free; edits and commands ask.
	ModeAsk Mode = iota
	// ModeAutoEdit: edits apply without asking (and stay revertible); commands ask unless they are
	// classified read-only, which then run inside the sandbox without asking.
	ModeAutoEdit
	// ModePlan: no writes. Read-only commands run inside the sandbox; every other command is
	// denied, not asked.
	ModePlan
	// ModeYolo: everything is allowed, except that protected paths, sensitive reads, sandbox
	// escapes (unsandboxed, network on) and ask rules still ask, and forbid rules still deny.
	ModeYolo
)

var modeNames = [...]string{ModeAsk: "ask", ModeAutoEdit: "auto-edit", ModePlan: "plan", ModeYolo: "yolo"}

// Modes lists every mode from the strictest to the loosest.
var Modes = []Mode{ModePlan, ModeAsk, ModeAutoEdit, ModeYolo}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Valid reports whether m is one of the four modes.
func (m Mode) Valid() bool { return m >= ModeAsk && m <= ModeYolo }

// ParseMode parses a mode name: "ask", "auto-edit", "plan" or "yolo" (case-insensitive; "autoedit"
// and "auto_edit" are accepted for auto-edit).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ask":
		return ModeAsk, nil
	case "auto-edit", "autoedit", "auto_edit":
		return ModeAutoEdit, nil
	case "plan":
		return ModePlan, nil
	case "yolo":
		return ModeYolo, nil
	}
	return ModeAsk, fmt.Errorf("unknown approval mode %q (want ask, auto-edit, plan or yolo)", s)
}

// MarshalText encodes the mode by name.
func (m Mode) MarshalText() ([]byte, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("invalid approval mode %d", int(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText decodes a mode name (see ParseMode).
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// strictness orders modes: plan > ask > auto-edit > yolo. An invalid mode counts as the
// strictest, so that a corrupted value never loosens anything.
func (m Mode) strictness() int {
	switch m {
	case ModeYolo:
		return 0
	case ModeAutoEdit:
		return 1
	case ModeAsk:
		return 2
	case ModePlan:
		return 3
	}
	return 4
}

// StricterThan reports whether m is strictly stricter than o (plan > ask > auto-edit > yolo).
func (m Mode) StricterThan(o Mode) bool { return m.strictness() > o.strictness() }

// Strictest returns the stricter of two modes.
func Strictest(a, b Mode) Mode {
	if b.StricterThan(a) {
		return b
	}
	return a
}
