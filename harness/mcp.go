package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/mcp"
	"github.com/agentd/agentd/tools/sandbox"
)

// unavailableRunner refuses commands when no sandbox works on this machine: the user must decide
// per command to run it unsandboxed (not offered yet: every command fails with the reason).
type unavailableRunner struct{ rt *Runtime }

func (u unavailableRunner) Command(ctx context.Context, argv []string, dir string, network bool) (*sandbox.Cmd, error) {
	return nil, tools.Errorf(tools.PermissionDenied, "commands cannot run: no sandbox is available on this machine (%s)", strings.Join(u.rt.features.Missing(), "; "))
}

func (u unavailableRunner) Describe(network bool) (string, error) {
	return "", fmt.Errorf("no sandbox available: %s", strings.Join(u.rt.features.Missing(), "; "))
}

// startMCP starts the MCP servers of the user's configuration ($XDG_CONFIG_HOME/agentd/mcp.json),
// and those a trusted workspace proposes that the user approved, for this session; their tools join the registry after the built-in ones. A server that does not
// start is logged and leaves no tools; a configuration that does not parse stops the session.
func (h *Harness) startMCP() error {
	rt := h.rt
	cfg, warnings, err := mcp.LoadConfig(rt.opts.Policy.ConfigDir, h.ws.root)
	for _, w := range warnings {
		slog.Warn("mcp", "warning", w)
	}
	if err != nil {
		return err
	}
	// The workspace's proposals: only in a trusted workspace, each once the user approved it.
	_, warnings = mcp.AddProposals(cfg, h.ws.root, trustedWorkspace(rt.opts.Policy, h.ws.root), rt.opts.Policy.StateDir)
	for _, w := range warnings {
		slog.Warn("mcp", "warning", w)
	}
	if len(h.clientMCP) > 0 {
		merged := *cfg // a copy: the client's servers are this session's only
		merged.Servers = slices.Clone(cfg.Servers)
		taken := map[string]bool{}
		for _, sc := range cfg.Servers {
			taken[strings.ToLower(sc.Name)] = true
		}
		for _, sc := range h.clientMCP {
			if taken[strings.ToLower(sc.Name)] {
				note := fmt.Sprintf("MCP server %s is not started: a server of that name is already configured for this session", sc.Name)
				slog.Warn("mcp", "warning", note)
				h.mcpNotes = append(h.mcpNotes, note)
				continue
			}
			taken[strings.ToLower(sc.Name)] = true
			merged.Servers = append(merged.Servers, sc)
		}
		slices.SortFunc(merged.Servers, func(a, b mcp.ServerConfig) int { return strings.Compare(a.Name, b.Name) })
		cfg = &merged
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = filepath.Join(rt.store.Dir(), "cache")
	}
	// One cache per workspace: a server of another workspace must not be able to leave
	// something there that this workspace's server then runs or trusts.
	wsKey := sha256.Sum256([]byte(h.ws.root))
	h.mcp = mcp.Start(context.Background(), cfg, mcp.Options{
		Workspace: h.ws.root,
		Sandbox:   rt.sandbox,
		FS:        h.fs,
		CacheDir:  filepath.Join(cache, "agentd", "mcp", hex.EncodeToString(wsKey[:8])),
		Policy: sandbox.Policy{
			TmpDir:   h.tmpDir,
			StateDir: rt.store.Dir(),
		},
	})
	return nil
}

// MCPNotes says which of the front end's servers (SessionSpec.MCPServers) were left out before
// starting; MCPStatus has the ones that failed to start.
func (h *Harness) MCPNotes() []string { return h.mcpNotes }

// MCPStatus describes the session's MCP servers and their tools.
func (h *Harness) MCPStatus() []mcp.ServerStatus {
	if h.mcp == nil {
		return nil
	}
	return h.mcp.Status()
}
