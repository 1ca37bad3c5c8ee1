package policy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/tools"
)

// Scope is what a session grant covers.
type Scope int

const (
	// ScopeTool covers every call of one tool (for commands: every command, in the sandbox,
	// except those an ask rule names).
	ScopeTool Scope = iota + 1
	// ScopeCommand covers commands whose argv starts with a prefix of parsed tokens.
	ScopeCommand
	// ScopePath covers file calls whose paths all lie in a canonical path prefix, by whole
	// components (/ws/src covers /ws/src/a.go, not /ws/src2/a.go).
	ScopePath
)

func (s Scope) String() string {
	switch s {
	case ScopeTool:
		return "tool"
	case ScopeCommand:
		return "command"
	case ScopePath:
		return "path"
	}
	return fmt.Sprintf("Scope(%d)", int(s))
}

// Grant is one "allow for this session". A grant never covers protected paths, sensitive reads,
// sandbox escapes (unsandboxed, network, no sandbox), unparsable or forbidden commands; a command
// named by an ask rule is covered only by a command grant at least as specific as that rule.
type Grant struct {
	// ID identifies the grant for Revoke; Add assigns it.
	ID    string
	Scope Scope
	// Tool is the tool name for ScopeTool; for the other scopes it optionally restricts the
	// grant to one tool ("" = any tool).
	Tool string
	// Prefix is the argv prefix for ScopeCommand.
	Prefix []string
	// Exact makes a ScopeCommand grant cover only the command whose argv is Prefix, not the
	// same command with more arguments ("this exact command").
	Exact bool
	// Path is the path prefix for ScopePath; Add makes it canonical.
	Path string
	// Created is set by Add.
	Created time.Time
}

// String describes the grant for a user: `command "npm test"`, `exact command "npm test -- --ci"`,
// `path /ws/src`, `tool edit`.
func (g Grant) String() string {
	var s string
	switch g.Scope {
	case ScopeTool:
		return "tool " + g.Tool
	case ScopeCommand:
		s = "command `" + quoteWords(g.Prefix) + "`"
		if g.Exact {
			s = "exact " + s
		}
	case ScopePath:
		s = "path " + g.Path
	default:
		s = g.Scope.String()
	}
	if g.Tool != "" {
		s += " for " + g.Tool
	}
	return s
}

// Grants holds the session grants. It is safe for concurrent use.
type Grants struct {
	mu   sync.Mutex
	next int
	list []Grant
}

// NewGrants returns an empty set of grants.
func NewGrants() *Grants { return &Grants{} }

// Add validates and stores a grant, and returns it with its ID, canonical path and time set.
func (g *Grants) Add(gr Grant) (Grant, error) {
	switch gr.Scope {
	case ScopeTool:
		if gr.Tool == "" {
			return Grant{}, fmt.Errorf("policy: a tool grant needs a tool name")
		}
	case ScopeCommand:
		if len(gr.Prefix) == 0 {
			return Grant{}, fmt.Errorf("policy: a command grant needs a prefix")
		}
		for _, t := range gr.Prefix {
			if t == "" {
				return Grant{}, fmt.Errorf("policy: a command grant prefix has an empty token")
			}
		}
		gr.Prefix = slices.Clone(gr.Prefix)
	case ScopePath:
		if !filepath.IsAbs(gr.Path) {
			return Grant{}, fmt.Errorf("policy: a path grant needs an absolute path, got %q", gr.Path)
		}
		gr.Path = canonicalPath(gr.Path)
	default:
		return Grant{}, fmt.Errorf("policy: unknown grant scope %d", int(gr.Scope))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.next++
	gr.ID = "g" + strconv.Itoa(g.next)
	gr.Created = time.Now()
	g.list = append(g.list, gr)
	return gr, nil
}

// List returns the grants in the order they were added.
func (g *Grants) List() []Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Grant, len(g.list))
	for i, gr := range g.list {
		gr.Prefix = slices.Clone(gr.Prefix)
		out[i] = gr
	}
	return out
}

// Revoke removes a grant and reports whether it existed.
func (g *Grants) Revoke(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, gr := range g.list {
		if gr.ID == id {
			g.list = slices.Delete(g.list, i, i+1)
			return true
		}
	}
	return false
}

// Clear removes every grant (the session ended).
func (g *Grants) Clear() {
	g.mu.Lock()
	g.list = nil
	g.mu.Unlock()
}

// Covers reports whether the grants cover a request. Without rules it cannot see ask or forbid
// rules: the daemon should use Policy.Decide and Policy.Settles, which consult the grants with
// the policy's rules applied.
func (g *Grants) Covers(req Request) bool {
	_, ok := g.Covering(req)
	return ok
}

// Covering returns a grant that covers the request (see Covers).
func (g *Grants) Covering(req Request) (Grant, bool) {
	var cl *Classification
	if req.access() == tools.AccessExec {
		c := req.classify(nil)
		cl = &c
	}
	return g.covering(&req, cl)
}

// Settles returns the indexes of the pending requests the grants cover (see Covers; prefer
// Policy.Settles, which also applies rules and the mode).
func (g *Grants) Settles(pending []Request) []int {
	var out []int
	for i, r := range pending {
		if g.Covers(r) {
			out = append(out, i)
		}
	}
	return out
}

func (g *Grants) snapshot() []Grant {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.list)
}

// covering returns a grant that covers the request. cl is the request's classification (with the
// policy's rules applied) for exec requests.
func (g *Grants) covering(req *Request, cl *Classification) (Grant, bool) {
	list := g.snapshot()
	if len(list) == 0 {
		return Grant{}, false
	}
	if req.MCP != nil { // an MCP tool: only a grant for that tool covers it
		for _, gr := range list {
			if gr.Scope == ScopeTool && gr.Tool == req.Tool {
				return gr, true
			}
		}
		return Grant{}, false
	}
	switch req.access() {
	case tools.AccessRead, tools.AccessWrite:
		if req.Permission.Protected || req.Permission.Sensitive {
			return Grant{}, false
		}
		for _, p := range req.Permission.Paths {
			if isProtectedPath(p) || isSensitivePath(p) {
				return Grant{}, false
			}
		}
		for _, gr := range list {
			if gr.Scope == ScopeTool && gr.Tool == req.Tool {
				return gr, true
			}
		}
		if len(req.Permission.Paths) == 0 {
			return Grant{}, false
		}
		for _, gr := range list {
			if gr.Scope != ScopePath || (gr.Tool != "" && gr.Tool != req.Tool) {
				continue
			}
			all := true
			for _, p := range req.Permission.Paths {
				if !filepath.IsAbs(p) || !within(canonicalPath(p), gr.Path) {
					all = false
					break
				}
			}
			if all {
				return gr, true
			}
		}
		return Grant{}, false
	}
	// exec
	if cl == nil || cl.ParseError != nil || cl.Class == Forbidden || len(cl.Protected) > 0 ||
		len(cl.Sensitive) > 0 || req.Permission.Protected || req.Permission.Sensitive ||
		!req.SandboxAvailable || req.unsandboxed() || req.network() {
		return Grant{}, false
	}
	askRule := cl.Rule != nil && cl.Rule.Action == ActionAsk
	for _, gr := range list {
		if gr.Scope == ScopeTool && gr.Tool == req.Tool && !askRule && len(cl.Commands) > 0 {
			return gr, true
		}
	}
	grantFor := func(c *Command) (Grant, bool) {
		for _, gr := range list {
			if gr.Scope != ScopeCommand || (gr.Tool != "" && gr.Tool != req.Tool) {
				continue
			}
			if !prefixMatches(gr.Prefix, c, false) || (gr.Exact && len(c.Argv) != len(gr.Prefix)) {
				continue
			}
			if c.Rule != nil && c.Rule.Action == ActionAsk && !hasPrefix(gr.Prefix, c.Rule.Prefix) {
				continue // the grant is broader than the ask rule: the user never saw this command
			}
			return gr, true
		}
		return Grant{}, false
	}
	var used []Grant
	ok := cl.allowedBy(func(c *Command) bool {
		gr, ok := grantFor(c)
		if ok {
			used = append(used, gr)
		}
		return ok
	})
	if !ok {
		return Grant{}, false
	}
	if len(used) == 0 {
		// Every command is read-only (the mode asks even so, as ask mode does): then each of
		// them must be granted, by program and subcommand or exactly.
		for i := range cl.Commands {
			c := &cl.Commands[i]
			gr, ok := grantFor(c)
			if !c.Clean || !ok {
				return Grant{}, false
			}
			used = append(used, gr)
		}
	}
	return used[0], true
}

func hasPrefix(s, prefix []string) bool {
	return len(prefix) <= len(s) && slices.Equal(s[:len(prefix)], prefix)
}

// Suggest returns the grants a user may be offered for "allow for this session" on a request the
// policy asked about, narrowest first. It returns nil when the verdict was not grantable.
func (p *Policy) Suggest(req Request, v Verdict) []Grant {
	if v.Decision != Ask || !v.Grantable {
		return nil
	}
	var out []Grant
	switch req.access() {
	case tools.AccessRead, tools.AccessWrite:
		if dir := commonDir(req.Permission.Paths); dir != "" {
			out = append(out, Grant{Scope: ScopePath, Path: dir, Tool: req.Tool})
		}
	default:
		cl := req.classify(p.rules)
		var prefixes [][]string
		var exact []string // the one command's argv; nil when the line runs several
		n := 0
		// The commands a grant must cover: those that are not read-only, or, when every command
		// is read-only (and the mode asks even so), all of them (see Grants.covering).
		needs := func(c *Command) bool { return !(c.Class == ReadOnly && c.Rule == nil) }
		if !slices.ContainsFunc(cl.Commands, func(c Command) bool { return needs(&c) }) {
			needs = func(*Command) bool { return true }
		}
		for i := range cl.Commands {
			c := &cl.Commands[i]
			if !needs(c) {
				continue
			}
			if !c.Clean || len(c.Argv) == 0 {
				prefixes = nil
				break
			}
			if n++; n == 1 {
				exact = slices.Clone(c.Argv)
			} else {
				exact = nil
			}
			pre := suggestPrefix(c.Argv)
			if c.Rule != nil && c.Rule.Action == ActionAsk && len(c.Rule.Prefix) > len(pre) && hasPrefix(c.Argv, c.Rule.Prefix) {
				pre = c.Rule.Prefix
			}
			if !slices.ContainsFunc(prefixes, func(q []string) bool { return slices.Equal(q, pre) }) {
				prefixes = append(prefixes, pre)
			}
		}
		// Narrowest first: the exact command (when it is one command with more words than its
		// program and subcommand), then each program and subcommand it runs. A compound command
		// gets one scope per program: each covers its part, so the same line asks again only for
		// the parts not granted yet.
		if len(prefixes) == 1 && len(exact) > len(prefixes[0]) {
			out = append(out, Grant{Scope: ScopeCommand, Prefix: exact, Exact: true})
		}
		for _, pre := range prefixes {
			out = append(out, Grant{Scope: ScopeCommand, Prefix: slices.Clone(pre)})
		}
	}
	if req.Tool != "" {
		out = append(out, Grant{Scope: ScopeTool, Tool: req.Tool})
	}
	return out
}

// suggestPrefix is the program plus its subcommand when the second word looks like one
// ("npm test", "git commit"), otherwise the program alone ("rm").
func suggestPrefix(argv []string) []string {
	if len(argv) >= 2 && isSubcommandWord(argv[1]) {
		return slices.Clone(argv[:2])
	}
	return slices.Clone(argv[:1])
}

func isSubcommandWord(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == ':') {
			return false
		}
	}
	return true
}

// commonDir returns the deepest directory holding every path ("" when there are none).
func commonDir(paths []string) string {
	dir := ""
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			return ""
		}
		d := filepath.Dir(filepath.Clean(p))
		if i == 0 {
			dir = d
			continue
		}
		for !within(d, dir) {
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return strings.TrimSpace(dir)
}
