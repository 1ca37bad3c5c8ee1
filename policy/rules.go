package policy

import (
	_ "embed"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Action is what a rule does to the commands it matches. Stricter actions are larger.
type Action int

const (
	// ActionAllow lets a clean matching command run without asking (inside the sandbox).
	ActionAllow Action = iota + 1
	// ActionAsk makes a matching command ask, in every mode.
	ActionAsk
	// ActionForbid denies a matching command, in every mode; nothing overrides it.
	ActionForbid
)

func (a Action) String() string {
	switch a {
	case ActionAllow:
		return "allow"
	case ActionAsk:
		return "ask"
	case ActionForbid:
		return "forbid"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// ParseAction parses "allow", "ask" or "forbid".
func ParseAction(s string) (Action, error) {
	switch s {
	case "allow":
		return ActionAllow, nil
	case "ask":
		return ActionAsk, nil
	case "forbid":
		return ActionForbid, nil
	}
	return 0, fmt.Errorf("unknown rule action %q (want allow, ask or forbid)", s)
}

// Rule maps a command prefix (parsed argv tokens) to an action.
//
// A prefix matches a simple command when the command's argv starts with exactly these tokens.
// For ask and forbid rules the program name also matches by its base name (/bin/rm, ./rm and \rm
// all match "rm"), so that a stricter rule errs on the side of matching; an allow rule matches the
// program name exactly. A token never matches a word that holds an expansion ($X, $(…)).
type Rule struct {
	Action Action
	Prefix []string
	// Examples must match the prefix, and Not must not; both are checked when the rule loads.
	Examples []string
	Not      []string
	// Reason is shown to the user when the rule decides.
	Reason string
	// Sockets are host Unix sockets (absolute paths) that commands this rule decides may
	// connect to (`socket /run/docker.sock` under an allow or ask rule); see
	// Classification.UnixSockets. Only the user's config can name them.
	Sockets []string
	// Source says where the rule comes from ("built-in:12", "/home/u/.config/agentd/config:3").
	Source string
}

// String renders the rule as it would be written in a rule file: `ask git push`.
func (r *Rule) String() string {
	return r.Action.String() + " " + quoteWords(r.Prefix)
}

func quoteWords(ws []string) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		q, err := syntax.Quote(w, syntax.LangBash)
		if err != nil {
			q = fmt.Sprintf("%q", w)
		}
		parts[i] = q
	}
	return strings.Join(parts, " ")
}

// describe names the rule for a user: "rule `ask git push` (built-in:3): reason".
func (r *Rule) describe() string {
	s := "rule `" + r.String() + "`"
	if r.Source != "" {
		s += " (" + r.Source + ")"
	}
	if r.Reason != "" {
		s += ": " + r.Reason
	}
	return s
}

// MatchesArgv reports whether the rule matches a program run with this argv (every token literal).
func (r *Rule) MatchesArgv(argv []string) bool {
	return r.matches(&Command{Argv: argv, dyn: make([]bool, len(argv))})
}

func (r *Rule) matches(c *Command) bool {
	return prefixMatches(r.Prefix, c, r.Action != ActionAllow)
}

// prefixMatches reports whether argv of c starts with prefix. With byBase, the program name also
// matches by its base name.
func prefixMatches(prefix []string, c *Command, byBase bool) bool {
	if len(prefix) == 0 || len(prefix) > len(c.Argv) {
		return false
	}
	for i, tok := range prefix {
		if i < len(c.dyn) && c.dyn[i] {
			return false
		}
		a := c.Argv[i]
		if i == 0 && byBase && a != tok && !strings.Contains(tok, "/") {
			a = path.Base(a)
		}
		if a != tok {
			return false
		}
	}
	return true
}

// check validates the prefix and the examples.
func (r *Rule) check() error {
	if r.Action < ActionAllow || r.Action > ActionForbid {
		return fmt.Errorf("rule has no valid action")
	}
	if len(r.Prefix) == 0 {
		return fmt.Errorf("rule %s has an empty prefix", r.Action)
	}
	for _, t := range r.Prefix {
		if t == "" {
			return fmt.Errorf("rule `%s` has an empty token", r)
		}
	}
	for _, ex := range r.Examples {
		cl := Classify(ex)
		if cl.ParseError != nil {
			return fmt.Errorf("rule `%s`: example %q does not parse: %v", r, ex, cl.ParseError)
		}
		if !r.matchesAny(&cl) {
			return fmt.Errorf("rule `%s`: example %q does not match (its commands: %s)", r, ex, renderArgvs(cl.Argvs()))
		}
	}
	for _, ex := range r.Not {
		cl := Classify(ex)
		if cl.ParseError != nil {
			return fmt.Errorf("rule `%s`: counter-example %q does not parse: %v", r, ex, cl.ParseError)
		}
		if r.matchesAny(&cl) {
			return fmt.Errorf("rule `%s`: counter-example %q matches, but must not", r, ex)
		}
	}
	return nil
}

func (r *Rule) matchesAny(cl *Classification) bool {
	for i := range cl.Commands {
		if r.matches(&cl.Commands[i]) {
			return true
		}
	}
	return false
}

func renderArgvs(argvs [][]string) string {
	if len(argvs) == 0 {
		return "none"
	}
	parts := make([]string, len(argvs))
	for i, a := range argvs {
		parts[i] = "[" + quoteWords(a) + "]"
	}
	return strings.Join(parts, ", ")
}

// Rules is an immutable, ordered set of rules. Strictest wins: forbid > ask > allow, across every
// matching rule and every command of a list or pipeline.
type Rules struct {
	list []*Rule
}

// NewRules validates rules (prefix and examples) and returns them as a set.
func NewRules(rules ...Rule) (*Rules, error) {
	rs := &Rules{}
	var errs []error
	for i := range rules {
		r := rules[i]
		r.Prefix = append([]string(nil), r.Prefix...)
		r.Examples = append([]string(nil), r.Examples...)
		r.Not = append([]string(nil), r.Not...)
		if err := r.check(); err != nil {
			if r.Source != "" {
				err = fmt.Errorf("%s: %w", r.Source, err)
			}
			errs = append(errs, err)
			continue
		}
		rs.list = append(rs.list, &r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rs, nil
}

// List returns copies of the rules in order.
func (rs *Rules) List() []Rule {
	if rs == nil {
		return nil
	}
	out := make([]Rule, len(rs.list))
	for i, r := range rs.list {
		out[i] = *r
	}
	return out
}

// Len returns the number of rules.
func (rs *Rules) Len() int {
	if rs == nil {
		return 0
	}
	return len(rs.list)
}

// Merge returns a set with the rules of all the given sets, in order. Nil sets are skipped.
func Merge(sets ...*Rules) *Rules {
	out := &Rules{}
	for _, s := range sets {
		if s != nil {
			out.list = append(out.list, s.list...)
		}
	}
	return out
}

// Classify classifies a shell command and applies the rules.
func (rs *Rules) Classify(src string) Classification {
	cl := Classify(src)
	rs.apply(&cl)
	return cl
}

// ClassifyArgv classifies a directly executed argv and applies the rules.
func (rs *Rules) ClassifyArgv(argv []string) Classification {
	cl := ClassifyArgv(argv)
	rs.apply(&cl)
	return cl
}

// apply sets each command's strictest matching rule, marks forbidden commands, and computes
// RuleAllowed.
func (rs *Rules) apply(cl *Classification) {
	cl.Rule, cl.RuleAllowed = nil, false
	for i := range cl.Commands {
		c := &cl.Commands[i]
		c.Rule, c.sockets = nil, nil
		if rs != nil {
			for _, r := range rs.list {
				if !r.matches(c) {
					continue
				}
				if c.Rule == nil || r.Action > c.Rule.Action {
					c.Rule = r
				}
				for _, s := range r.Sockets {
					if !slices.Contains(c.sockets, s) {
						c.sockets = append(c.sockets, s)
					}
				}
			}
		}
		if c.Rule == nil {
			continue
		}
		if c.Rule.Action == ActionForbid {
			c.Class = Forbidden
			c.Reasons = append([]string{"forbidden by " + c.Rule.describe()}, c.Reasons...)
		}
		if cl.Rule == nil || c.Rule.Action > cl.Rule.Action {
			cl.Rule = c.Rule
		}
	}
	if cl.Rule != nil && cl.Rule.Action == ActionForbid {
		cl.Class = Forbidden
		cl.RunsProjectCode = false
	}
	if cl.Rule == nil || cl.Rule.Action != ActionAllow {
		return
	}
	cl.RuleAllowed = cl.allowedBy(func(c *Command) bool {
		return c.Rule != nil && c.Rule.Action == ActionAllow
	})
}

//go:embed default.rules
var defaultRulesText []byte

// defaultRules parses the built-in rules on first use (checking their examples takes a few
// milliseconds that every process start, the sandbox helper's included, would otherwise pay).
var defaultRules = sync.OnceValue(func() *Rules {
	f, err := parseFile("built-in", defaultRulesText, false)
	if err != nil {
		panic("policy: built-in rules: " + err.Error())
	}
	return f.rules
})

// DefaultRules returns the built-in rules (default.rules, embedded).
func DefaultRules() *Rules { return defaultRules() }

// DefaultRulesText returns the text of the built-in rules, for display or as a starting point.
func DefaultRulesText() string { return string(defaultRulesText) }

// ParseRules parses a rule file (see the package documentation for the format) and checks every
// rule's examples. name is used in error messages.
func ParseRules(name string, data []byte) (*Rules, error) {
	f, err := parseFile(name, data, false)
	if err != nil {
		return nil, err
	}
	return f.rules, nil
}
