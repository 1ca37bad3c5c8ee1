package policy

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/sandbox"
)

// Decision is the outcome of a policy decision. The zero value is Deny: fail closed.
type Decision int

const (
	Deny Decision = iota
	Ask
	Allow
)

func (d Decision) String() string {
	switch d {
	case Deny:
		return "deny"
	case Ask:
		return "ask"
	case Allow:
		return "allow"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// Verdict is a decision with the reason a user reads ("asks: protected path .git/config").
type Verdict struct {
	Decision Decision
	Reason   string
	// Grantable is set on Ask verdicts that a session grant could cover, so the user may be
	// offered "allow for this session" (never for protected paths, sensitive reads, sandbox
	// escapes, unparsable or forbidden commands).
	Grantable bool
}

// Request is one tool call, as the policy sees it.
type Request struct {
	// Tool is the tool name.
	Tool string
	// Permission is the tool's harness-side metadata. An empty Access counts as exec, the most
	// cautious reading; so does any request with a Command.
	Permission tools.Permission
	// MCP is set for a call of a tool from an MCP server (see mcp.go); such calls are decided by
	// decideMCP, whatever Permission says.
	MCP *MCPCall
	// Preview is the tool's preview, when it has one. Preview.Command supplies the argv, cwd,
	// sandbox and network flag of a command.
	Preview *tools.Preview
	// Command is the shell source of a command (what the bash tool runs with bash -c). When it is
	// empty and Preview.Command has an argv, that argv is classified as a program run directly.
	Command string
	// Class is the classification of the command, for display. Decide does not trust it when it
	// can classify Command (or the preview's argv) itself; it is used only when neither is set.
	Class *Classification
	// SandboxAvailable says the sandbox (Landlock at least) works on this machine. Without it no
	// command runs without explicit approval. The zero value is the cautious one.
	SandboxAvailable bool
	// Unsandboxed says the call asks to run outside the sandbox (also implied by a preview whose
	// Sandbox is "none").
	Unsandboxed bool
	// Network says the call asks for network access (also implied by Preview.Command.Network).
	Network bool
}

func (r *Request) access() tools.Access {
	if r.Command != "" {
		return tools.AccessExec // a shell command is a command, whatever the metadata says
	}
	switch r.Permission.Access {
	case tools.AccessRead, tools.AccessWrite:
		return r.Permission.Access
	}
	return tools.AccessExec
}

func (r *Request) commandPreview() *tools.CommandPreview {
	if r.Preview != nil {
		return r.Preview.Command
	}
	return nil
}

func (r *Request) unsandboxed() bool {
	pc := r.commandPreview()
	return r.Unsandboxed || (pc != nil && strings.EqualFold(strings.TrimSpace(pc.Sandbox), "none"))
}

func (r *Request) network() bool {
	pc := r.commandPreview()
	return r.Network || (pc != nil && pc.Network)
}

// classify computes the request's classification with rs (nil: no rules). The command source (or
// the preview's argv) wins over a classification the caller attached.
func (r *Request) classify(rs *Rules) Classification {
	if r.Command != "" {
		return rs.Classify(r.Command)
	}
	if pc := r.commandPreview(); pc != nil && len(pc.Argv) > 0 {
		return rs.ClassifyArgv(pc.Argv)
	}
	if r.Class != nil {
		cl := *r.Class
		cl.Commands = make([]Command, len(r.Class.Commands))
		for i, c := range r.Class.Commands {
			c.Argv = append([]string(nil), c.Argv...)
			c.Reasons = append([]string(nil), c.Reasons...)
			c.dyn = append([]bool(nil), c.dyn...)
			if len(c.dyn) != len(c.Argv) {
				// Built by hand: treat every word as dynamic so that no rule or grant matches it.
				c.dyn = make([]bool, len(c.Argv))
				for j := range c.dyn {
					c.dyn[j] = true
				}
				c.Clean = false
			}
			cl.Commands[i] = c
		}
		rs.apply(&cl)
		return cl
	}
	cl := Classification{Class: Unknown, Issues: []Issue{{Unknown, "no command to classify"}}}
	rs.apply(&cl)
	return cl
}

// Policy decides tool calls: an approval mode, rules, session grants and extra protected or
// sensitive patterns. It is safe for concurrent use; the mode can change while decisions run.
type Policy struct {
	rules         *Rules
	grants        *Grants
	refusals      *Grants
	protect       []pathPattern
	sensitive     []pathPattern
	protectedDirs []string

	mu   sync.RWMutex
	mode Mode
}

// New makes a policy from a configuration (see Load). A nil cfg.Rules means the built-in rules.
func New(cfg Config) (*Policy, error) {
	if !cfg.Mode.Valid() {
		return nil, fmt.Errorf("policy: invalid mode %d", int(cfg.Mode))
	}
	p := &Policy{mode: cfg.Mode, rules: cfg.Rules, grants: NewGrants(), refusals: NewGrants()}
	if p.rules == nil {
		p.rules = DefaultRules()
	}
	for _, s := range cfg.Protect {
		pp, err := newPathPattern(s)
		if err != nil {
			return nil, fmt.Errorf("policy: protect pattern %q: %w", s, err)
		}
		p.protect = append(p.protect, pp)
	}
	for _, s := range cfg.Sensitive {
		pp, err := newPathPattern(s)
		if err != nil {
			return nil, fmt.Errorf("policy: sensitive pattern %q: %w", s, err)
		}
		p.sensitive = append(p.sensitive, pp)
	}
	for _, d := range cfg.ProtectedDirs {
		if d != "" {
			p.protectedDirs = append(p.protectedDirs, canonicalPath(d))
		}
	}
	return p, nil
}

// Mode returns the current approval mode.
func (p *Policy) Mode() Mode {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.mode
}

// SetMode changes the approval mode.
func (p *Policy) SetMode(m Mode) error {
	if !m.Valid() {
		return fmt.Errorf("policy: invalid mode %d", int(m))
	}
	p.mu.Lock()
	p.mode = m
	p.mu.Unlock()
	return nil
}

// Rules returns the policy's rules.
func (p *Policy) Rules() *Rules { return p.rules }

// Grants returns the policy's session grants.
func (p *Policy) Grants() *Grants { return p.grants }

// Refusals are the session's "reject for this session" answers, kept as grants are: a request
// one of them covers is refused without asking the user again (the harness's gate consults them
// where the policy would ask). Like a grant, a refusal never covers what no grant may.
func (p *Policy) Refusals() *Grants { return p.refusals }

// Classify classifies a shell command with the policy's rules.
func (p *Policy) Classify(cmd string) Classification { return p.rules.Classify(cmd) }

// Prepare returns req with Class set to the policy's classification of its command, for display
// in the approval prompt. Decide does not need it.
func (p *Policy) Prepare(req Request) Request {
	if req.access() == tools.AccessExec {
		cl := req.classify(p.rules)
		req.Class = &cl
	}
	return req
}

// Settles returns the indexes of the pending requests that the policy now allows (after a grant
// was added or the mode changed), so the daemon can settle those reviews without asking again.
func (p *Policy) Settles(pending []Request) []int {
	var out []int
	for i, r := range pending {
		if p.Decide(r).Decision == Allow {
			out = append(out, i)
		}
	}
	return out
}

func allow(format string, args ...any) Verdict {
	return Verdict{Decision: Allow, Reason: "allowed: " + fmt.Sprintf(format, args...)}
}

func ask(grantable bool, format string, args ...any) Verdict {
	return Verdict{Decision: Ask, Reason: "asks: " + fmt.Sprintf(format, args...), Grantable: grantable}
}

func deny(format string, args ...any) Verdict {
	return Verdict{Decision: Deny, Reason: "denied: " + fmt.Sprintf(format, args...)}
}

// Decide decides one call. The order of the checks is the policy:
//
//  1. a forbid rule denies, whatever else holds;
//  2. plan mode denies writes and commands that are not read-only;
//  3. protected paths, sensitive reads, unparsable commands, a missing sandbox, running
//     unsandboxed and network access ask, in every mode (yolo included), and no grant covers them;
//  4. a session grant allows;
//  5. an ask rule asks;
//  6. the mode decides the rest.
func (p *Policy) Decide(req Request) Verdict {
	mode := p.Mode()
	if req.MCP != nil {
		return p.decideMCP(&req, mode)
	}
	switch req.access() {
	case tools.AccessRead:
		return p.decideRead(&req)
	case tools.AccessWrite:
		return p.decideWrite(&req, mode)
	}
	return p.decideExec(&req, mode)
}

func (p *Policy) decideRead(req *Request) Verdict {
	if path, ok := p.sensitivePath(req); ok {
		if req.Permission.Reason != "" {
			return ask(false, "%s", req.Permission.Reason)
		}
		return ask(false, "sensitive read %s", path)
	}
	return allow("reads are free")
}

func (p *Policy) decideWrite(req *Request, mode Mode) Verdict {
	if mode == ModePlan {
		return deny("plan mode forbids writes")
	}
	if path, ok := p.protectedPath(req); ok {
		if req.Permission.Reason != "" {
			return ask(false, "%s", req.Permission.Reason)
		}
		return ask(false, "protected path %s", path)
	}
	if g, ok := p.grants.covering(req, nil); ok {
		return allow("session grant (%s)", g)
	}
	switch mode {
	case ModeAutoEdit:
		return allow("edit applies without asking (auto-edit) and stays revertible")
	case ModeYolo:
		return allow("yolo mode")
	}
	return ask(true, "edits ask in %s mode", mode)
}

func (p *Policy) decideExec(req *Request, mode Mode) Verdict {
	cl := req.classify(p.rules)
	if cl.Class == Forbidden {
		return deny("%s", cl.Summary())
	}
	if mode == ModePlan && cl.Class != ReadOnly {
		return deny("plan mode allows only read-only commands (%s)", cl.Summary())
	}
	if cl.ParseError != nil {
		return ask(false, "%s", cl.Summary())
	}
	if path, ok := p.protectedPath(req); ok {
		return ask(false, "protected path %s", path)
	}
	if len(cl.Protected) > 0 {
		return ask(false, "protected path %s", cl.Protected[0])
	}
	if path, ok := p.sensitivePath(req); ok {
		return ask(false, "sensitive read %s", path)
	}
	if len(cl.Sensitive) > 0 {
		return ask(false, "the command reads a sensitive file %s", cl.Sensitive[0])
	}
	if !req.SandboxAvailable {
		return ask(false, "no sandbox on this machine (Landlock unavailable): every command needs approval")
	}
	if req.unsandboxed() {
		return ask(false, "the command would run outside the sandbox")
	}
	if pc := req.commandPreview(); pc != nil {
		if _, files, ok := strings.Cut(pc.Sandbox, sandbox.SensitiveUnmasked); ok {
			return ask(false, "without bubblewrap the sandbox cannot hide the workspace's sensitive files%s; the command can read them", files)
		}
		if strings.Contains(pc.Sandbox, sandbox.NoLayer) {
			return ask(false, "without bubblewrap there is no copy-on-write layer: the command writes your files directly and agentd cannot review what it changes")
		}
	}
	if req.network() {
		return ask(false, "the command asks for network access")
	}
	if g, ok := p.grants.covering(req, &cl); ok {
		return allow("session grant (%s), in sandbox", g)
	}
	if cl.Rule != nil && cl.Rule.Action == ActionAsk {
		return ask(true, "%s", cl.Rule.describe())
	}
	switch mode {
	case ModePlan:
		return allow("read-only command in sandbox (plan)")
	case ModeYolo:
		return allow("yolo mode, in sandbox")
	case ModeAutoEdit:
		if cl.Class == ReadOnly {
			return allow("read-only command in sandbox (auto-edit)")
		}
	}
	if cl.RuleAllowed {
		return allow("%s, in sandbox", cl.Rule.describe())
	}
	if cl.Class == ReadOnly {
		return ask(true, "commands ask in %s mode", mode)
	}
	return ask(true, "%s", cl.Summary())
}

// protectedPath reports a path of the request that is write-protected: flagged by the tool, a
// built-in protected name, a configured protect pattern, or agentd's own config and state dirs.
func (p *Policy) protectedPath(req *Request) (string, bool) {
	first := ""
	if len(req.Permission.Paths) > 0 {
		first = req.Permission.Paths[0]
	}
	if req.Permission.Protected {
		return first, true
	}
	for _, path := range req.Permission.Paths {
		if isProtectedPath(path) {
			return path, true
		}
		for _, pp := range p.protect {
			if pp.matches(path) {
				return path, true
			}
		}
		c := canonicalPath(path)
		for _, d := range p.protectedDirs {
			if within(c, d) {
				return path, true
			}
		}
	}
	return "", false
}

// sensitivePath reports a path of the request that looks like a secret.
func (p *Policy) sensitivePath(req *Request) (string, bool) {
	first := ""
	if len(req.Permission.Paths) > 0 {
		first = req.Permission.Paths[0]
	}
	if req.Permission.Sensitive {
		return first, true
	}
	for _, path := range req.Permission.Paths {
		if isSensitivePath(path) {
			return path, true
		}
		for _, pp := range p.sensitive {
			if pp.matches(path) {
				return path, true
			}
		}
	}
	return "", false
}

// canonicalPath cleans an absolute path and resolves its symlinks (tools.Canonical); a relative
// path is made absolute first.
func canonicalPath(p string) string {
	if !filepath.IsAbs(p) {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
	}
	return tools.Canonical(filepath.Clean(p))
}
