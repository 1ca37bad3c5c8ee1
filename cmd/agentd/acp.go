package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentd/agentd/acp"
	"github.com/agentd/agentd/harness"
)

// acpCmd runs agentd as an Agent Client Protocol agent on stdio (Zed, JetBrains, Emacs, Neovim's
// ACP clients): JSON-RPC 2.0, one message per line; logs go to stderr. It exits when stdin ends.
func acpCmd(args []string) int {
	fs := flag.NewFlagSet("acp", flag.ContinueOnError)
	var s settings
	s.register(fs)
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: agentd acp [--model M] [--approval MODE] [--ollama-host H]")
		return exitUsage
	}
	opts, warnings, err := s.resolve()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return exitUsage
	}
	for _, w := range warnings {
		fmt.Fprintln(os.Stderr, "agentd: warning:", w)
	}
	// A client that went away must not kill agentd with SIGPIPE before the journals are synced:
	// writes to a closed stdout then fail, and the end of stdin stops the agent.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rt, err := harness.NewRuntime(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return exitError
	}
	defer rt.Close()
	if err := acp.Serve(ctx, rt, os.Stdin, os.Stdout, acp.Options{Version: version}); err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return exitError
	}
	return exitOK
}

// acpHints is how ACP editors start agentd (agentd doctor prints it; README.md has the same).
const acpHints = `
other editors (ACP): they start ` + "`agentd acp`" + ` on stdio
  Zed, settings.json:   "agent_servers": {"agentd": {"command": "agentd", "args": ["acp"]}}
  codecompanion.nvim:   adapters = { acp = { agentd = function() return require("codecompanion.adapters").extend("gemini_cli", { name = "agentd", commands = { default = { "agentd", "acp" } }, defaults = { auth_method = "none" } }) end } }
  avante.nvim:          acp_providers = { agentd = { command = "agentd", args = { "acp" } } }, provider = "agentd"
`
