package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/agentd/agentd/internal/atomicfile"
	"github.com/agentd/agentd/tools"
)

// ProposalFiles are the workspace files whose servers are proposals: .agentd/mcp.json (agentd's)
// and .mcp.json (the project-scoped file other MCP clients read, in the same mcpServers shape).
var ProposalFiles = []string{filepath.Join(".agentd", ConfigFile), ".mcp.json"}

// ApprovalsFile is the file, in agentd's state directory, that records the proposals the user
// approved, per workspace.
const ApprovalsFile = "mcp-approvals.json"

// maxProposalFile caps a workspace's proposal file.
const maxProposalFile = 256 << 10

// Proposal is one server a workspace proposes. It starts only in a trusted workspace and once the
// user approved this exact definition (Hash).
type Proposal struct {
	Server ServerConfig
	// File is the workspace-relative file that proposes it.
	File string
	// Hash identifies the definition (every key, as parsed); a changed definition is a new one.
	Hash string
	// Err says why the proposal can never start as written ("" : it can, once approved).
	Err string
	// Approved reports whether the user approved this exact definition in this workspace.
	Approved bool
}

// ApproveCommand is the command that approves the proposal.
func (p Proposal) ApproveCommand() string { return "agentd mcp approve " + p.Server.Name }

// Describe renders the definition the user approves.
func (p Proposal) Describe() string {
	s := p.Server
	if s.Stdio() {
		d, _ := json.Marshal(map[string]any{"command": s.Command, "args": s.Args, "env": s.Env, "cwd": s.Cwd})
		return "stdio " + string(d)
	}
	d, _ := json.Marshal(map[string]any{"url": s.URL, "headers": s.Headers})
	return "http " + string(d)
}

// LoadProposals reads the servers the workspace proposes, through os.Root (a link cannot lead
// outside the workspace), regular files only. A server name proposed twice keeps the first
// (.agentd/mcp.json before .mcp.json). A file that does not parse is a warning, not an error: a
// workspace's file must not stop a session. Approved is not set here (see Approvals.Mark).
func LoadProposals(workspace string) ([]Proposal, []string) {
	if workspace == "" {
		return nil, nil
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, nil
	}
	defer root.Close()
	var out []Proposal
	var warnings []string
	seen := map[string]bool{}
	for _, rel := range ProposalFiles {
		data, err := readRegular(root, rel)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("workspace MCP proposals %s: %v", rel, err))
			continue
		}
		var file struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		}
		if err := json.Unmarshal(data, &file); err != nil {
			warnings = append(warnings, fmt.Sprintf("workspace MCP proposals %s: %v", rel, err))
			continue
		}
		names := make([]string, 0, len(file.MCPServers))
		for n := range file.MCPServers {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			if seen[name] {
				warnings = append(warnings, fmt.Sprintf("workspace MCP server %s is proposed again in %s; the first proposal counts", name, rel))
				continue
			}
			seen[name] = true
			out = append(out, parseProposal(name, rel, file.MCPServers[name]))
		}
	}
	return out, warnings
}

func parseProposal(name, rel string, raw json.RawMessage) Proposal {
	p := Proposal{File: rel}
	p.Server.Name = name
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&p.Server); err != nil {
		p.Err = err.Error()
		return p
	}
	p.Server.Name = name
	if err := p.Server.check(); err != nil {
		p.Err = err.Error()
		return p
	}
	// These widen what agentd itself allows; only the user's own configuration may set them.
	if p.Server.Network || p.Server.TrustReadOnly || len(p.Server.Writable) > 0 {
		p.Err = "network, trustReadOnly and writable are accepted only in the user's own mcp.json"
		return p
	}
	if p.Server.Disabled {
		p.Err = "disabled in the workspace's file"
		return p
	}
	// The hash of the parsed definition: key order and spacing in the file do not matter, every
	// key's value does (Go marshals maps with sorted keys).
	canon, err := json.Marshal(struct {
		Name string `json:"name"`
		ServerConfig
	}{name, p.Server})
	if err != nil {
		p.Err = err.Error()
		return p
	}
	sum := sha256.Sum256(canon)
	p.Hash = "sha256:" + hex.EncodeToString(sum[:])
	return p
}

func readRegular(root *os.Root, rel string) ([]byte, error) {
	st, err := root.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxProposalFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxProposalFile {
		return nil, fmt.Errorf("larger than %d KiB", maxProposalFile>>10)
	}
	return data, nil
}

// Approvals records, outside any workspace, the proposals the user approved: per canonical
// workspace path, server name → definition hash. Safe for concurrent use in one process.
type Approvals struct {
	path string
	mu   sync.Mutex
}

// OpenApprovals returns the approvals of agentd's state directory.
func OpenApprovals(stateDir string) *Approvals {
	return &Approvals{path: filepath.Join(stateDir, ApprovalsFile)}
}

func (a *Approvals) load() (map[string]map[string]string, error) {
	data, err := os.ReadFile(a.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[string]map[string]string{}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", a.path, err)
	}
	return m, nil
}

// Mark sets Approved on the proposals whose exact definition the user approved in the workspace.
// An unreadable file approves nothing (the error says why).
func (a *Approvals) Mark(workspace string, ps []Proposal) error {
	a.mu.Lock()
	m, err := a.load()
	a.mu.Unlock()
	if err != nil {
		return err
	}
	got := m[tools.Canonical(workspace)]
	for i := range ps {
		ps[i].Approved = ps[i].Err == "" && got[ps[i].Server.Name] == ps[i].Hash
	}
	return nil
}

// Approve records the proposal's definition as approved in the workspace (replacing an earlier
// approval of that name). The file is written atomically, 0600.
func (a *Approvals) Approve(workspace string, p Proposal) error {
	if p.Err != "" {
		return fmt.Errorf("MCP server %s cannot start as proposed: %s", p.Server.Name, p.Err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	m, err := a.load()
	if err != nil {
		return err
	}
	ws := tools.Canonical(workspace)
	if m[ws] == nil {
		m[ws] = map[string]string{}
	}
	m[ws][p.Server.Name] = p.Hash
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(a.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(a.path, append(data, '\n'))
}

// AddProposals adds to cfg the servers the workspace proposes that may start: only in a trusted
// workspace, only those whose exact definition the user approved, never one whose name the user's
// own configuration already has. It returns the proposals (Approved set) and what to tell the
// user about the others.
func AddProposals(cfg *Config, workspace string, trusted bool, stateDir string) ([]Proposal, []string) {
	ps, warnings := LoadProposals(workspace)
	if len(ps) == 0 {
		return nil, warnings
	}
	if !trusted {
		return ps, append(warnings, fmt.Sprintf("the workspace proposes %d MCP server(s); ignored: the workspace is not trusted", len(ps)))
	}
	if err := OpenApprovals(stateDir).Mark(workspace, ps); err != nil {
		warnings = append(warnings, "MCP approvals unreadable, no proposal starts: "+err.Error())
	}
	mine := map[string]bool{}
	for _, s := range cfg.Servers {
		mine[strings.ToLower(s.Name)] = true
	}
	for _, p := range ps {
		switch {
		case mine[strings.ToLower(p.Server.Name)]:
			warnings = append(warnings, fmt.Sprintf("workspace MCP server %s (%s) not started: your own mcp.json has a server of that name", p.Server.Name, p.File))
		case p.Err != "":
			warnings = append(warnings, fmt.Sprintf("workspace MCP server %s (%s) cannot start: %s", p.Server.Name, p.File, p.Err))
		case !p.Approved:
			warnings = append(warnings, fmt.Sprintf("workspace MCP server %s (%s) not started: it needs your approval (starting it runs the repository's code): %s",
				p.Server.Name, p.File, p.ApproveCommand()))
		default:
			cfg.Servers = append(cfg.Servers, p.Server)
		}
	}
	sort.SliceStable(cfg.Servers, func(i, j int) bool { return cfg.Servers[i].Name < cfg.Servers[j].Name })
	return ps, warnings
}
