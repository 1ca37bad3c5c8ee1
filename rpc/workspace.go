package rpc

// Grants, a workspace's MCP proposals, and the requests agentd sends the editor about its documents.

type GrantListParams struct {
	SessionID string `json:"sessionId"`
}

type GrantListResult struct {
	Grants []Grant `json:"grants"`
}

type Grant struct {
	ID    string     `json:"id"`
	Scope GrantScope `json:"scope"`
}

type GrantRevokeParams struct {
	SessionID string `json:"sessionId"`
	GrantID   string `json:"grantId"`
}

type GrantRevokeResult struct {
	Revoked bool `json:"revoked"`
}

// MCPProposalsParams asks which MCP servers a workspace proposes (.agentd/mcp.json, .mcp.json).
type MCPProposalsParams struct {
	// WorkspaceFolder is a folder URI inside the connection's workspace folders; default: the
	// connection's first workspace folder.
	WorkspaceFolder string `json:"workspaceFolder,omitzero"`
}

// MCPProposalsResult lists the proposals of a trusted workspace. An untrusted workspace gets
// Trusted false and no proposals: its proposals are ignored and cannot be approved.
type MCPProposalsResult struct {
	WorkspaceFolder string        `json:"workspaceFolder"` // URI
	Trusted         bool          `json:"trusted"`
	Proposals       []MCPProposal `json:"proposals"`
}

// MCPProposal is one server a workspace proposes: its exact definition, and its state.
type MCPProposal struct {
	Name string `json:"name"`
	// File is the workspace-relative file that proposes it.
	File string `json:"file"`
	// Transport is "stdio" (Command, Args, Env, Cwd) or "http" (URL, Headers).
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitzero"`
	Args      []string          `json:"args,omitzero"`
	Env       map[string]string `json:"env,omitzero"`
	Cwd       string            `json:"cwd,omitzero"`
	URL       string            `json:"url,omitzero"`
	Headers   map[string]string `json:"headers,omitzero"`
	// Network is whether the server may reach the network: always false for a proposal (only
	// the user's own mcp.json can turn it on); stdio servers run in agentd's sandbox.
	Network bool `json:"network"`
	// Hash identifies the exact definition; mcp/approve must name it.
	Hash string `json:"hash,omitzero"`
	// State: "approved", "needsApproval", "invalid" (Error says why it can never start as
	// written), "shadowed" (the user's own mcp.json has a server of that name, which wins).
	State string `json:"state"`
	Error string `json:"error,omitzero"`
}

// MCP proposal states (MCPProposal.state).
const (
	ProposalApproved      = "approved"
	ProposalNeedsApproval = "needsApproval"
	ProposalInvalid       = "invalid"
	ProposalShadowed      = "shadowed"
)

// MCPApproveParams approves one proposal of a trusted workspace. Hash must be the definition's
// hash from mcp/proposals: a definition changed since it was shown is not approved.
type MCPApproveParams struct {
	WorkspaceFolder string `json:"workspaceFolder,omitzero"`
	Name            string `json:"name"`
	Hash            string `json:"hash"`
}

// MCPApproveResult: the server starts in sessions created from now on, not in running ones.
type MCPApproveResult struct {
	Name     string `json:"name"`
	Approved bool   `json:"approved"`
	// Note says when it applies ("it starts in new sessions of this workspace").
	Note string `json:"note"`
}

// DocumentSaveParams asks the editor to save a document (server → client request).
type DocumentSaveParams struct {
	URI string `json:"uri"`
}

type DocumentSaveResult struct {
	Saved bool `json:"saved"`
}

// DocumentDiagnosticsParams asks the editor for the diagnostics of a document (server → client
// request). The editor answers once its language server has published diagnostics for the
// document's current text (Version, when set, is the version the daemon expects), or after
// SettleMs milliseconds with what it has then.
type DocumentDiagnosticsParams struct {
	URI      string `json:"uri"`
	Version  int32  `json:"version,omitzero"`
	SettleMs int    `json:"settleMs"`
}

// DocumentDiagnosticsResult is the document's diagnostics (errors and warnings are enough).
type DocumentDiagnosticsResult struct {
	Diagnostics []DocumentDiagnostic `json:"diagnostics"`
}

// DocumentDiagnostic is one diagnostic. Line and Character are zero-based, as in LSP.
type DocumentDiagnostic struct {
	Line      int    `json:"line"`
	Character int    `json:"character"`
	Severity  string `json:"severity"`
	Message   string `json:"message"`
	Source    string `json:"source,omitzero"`
}
