package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// ConfigFile is the name of the user's MCP configuration, in agentd's config directory
// ($XDG_CONFIG_HOME/agentd/mcp.json).
const ConfigFile = "mcp.json"

// Defaults for a server that does not set them.
const (
	DefaultCallTimeout  = 120 * time.Second
	DefaultStartTimeout = 30 * time.Second
	// DefaultMaxRestarts is how many times a server that exited is started again in one session.
	DefaultMaxRestarts = 2
)

// ServerConfig is one server of the configuration. The JSON shape is the `mcpServers` entry other
// MCP clients use (command, args, env; or url, headers), plus agentd's own keys.
type ServerConfig struct {
	// Name is the key in mcpServers; it prefixes the server's tool names.
	Name string `json:"-"`

	// A stdio server: the program and its arguments. It starts inside agentd's sandbox.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Cwd is the server's working directory (default: the session's workspace).
	Cwd string `json:"cwd,omitempty"`

	// A streamable HTTP server, on a loopback address only.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Type is accepted for compatibility ("stdio", "http", "streamable-http"); it must agree with
	// command or url.
	Type string `json:"type,omitempty"`

	// agentd's keys.

	// Network lets a stdio server reach the network (default off: its sandbox has none).
	Network bool `json:"network,omitempty"`
	// TrustReadOnly lets tools this server marks readOnlyHint run without asking in ask and
	// auto-edit modes. Without it the hint is ignored: a server can lie.
	TrustReadOnly bool `json:"trustReadOnly,omitempty"`
	// Writable lists extra directories (absolute, or ~/…) the stdio server may write, beyond the
	// workspace and its own cache directory.
	Writable []string `json:"writable,omitempty"`
	// Disabled keeps the server in the file without starting it.
	Disabled bool `json:"disabled,omitempty"`
	// Tools, when set, are the only tools of the server offered to the model, and DisabledTools
	// are never offered (the names the server gives them): a small model chooses better among a
	// few tools, and every tool's definition is sent with every request.
	Tools         []string `json:"tools,omitempty"`
	DisabledTools []string `json:"disabledTools,omitempty"`
	// TimeoutSec caps one tool call (default 120); StartTimeoutSec caps start-up and listing
	// (default 30).
	TimeoutSec      float64 `json:"timeoutSec,omitempty"`
	StartTimeoutSec float64 `json:"startTimeoutSec,omitempty"`
	// MaxRestarts is how many times the server is started again after it exits, per session
	// (default 2; negative: never).
	MaxRestarts *int `json:"maxRestarts,omitempty"`
}

// Offers reports whether the server's tool (by the server's name for it) is offered to the model:
// in Tools when that is set, and not in DisabledTools.
func (c *ServerConfig) Offers(tool string) bool {
	return (len(c.Tools) == 0 || slices.Contains(c.Tools, tool)) && !slices.Contains(c.DisabledTools, tool)
}

// Stdio reports whether the server is started as a local process.
func (c *ServerConfig) Stdio() bool { return c.Command != "" }

// CallTimeout is the time one tool call may take.
func (c *ServerConfig) CallTimeout() time.Duration {
	if c.TimeoutSec > 0 {
		return time.Duration(c.TimeoutSec * float64(time.Second))
	}
	return DefaultCallTimeout
}

// StartTimeout is the time start-up, the handshake and listing may take.
func (c *ServerConfig) StartTimeout() time.Duration {
	if c.StartTimeoutSec > 0 {
		return time.Duration(c.StartTimeoutSec * float64(time.Second))
	}
	return DefaultStartTimeout
}

// Restarts is the restart budget of one session.
func (c *ServerConfig) Restarts() int {
	if c.MaxRestarts == nil {
		return DefaultMaxRestarts
	}
	return max(*c.MaxRestarts, 0)
}

// Config is the set of servers, sorted by name (the tool list's order depends on it).
type Config struct {
	Servers []ServerConfig
	// Path is the file it was read from ("" : none).
	Path string
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,31}$`)

// LoadConfig reads <configDir>/mcp.json. A missing file is an empty configuration. Warnings are
// things the user should know that do not stop agentd (a disabled server).
//
// The workspace argument is not read here: the servers a workspace proposes
// (<workspace>/.agentd/mcp.json, <workspace>/.mcp.json) start only in a trusted workspace and once
// the user approved each definition; see AddProposals.
func LoadConfig(configDir, _ string) (*Config, []string, error) {
	var warnings []string
	if configDir == "" {
		return &Config{}, warnings, nil
	}
	path := filepath.Join(configDir, ConfigFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, warnings, nil
	}
	if err != nil {
		return nil, warnings, fmt.Errorf("mcp: %w", err)
	}
	cfg, w, err := ParseConfig(data)
	if err != nil {
		return nil, warnings, fmt.Errorf("mcp: %s: %w", path, err)
	}
	cfg.Path = path
	return cfg, append(warnings, w...), nil
}

// ParseConfig parses the JSON of an mcp.json: {"mcpServers": {"name": {...}}}. Unknown keys
// are errors (a misspelt "trustReadOnly" must not silently stay off... or on).
func ParseConfig(data []byte) (*Config, []string, error) {
	var file struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, nil, err
	}
	cfg := &Config{}
	var warnings []string
	names := make([]string, 0, len(file.MCPServers))
	for n := range file.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		var sc ServerConfig
		d := json.NewDecoder(bytes.NewReader(file.MCPServers[name]))
		d.DisallowUnknownFields()
		if err := d.Decode(&sc); err != nil {
			return nil, nil, fmt.Errorf("server %q: %w", name, err)
		}
		sc.Name = name
		if err := sc.check(); err != nil {
			return nil, nil, fmt.Errorf("server %q: %w", name, err)
		}
		if sc.Disabled {
			warnings = append(warnings, fmt.Sprintf("MCP server %s is disabled in the configuration", name))
			continue
		}
		cfg.Servers = append(cfg.Servers, sc)
	}
	return cfg, warnings, nil
}

func (c *ServerConfig) check() error {
	if !serverName.MatchString(c.Name) {
		return errors.New("a server name is 1 to 32 letters, digits or '-' (it prefixes tool names the model sees)")
	}
	switch {
	case c.Command != "" && c.URL != "":
		return errors.New("set either command (a stdio server) or url (an HTTP server), not both")
	case c.Command == "" && c.URL == "":
		return errors.New("set command (a stdio server) or url (an HTTP server)")
	}
	switch strings.ToLower(c.Type) {
	case "":
	case "stdio":
		if c.Command == "" {
			return errors.New(`type "stdio" needs a command`)
		}
	case "http", "streamable-http", "streamablehttp":
		if c.URL == "" {
			return fmt.Errorf("type %q needs a url", c.Type)
		}
	default:
		return fmt.Errorf("type %q is not supported (stdio or http; SSE servers are not)", c.Type)
	}
	if c.URL != "" {
		if err := loopbackURL(c.URL); err != nil {
			return err
		}
		if c.Network || len(c.Writable) > 0 || len(c.Env) > 0 || c.Cwd != "" {
			return errors.New("network, writable, env and cwd apply to stdio servers only")
		}
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("environment variable name %q is invalid", k)
		}
	}
	for _, w := range c.Writable {
		if !filepath.IsAbs(w) && !strings.HasPrefix(w, "~/") {
			return fmt.Errorf("writable directory %q must be absolute (or start with ~/)", w)
		}
	}
	if c.TimeoutSec < 0 || c.StartTimeoutSec < 0 {
		return errors.New("timeouts must be positive")
	}
	for _, list := range [][]string{c.Tools, c.DisabledTools} {
		for _, t := range list {
			if strings.TrimSpace(t) == "" {
				return errors.New("tools and disabledTools list the server's tool names: an empty name is not one")
			}
		}
	}
	return nil
}

// loopbackURL accepts http(s) URLs whose host is a loopback address or localhost: agentd talks to
// local servers only.
func loopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("url %q: only http and https", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("url %q: only servers on a loopback address (127.0.0.1, ::1, localhost) are supported", raw)
}

// MinimalEnv are the variables a stdio server gets from agentd's environment; everything else it
// gets comes from its env in the configuration.
var MinimalEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM"}

// expandHome turns ~/x into $HOME/x.
func expandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
		return filepath.Join(home, rest)
	}
	return p
}

// sortedEnv renders env as K=V lines in a stable order.
func sortedEnv(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// ClientServer is a server a front end passes for one session: ACP's session/new mcpServers entry
// ({name, command, args, env} for stdio, {type: "http", name, url, headers} for HTTP). It goes
// through the same checks and start path as a server of mcp.json, without agentd's own keys.
type ClientServer struct {
	Type    string // "", "stdio", "http"; "sse" is refused
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
}

// Config turns the client's server into a ServerConfig. The client's name may be any text: it is
// reduced to the characters a tool-name prefix allows (others become '-', at most 32).
func (cs ClientServer) Config() (ServerConfig, error) {
	name := clientName(cs.Name)
	sc := ServerConfig{Name: name, Command: cs.Command, Args: cs.Args, URL: cs.URL, Type: cs.Type}
	if strings.EqualFold(cs.Type, "sse") {
		return sc, fmt.Errorf("MCP server %q: SSE servers are not supported (stdio or http)", cs.Name)
	}
	if len(cs.Env) > 0 {
		sc.Env = cs.Env
	}
	if len(cs.Headers) > 0 {
		sc.Headers = cs.Headers
	}
	if err := sc.check(); err != nil {
		return sc, fmt.Errorf("MCP server %q: %w", cs.Name, err)
	}
	return sc, nil
}

func clientName(s string) string {
	b := []byte(strings.TrimLeft(s, "-_ ."))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 32 {
		b = b[:32]
	}
	return string(b)
}
