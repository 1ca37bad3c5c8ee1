package daemon

import (
	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/rpc"
)

// instructionsInfo describes the session's project instructions for the wire (nil: none).
func instructionsInfo(h *harness.Harness) *rpc.InstructionsInfo {
	in, _ := h.Instructions()
	if in == nil {
		return nil
	}
	return &rpc.InstructionsInfo{Path: in.Path, Bytes: in.Bytes, Truncated: in.Truncated}
}

// sessionWarnings are the session's setup warnings for its info (nil: none).
func sessionWarnings(h *harness.Harness) []string {
	if w := h.ToolShare().Warning; w != "" {
		return []string{w}
	}
	return nil
}
