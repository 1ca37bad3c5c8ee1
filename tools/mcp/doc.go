// Package mcp adds the tools of Model Context Protocol servers to a session, through the same
// pipeline as the built-in tools.
//
// Servers come from the user's configuration ($XDG_CONFIG_HOME/agentd/mcp.json, the `mcpServers`
// shape other MCP clients use, plus agentd's keys: see ServerConfig). A Set starts them when a
// session starts: stdio servers inside agentd's sandbox (tools/sandbox: the workspace and the
// server's own cache directory writable, network off unless configured, an environment reduced
// to MinimalEnv plus the configured variables), streamable HTTP servers on loopback addresses
// only. Their tool lists are read once and fixed for the session. Each tool becomes a Tool named
// server__tool whose input schema validates the model's arguments with tools.Spec.
//
// A call has a timeout and honours cancellation (the SDK sends notifications/cancelled). A server
// that exits, is killed or floods its connection gives the call a clear error result (which
// counts toward the tool's breaker in the kernel), is started again at the next call at most
// ServerConfig.Restarts times per session, and never takes the daemon down. Servers die with
// their session (Set.Close) or with the daemon (the sandbox's parent-death signal).
//
// The package decides nothing about permission: a Tool says which server it belongs to and
// whether its read-only hint is trusted (TrustedReadOnly); the harness's policy decides.
package mcp
