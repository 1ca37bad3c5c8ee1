package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/internal/termtext"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/mcp"
	"github.com/agentd/agentd/tools/sandbox"
)

// doctorMCP lists the servers the workspace (the current directory) proposes and their state, and
// starts the MCP servers of the user's configuration, plus the approved proposals, the way a session does (stdio
// servers in the sandbox, with the current directory as the workspace) and lists their state and
// tools.
//
// It returns the definitions of the MCP tools a session would be offered.
func doctorMCP(out *termtext.Writer, opts harness.Options, f sandbox.Features, report func(ok bool, what, detail, fix string), warn func(what, detail, fix string)) []tools.Definition {
	wd, err := os.Getwd()
	if err != nil {
		wd = "/"
	}
	cfg, warnings, err := mcp.LoadConfig(opts.Policy.ConfigDir, wd)
	for _, w := range warnings {
		warn("mcp", w, "")
	}
	file := filepath.Join(opts.Policy.ConfigDir, mcp.ConfigFile)
	if err != nil {
		report(false, "mcp", err.Error(), "correct "+file)
		return nil
	}
	// The workspace's proposals: listed with their state; the approved ones of a trusted workspace
	// start below like the user's own.
	trusted := workspaceTrusted(opts.Policy, wd)
	props, pw := mcp.AddProposals(cfg, wd, trusted, opts.Policy.StateDir)
	for _, w := range pw {
		slog.Debug("mcp", "warning", w)
	}
	for _, p := range props {
		what := "mcp proposal " + p.Server.Name
		switch {
		case !trusted:
			warn(what, fmt.Sprintf("ignored: the workspace is not trusted (%s)", p.File), "")
		case p.Err != "":
			warn(what, fmt.Sprintf("cannot start (%s): %s", p.File, p.Err), "")
		case !p.Approved:
			warn(what, fmt.Sprintf("not approved (%s): %s", p.File, p.Describe()), p.ApproveCommand())
		default:
			report(true, what, fmt.Sprintf("approved (%s)", p.File), "")
		}
	}
	if len(cfg.Servers) == 0 {
		out.Printf("[ok  ] mcp: no servers configured (%s)\n", file)
		return nil
	}
	sb, _ := sandbox.New(sandbox.Options{Features: &f})
	state, err := os.MkdirTemp("", "agentd-doctor-")
	if err != nil {
		report(false, "mcp", err.Error(), "")
		return nil
	}
	defer os.RemoveAll(state)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = state
	}
	set := mcp.Start(context.Background(), cfg, mcp.Options{Workspace: wd, Sandbox: sb,
		CacheDir: filepath.Join(cache, "agentd", "mcp"),
		Policy:   sandbox.Policy{TmpDir: state}})
	defer set.Close()
	for _, st := range set.Status() {
		what := "mcp " + st.Name
		target := st.Transport + ": " + st.Target
		if st.State != mcp.StateReady {
			report(false, what, fmt.Sprintf("%s (%s): %s", st.State, target, st.Error), "check the server's entry in "+file)
			continue
		}
		detail := fmt.Sprintf("ready (%s)", target)
		if st.Version != "" {
			detail += ", " + st.Version
		}
		// Names are the server's and the configuration's: one line each, whatever they hold.
		detail += fmt.Sprintf("; %d tools: %s", len(st.Tools), lines(st.Tools))
		if len(st.Filtered) > 0 {
			detail += fmt.Sprintf(" (%d left out by tools/disabledTools: %s)", len(st.Filtered), lines(st.Filtered))
		}
		report(true, what, detail, "")
		for _, s := range st.Skipped {
			warn(what, s, "")
		}
	}
	var defs []tools.Definition
	for _, t := range set.Tools() {
		defs = append(defs, tools.Definition{Name: t.Name(), Description: t.Description(), Parameters: t.Spec().Schema()})
	}
	return defs
}

// lines joins names, each shown on one line (termtext.Line).
func lines(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = termtext.Line(n)
	}
	return strings.Join(out, ", ")
}
