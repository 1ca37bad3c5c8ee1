package daemon

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/mcp"
)

// mcpCallOf names the MCP server and tool behind a tool name of the session, nil for a built-in
// tool (or a name the session does not have).
func mcpCallOf(h *harness.Harness, name string) *rpc.MCPCall {
	reg := h.Registry()
	if reg == nil {
		return nil
	}
	t, ok := reg.Lookup(name)
	if !ok {
		return nil
	}
	mt, ok := t.(*mcp.Tool)
	if !ok {
		return nil
	}
	return &rpc.MCPCall{Server: mt.Server(), Tool: mt.RemoteName()}
}

// mcpReview is the MCP part of a review: the server, the tool and the exact arguments the call
// sends (validated and coerced, keys sorted, as the approval's binding has them).
func mcpReview(t tools.Tool, call *tools.Call) *rpc.MCPCall {
	mt, ok := t.(*mcp.Tool)
	if !ok || call == nil {
		return nil
	}
	out := &rpc.MCPCall{Server: mt.Server(), Tool: mt.RemoteName(), Arguments: json.RawMessage("{}")}
	if p, ok := call.Args.(*map[string]any); ok && p != nil && *p != nil {
		if b, err := json.Marshal(*p); err == nil {
			out.Arguments = b
		}
	}
	return out
}

// resultImages lists a result's images (type and size) for the wire.
func resultImages(r tools.Result) []rpc.ResultImage {
	var out []rpc.ResultImage
	for _, b := range r.Content {
		if b.Type == "image" {
			out = append(out, rpc.ResultImage{MIMEType: b.MIME, Bytes: len(b.Data)})
		}
	}
	return out
}

// textAroundImages is a result's text for the editor when images sit between its text blocks: the
// blocks on their own lines ("A tiny image:" and "The image above…" do not run together).
func textAroundImages(r tools.Result) string {
	var b strings.Builder
	for _, bl := range r.Content {
		if bl.Type != "text" || bl.Text == "" {
			continue
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(bl.Text)
	}
	return b.String()
}

// workspaceRoot resolves a request's workspaceFolder (default: the connection's first folder) to
// a canonical root inside the connection's folders, as session/new does.
func (c *client) workspaceRoot(uri string) (string, error) {
	c.mu.Lock()
	folders := append([]string(nil), c.folders...)
	c.mu.Unlock()
	if uri == "" {
		if len(folders) == 0 {
			return "", rpc.Errorf(rpc.CodeWorkspace, "no workspace folder: open a folder in the editor first")
		}
		return folders[0], nil
	}
	dir, ok := fileURIPath(uri)
	if !ok {
		return "", rpc.Errorf(rpc.CodeWorkspace, "workspaceFolder must be a file: URI, got %q", uri)
	}
	for _, f := range folders {
		if within(f, canonical(dir)) {
			return canonical(dir), nil
		}
	}
	return "", rpc.Errorf(rpc.CodeWorkspace, "%s is not inside a workspace folder of this connection", uri)
}

// mcpProposals lists the MCP servers a workspace proposes and their state. An untrusted
// workspace gets trusted false and nothing to approve.
func (c *client) mcpProposals(params []byte) (any, error) {
	var p rpc.MCPProposalsParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	root, err := c.workspaceRoot(p.WorkspaceFolder)
	if err != nil {
		return nil, err
	}
	got, err := c.srv.rt.MCPProposals(root)
	for _, w := range got.Warnings {
		slog.Warn("mcp", "warning", w)
	}
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeRequestFailed, "reading the MCP approvals: %v", err)
	}
	out := rpc.MCPProposalsResult{WorkspaceFolder: fileURI(root), Trusted: got.Trusted, Proposals: []rpc.MCPProposal{}}
	for _, pr := range got.Proposals {
		out.Proposals = append(out.Proposals, proposalInfo(pr, got.Shadowed[pr.Server.Name]))
	}
	return out, nil
}

func proposalInfo(p mcp.Proposal, shadowed bool) rpc.MCPProposal {
	s := p.Server
	out := rpc.MCPProposal{Name: s.Name, File: p.File, Hash: p.Hash, Error: p.Err}
	if s.Stdio() {
		out.Transport, out.Command, out.Args, out.Env, out.Cwd = "stdio", s.Command, s.Args, s.Env, s.Cwd
	} else {
		out.Transport, out.URL, out.Headers = "http", s.URL, s.Headers
	}
	switch {
	case p.Err != "":
		out.State = rpc.ProposalInvalid
	case shadowed:
		out.State = rpc.ProposalShadowed
	case p.Approved:
		out.State = rpc.ProposalApproved
	default:
		out.State = rpc.ProposalNeedsApproval
	}
	return out
}

// mcpApprove approves one proposal's exact definition (the hash mcp/proposals showed), as
// `agentd mcp approve` does. It applies to sessions created from now on.
func (c *client) mcpApprove(params []byte) (any, error) {
	var p rpc.MCPApproveParams
	if err := rpc.DecodeStrict(params, &p); err != nil {
		return nil, err
	}
	if p.Name == "" || p.Hash == "" {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "mcp/approve needs the proposal's name and hash (from mcp/proposals)")
	}
	root, err := c.workspaceRoot(p.WorkspaceFolder)
	if err != nil {
		return nil, err
	}
	_, err = c.srv.rt.ApproveMCP(root, p.Name, p.Hash)
	switch {
	case errors.Is(err, harness.ErrUntrustedWorkspace):
		return nil, rpc.Errorf(rpc.CodeWorkspace, "%s: %v", root, err)
	case errors.Is(err, harness.ErrNoProposal):
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "%s proposes no MCP server named %q", root, p.Name)
	case err != nil:
		return nil, rpc.Errorf(rpc.CodeRequestFailed, "MCP server %s not approved: %v", p.Name, err)
	}
	slog.Info("mcp: workspace server approved", "server", p.Name, "workspace", root, "hash", p.Hash)
	return rpc.MCPApproveResult{Name: p.Name, Approved: true,
		Note: "approved: MCP server " + p.Name + " starts in new sessions of this workspace (running sessions keep their tools)"}, nil
}
