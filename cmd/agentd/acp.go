package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/agentd/agentd/acp"
	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/harness"
)

// acpLogging sends the log to acp.log in the state directory (cut when it passed 8 MiB) and only
// errors to stderr too; it returns what closes the file. Without a writable state directory the
// log goes to stderr at the error level only.
func acpLogging(stateDir string) func() {
	stderr := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})
	if stateDir == "" {
		stateDir, _ = store.DefaultDir()
	}
	path := filepath.Join(stateDir, "acp.log")
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if st, err := os.Stat(path); err == nil && st.Size() > 8<<20 {
		flags |= os.O_TRUNC
	}
	var f *os.File
	err := os.MkdirAll(stateDir, 0o700)
	if err == nil {
		f, err = os.OpenFile(path, flags, 0o600)
	}
	if err != nil {
		slog.SetDefault(slog.New(stderr))
		return func() {}
	}
	file := slog.NewTextHandler(f, &slog.HandlerOptions{Level: logLevel()})
	slog.SetDefault(slog.New(teeHandler{file, stderr}))
	return func() { f.Close() }
}

// teeHandler sends each record to every handler that takes its level.
type teeHandler []slog.Handler

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			if err := h.Handle(ctx, r.Clone()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(as)
	}
	return out
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}

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
	// An ACP client shows every line the agent writes on stderr as an error (acp.el does): in
	// normal operation agentd writes none. Logs go to a file; stderr gets only errors.
	closeLog := acpLogging(opts.StateDir)
	defer closeLog()
	for _, w := range warnings {
		slog.Warn("config", "warning", w)
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
