package harness

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/policy"
)

// InstructionsFile is the project instructions file agentd reads at the workspace root.
//
// Only the root's file is read, once when a session starts: it goes into the context block of
// every request, so it must not change during a session (a change would re-evaluate the whole
// conversation). Nested AGENTS.md files nearer an edited file are not read: they would change the
// prompt in the middle of a session.
const InstructionsFile = "AGENTS.md"

// instructionsState is what a harness found of the project instructions.
type instructionsState struct {
	// In is the file as the model reads it; nil when not used.
	In *agent.Instructions
	// Untrusted: the workspace has the file, but it is not trusted, so the file was not read.
	Untrusted bool
}

// readInstructions reads the project instructions of a workspace, only when the user trusts the
// workspace (the same trust list as .agentd/config): a cloned repository must not steer the model
// before the user said it may. The file is read through os.Root (a symlink cannot lead outside the
// workspace), must be a regular file, and at most MaxInstructionsBytes+1 bytes are read. Any
// failure means no instructions (logged).
func readInstructions(loc policy.Locations, root string) instructionsState {
	r, err := os.OpenRoot(root)
	if err != nil {
		return instructionsState{}
	}
	defer r.Close()
	st, err := r.Stat(InstructionsFile) // a link may point inside the workspace, not out of it
	if errors.Is(err, fs.ErrNotExist) {
		return instructionsState{}
	}
	if err != nil {
		slog.Warn("project instructions not read", "file", InstructionsFile, "workspace", root, "err", err)
		return instructionsState{}
	}
	if !trustedWorkspace(loc, root) {
		return instructionsState{Untrusted: true}
	}
	if !st.Mode().IsRegular() {
		slog.Warn("project instructions not read: not a regular file", "file", InstructionsFile, "workspace", root)
		return instructionsState{}
	}
	f, err := r.Open(InstructionsFile)
	if err != nil {
		slog.Warn("project instructions not read", "file", InstructionsFile, "workspace", root, "err", err)
		return instructionsState{}
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		slog.Warn("project instructions not read: not a regular file", "file", InstructionsFile, "workspace", root)
		return instructionsState{}
	}
	data, err := io.ReadAll(io.LimitReader(f, agent.MaxInstructionsBytes+1))
	if err != nil {
		slog.Warn("project instructions not read", "file", InstructionsFile, "workspace", root, "err", err)
		return instructionsState{}
	}
	return instructionsState{In: agent.NewInstructions(InstructionsFile, data, st.Size())}
}

// trustedWorkspace reports whether the user trusts the workspace; an unreadable trust list means no.
func trustedWorkspace(loc policy.Locations, root string) bool {
	if loc.StateDir == "" {
		return false
	}
	ts, err := policy.OpenTrust(loc.TrustFile())
	if err != nil {
		slog.Warn("trust list unreadable: the workspace is treated as untrusted", "err", err)
		return false
	}
	return ts.Trusted(root)
}

// Instructions returns the project instructions the session uses (nil: none), and whether the
// workspace has an instructions file that was ignored because the workspace is not trusted.
func (h *Harness) Instructions() (in *agent.Instructions, untrusted bool) {
	f := h.facts()
	return f.Instructions, h.instr.Untrusted
}

// InstructionsNote is the line `agentd run` prints about the project instructions ("" : none).
func InstructionsNote(in *agent.Instructions, untrusted bool) string {
	switch {
	case in != nil && in.Truncated:
		return fmt.Sprintf("using %s (%s, truncated to %s)", in.Path, humanBytes(in.Bytes), humanBytes(int64(len(in.Text))))
	case in != nil:
		return fmt.Sprintf("using %s (%s)", in.Path, humanBytes(in.Bytes))
	case untrusted:
		return InstructionsFile + " not used: the workspace is not trusted"
	}
	return ""
}

func humanBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f KB", float64(n)/1024)
}
