package harness

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/tools/mcp"
)

// MCPProposals describes the MCP servers a workspace proposes, for a front end that offers to
// approve them (the editors; `agentd mcp approve` is the terminal's way).
type MCPProposals struct {
	// Trusted is false when the workspace is not trusted: Proposals is then empty, since an
	// untrusted workspace's proposals are ignored and cannot be approved.
	Trusted   bool
	Proposals []mcp.Proposal
	// Shadowed names the proposals the user's own mcp.json overrides (a server of that name).
	Shadowed map[string]bool
	Warnings []string
}

// ErrUntrustedWorkspace: the workspace is not trusted, so its MCP proposals cannot be approved.
var ErrUntrustedWorkspace = errors.New("the workspace is not trusted: its MCP proposals are ignored and cannot be approved")

// ErrProposalChanged: the proposal's definition is not the one the user was shown.
var ErrProposalChanged = errors.New("the proposed definition changed since it was shown; look at it again")

// ErrNoProposal: the workspace proposes no server of that name.
var ErrNoProposal = errors.New("the workspace proposes no MCP server of that name")

// MCPProposals reads the workspace's proposals and their state (approved in this workspace, or
// not), as a session started now would see them. ws is a canonical workspace root.
func (rt *Runtime) MCPProposals(ws string) (MCPProposals, error) {
	loc := rt.opts.Policy
	if !trustedWorkspace(loc, ws) {
		return MCPProposals{}, nil
	}
	ps, warnings := mcp.LoadProposals(ws)
	out := MCPProposals{Trusted: true, Proposals: ps, Shadowed: map[string]bool{}, Warnings: warnings}
	if len(ps) == 0 {
		return out, nil
	}
	if err := mcp.OpenApprovals(loc.StateDir).Mark(ws, ps); err != nil {
		return out, err
	}
	cfg, _, err := mcp.LoadConfig(loc.ConfigDir, ws)
	if err != nil {
		// The user's own file does not parse: no session starts MCP servers until it is fixed.
		out.Warnings = append(out.Warnings, err.Error())
		return out, nil
	}
	for _, s := range cfg.Servers {
		for _, p := range ps {
			if strings.EqualFold(s.Name, p.Server.Name) {
				out.Shadowed[p.Server.Name] = true
			}
		}
	}
	return out, nil
}

// ApproveMCP approves the proposal name of a trusted workspace, provided its definition still has
// hash (what the user was shown). The approval is the one `agentd mcp approve` records; sessions
// created from now on start the server, running ones do not.
func (rt *Runtime) ApproveMCP(ws, name, hash string) (mcp.Proposal, error) {
	loc := rt.opts.Policy
	if !trustedWorkspace(loc, ws) {
		return mcp.Proposal{}, ErrUntrustedWorkspace
	}
	ps, _ := mcp.LoadProposals(ws)
	for _, p := range ps {
		if p.Server.Name != name {
			continue
		}
		if p.Err != "" {
			return p, fmt.Errorf("MCP server %s cannot start as proposed: %s", name, p.Err)
		}
		if p.Hash != hash {
			return p, ErrProposalChanged
		}
		return p, mcp.OpenApprovals(loc.StateDir).Approve(ws, p)
	}
	return mcp.Proposal{}, ErrNoProposal
}
