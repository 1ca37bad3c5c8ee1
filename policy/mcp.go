package policy

// MCPCall describes a call of a tool from an MCP server, for Decide.
type MCPCall struct {
	// Server is the server's name in the user's configuration; Tool the tool's name on it.
	Server, Tool string
	// TrustedReadOnly: the server marks the tool readOnlyHint and the user set trustReadOnly for
	// the server. The hint alone never counts: a server can lie.
	TrustedReadOnly bool
}

// decideMCP decides a call of an MCP tool. The server can do anything its sandbox (or, for an
// HTTP server, the server itself) allows, so a call is treated like a command:
//
//  1. plan mode denies it, unless the tool is trusted read-only;
//  2. a session grant for the tool allows it;
//  3. a tool the user trusts to be read-only runs without asking;
//  4. yolo runs it (the server was configured by the user, and stdio servers run sandboxed);
//  5. ask and auto-edit ask.
func (p *Policy) decideMCP(req *Request, mode Mode) Verdict {
	m := req.MCP
	switch {
	case mode == ModePlan && !m.TrustedReadOnly:
		return deny("plan mode does not run MCP tools (tool %s of server %s)", m.Tool, m.Server)
	case mode == ModePlan:
		return allow("read-only tool %s of MCP server %s, trusted for read-only tools (plan)", m.Tool, m.Server)
	}
	if g, ok := p.grants.covering(req, nil); ok {
		return allow("session grant (%s)", g)
	}
	if m.TrustedReadOnly {
		return allow("read-only tool %s of MCP server %s, trusted for read-only tools (trustReadOnly)", m.Tool, m.Server)
	}
	if mode == ModeYolo {
		return allow("yolo mode (MCP server %s)", m.Server)
	}
	return ask(true, "MCP tools ask in %s mode (tool %s of server %s)", mode, m.Tool, m.Server)
}
