// Command agentd is a coding agent daemon for editors, driven by a local Ollama model.
//
//	agentd run [flags] "prompt"     one turn in a workspace, approving in the terminal
//	agentd serve --stdio | --listen  the editor daemon (LSP base protocol)
//	agentd connect                   an editor's entry point: forwards stdio to the shared daemon
//	agentd revert                    restores the files of a session's last turn
//	agentd mcp approve [NAME]        lists / approves the MCP servers a workspace proposes
//	agentd doctor                    checks Ollama, the model, ripgrep and the sandbox
//	agentd version
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/agentd/agentd/tools/gocache"
	"github.com/agentd/agentd/tools/sandbox"
)

var version = "0.1.0"

func main() {
	// The sandbox helper and the go command's cache program (tools/gocache) run inside the
	// sandbox, before anything else.
	if len(os.Args) > 1 && (sandbox.IsHelperArg(os.Args[1]) || os.Args[1] == gocache.Arg) {
		sandbox.HelperMain()
		return
	}
	// Logs go to stderr; stdout may carry the protocol.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()})))
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var code int
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "run":
		code = runCmd(args)
	case "serve":
		code = serveCmd(args)
	case "acp":
		code = acpCmd(args)
	case "connect":
		code = connectCmd(args)
	case "doctor":
		code = doctorCmd(args)
	case "revert":
		code = revertCmd(args)
	case "mcp":
		code = mcpCmd(args)
	case "version", "--version", "-v":
		fmt.Println("agentd", version)
	case "help", "--help", "-h":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "agentd: unknown command %q\n", cmd)
		usage()
		code = 2
	}
	os.Exit(code)
}

func usage() {
	fmt.Fprint(os.Stderr, `agentd — a coding agent for editors, driven by a local Ollama model

usage:
  agentd run [-C DIR] [--model M] [--approval ask|auto-edit|plan|yolo] [--resume ID] "prompt"
  agentd serve --stdio | --listen [--socket PATH]
  agentd connect [--socket PATH]
  agentd acp                       an Agent Client Protocol agent on stdio (Zed, JetBrains, …)
  agentd revert [-C DIR] [--session ID] [--turn T]
  agentd mcp approve [-C DIR] [--yes] [NAME]   list / approve the MCP servers a trusted workspace proposes
  agentd doctor
  agentd version

Common flags: --ollama-host, --model, --approval, --context-length, --think, --state-dir,
--completion-model.
Environment: OLLAMA_HOST, AGENTD_MODEL, AGENTD_APPROVAL, AGENTD_CONTEXT_LENGTH,
AGENTD_COMPLETION_MODEL, AGENTD_LOG=debug.
Config: $XDG_CONFIG_HOME/agentd/config (lines such as "model qwen3:8b", "mode auto-edit").

agentd run exits 0 when the turn is done and no call was refused; 1 on an error; 2 on bad flags or
configuration; 3 at the turn's step or time limit; 4 when a call was refused (rejected at the
prompt, or not permitted); 5 when a call needed an approval no one could give (no terminal), which
stops the turn; 130 when cancelled.
`)
}

func logLevel() slog.Level {
	switch os.Getenv("AGENTD_LOG") {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	}
	return slog.LevelInfo
}
