package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Class is what a command is known to do. The zero value, Unknown, is the cautious one: nothing
// could be proven, so the command asks.
type Class int

const (
	// Unknown: the command could not be proven to be anything (an unknown program, a dynamic
	// word, a construct that is not analysed, a parse failure). It asks.
	Unknown Class = iota
	// ReadOnly: every command is on the read-only allowlist with arguments that were checked, and
	// nothing else (redirection, substitution, assignment) can write. It may auto-run inside the
	// sandbox in auto-edit and plan modes.
	ReadOnly
	// Write: the command changes files or processes (rm, sed -i, echo x > f, kill, git commit).
	Write
	// Network: the command talks to the network (curl, ssh, git push, /dev/tcp redirections).
	Network
	// Forbidden: a forbid rule matched one of the commands. Only rules produce it.
	Forbidden
)

var classNames = [...]string{Unknown: "unknown", ReadOnly: "read-only", Write: "write",
	Network: "network", Forbidden: "forbidden"}

func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// severity orders classes for combining the parts of a list or pipeline: the whole is as bad as
// its worst part. ReadOnly < Unknown < Write < Network < Forbidden. Only ReadOnly and Forbidden
// change a decision; the order between the others chooses what the user is told (a known write
// says more than "unknown").
func (c Class) severity() int {
	switch c {
	case ReadOnly:
		return 0
	case Unknown:
		return 1
	case Write:
		return 2
	case Network:
		return 3
	case Forbidden:
		return 4
	}
	return 1
}

func worse(a, b Class) Class {
	if b.severity() > a.severity() {
		return b
	}
	return a
}

// Classification is the result of classifying one command string.
type Classification struct {
	// Source is the command as given.
	Source string
	// Class is the class of the whole: the worst of its commands and issues.
	Class Class
	// Commands are the simple commands found anywhere in the source, including inside command
	// substitutions, in source order.
	Commands []Command
	// Issues are problems not tied to one simple command (a loop, a function definition, a
	// redirection of a block, a background job, a parse failure).
	Issues []Issue
	// ParseError is set when the source does not parse. Such a command is never allowed.
	ParseError error
	// Sensitive lists arguments that look like secrets (.env, id_rsa, .netrc): reading them asks.
	Sensitive []string
	// Protected lists write targets or arguments of non-read-only commands that look like
	// protected paths (.git/config, .vscode/): they ask in every mode.
	Protected []string
	// RunsProjectCode is set when a read-only-classified command executes the project's own
	// code (go test). The sandbox, not the classifier, confines what that code does.
	RunsProjectCode bool

	// Rule is the strictest rule that matched any command (forbid > ask > allow), nil if none.
	// Set by Rules.Classify.
	Rule *Rule
	// RuleAllowed is set by Rules.Classify when allow rules (together with read-only
	// classification) cover every command and nothing else in the source needs review.
	RuleAllowed bool
}

// Command is one simple command.
type Command struct {
	// Argv is the command's words after quote removal. A word that is not static (it holds an
	// expansion) appears as its source text and never matches a rule token.
	Argv []string
	// Class is the class of this command alone, including its redirections and assignments.
	Class Class
	// Reasons say why the command has its class, for a person to read.
	Reasons []string
	// Clean is set when only the argv decides what the command does: every word is static and
	// there is no assignment, glob, substitution or redirection (other than to /dev/null or
	// between descriptors). Only clean commands can be allowed by an allow rule or a grant.
	Clean bool
	// Rule is the strictest rule that matched this command, nil if none.
	Rule *Rule

	dyn     []bool   // dyn[i]: Argv[i] is not static
	sockets []string // named by the `socket` lines of the rules that match (Rules.apply)
}

// Issue is a reason for a class that is not tied to one simple command.
type Issue struct {
	Class  Class
	Reason string
}

// Reasons returns every reason, issues first, then each command's, without duplicates.
func (cl *Classification) Reasons() []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, is := range cl.Issues {
		add(is.Reason)
	}
	for _, c := range cl.Commands {
		for _, r := range c.Reasons {
			add(r)
		}
	}
	return out
}

// Summary is the most relevant reason for the class of the whole, for a one-line prompt.
func (cl *Classification) Summary() string {
	if cl.ParseError != nil {
		return "the command does not parse: " + cl.ParseError.Error()
	}
	if cl.Class == Forbidden && cl.Rule != nil {
		return "forbidden by " + cl.Rule.describe()
	}
	for _, is := range cl.Issues {
		if is.Class == cl.Class {
			return is.Reason
		}
	}
	for _, c := range cl.Commands {
		if c.Class == cl.Class && len(c.Reasons) > 0 {
			return c.Reasons[0]
		}
	}
	if rs := cl.Reasons(); len(rs) > 0 {
		return rs[0]
	}
	return cl.Class.String() + " command"
}

// Argvs returns the argv of every simple command.
func (cl *Classification) Argvs() [][]string {
	out := make([][]string, len(cl.Commands))
	for i, c := range cl.Commands {
		out[i] = c.Argv
	}
	return out
}

// allowedBy reports whether every command is read-only or, when clean, accepted by ok, and nothing
// else in the source needs review. It is the one place where "allowed" is computed for lists and
// pipelines: an allow rule or a grant that covers one command never covers its neighbours.
func (cl *Classification) allowedBy(ok func(*Command) bool) bool {
	if cl.ParseError != nil || len(cl.Issues) > 0 || len(cl.Commands) == 0 || cl.Class == Forbidden {
		return false
	}
	for i := range cl.Commands {
		c := &cl.Commands[i]
		if c.Rule != nil && c.Rule.Action == ActionForbid {
			return false
		}
		if c.Class == ReadOnly && (c.Rule == nil || c.Rule.Action == ActionAllow) {
			continue
		}
		if !c.Clean || !ok(c) {
			return false
		}
	}
	return true
}

// UnixSockets returns the host Unix sockets the command may connect to: those named by the
// `socket` lines of the allow and ask rules matching its commands, when every command that is not
// read-only is clean and matched by rules naming the socket (a forbidden command gets none). A
// command line mixing a docker command with anything else that is not read-only gets none: the
// sandbox can only open unix sockets for the whole command line.
func (cl *Classification) UnixSockets() []string {
	if cl.ParseError != nil || len(cl.Issues) > 0 || cl.Class == Forbidden {
		return nil
	}
	var out []string
	first := true
	for i := range cl.Commands {
		c := &cl.Commands[i]
		if len(c.sockets) == 0 {
			if c.Class == ReadOnly {
				continue
			}
			return nil
		}
		if !c.Clean || (c.Rule != nil && c.Rule.Action == ActionForbid) {
			return nil
		}
		if first {
			out, first = slices.Clone(c.sockets), false
			continue
		}
		out = slices.DeleteFunc(out, func(s string) bool { return !slices.Contains(c.sockets, s) })
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// maxSource bounds the command length the classifier parses; longer commands are Unknown.
const maxSource = 64 << 10

// Classify classifies a shell command by parsing it as bash (the bash tool runs `bash -c`). It
// applies no rules: use Rules.Classify or Policy.Classify for that. It never panics; a command
// that does not parse is Unknown with ParseError set.
func Classify(src string) Classification {
	cl := Classification{Source: src, Class: Unknown}
	if err := checkSource(src); err != nil {
		cl.ParseError = err
		cl.Issues = append(cl.Issues, Issue{Unknown, err.Error()})
		return cl
	}
	f, err := parse(src)
	if err != nil {
		cl.ParseError = err
		cl.Issues = append(cl.Issues, Issue{Unknown, "the command does not parse: " + err.Error()})
		return cl
	}
	c := classifier{out: &cl}
	c.stmts(f.Stmts)
	if len(cl.Commands) == 0 && len(cl.Issues) == 0 {
		cl.Issues = append(cl.Issues, Issue{Unknown, "empty command"})
	}
	cl.finish()
	return cl
}

// ClassifyArgv classifies a program run directly with this argv, without a shell: no word is
// expanded, so globs and quotes are literal.
func ClassifyArgv(argv []string) Classification {
	cl := Classification{Source: strings.Join(argv, " "), Class: Unknown}
	if len(argv) == 0 {
		cl.Issues = append(cl.Issues, Issue{Unknown, "empty command"})
		return cl
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 || !utf8.ValidString(a) {
			cl.Issues = append(cl.Issues, Issue{Unknown, "an argument holds a NUL byte or invalid UTF-8"})
			return cl
		}
	}
	cmd := Command{Argv: append([]string(nil), argv...), dyn: make([]bool, len(argv)), Clean: true}
	class, reasons, extra := classifyArgv(cmd.Argv, false)
	cmd.Class, cmd.Reasons = class, reasons
	cl.RunsProjectCode = extra.runsProjectCode
	if extra.sensitive != "" {
		cl.Sensitive = append(cl.Sensitive, extra.sensitive)
	}
	cl.Commands = append(cl.Commands, cmd)
	c := classifier{out: &cl}
	c.scanPaths(&cl.Commands[0], nil)
	cl.finish()
	return cl
}

// checkSource refuses what the parser and bash might read differently: control characters other
// than tab and newline, invalid UTF-8, and very long input.
func checkSource(src string) error {
	if len(src) > maxSource {
		return fmt.Errorf("the command is longer than %d bytes", maxSource)
	}
	if !utf8.ValidString(src) {
		return fmt.Errorf("the command is not valid UTF-8")
	}
	for _, r := range src {
		if (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f {
			return fmt.Errorf("the command holds control character %U", r)
		}
	}
	return nil
}

func parse(src string) (f *syntax.File, err error) {
	defer func() {
		// The parser is not expected to panic; if it does, the command is simply unparsable.
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("parser failure: %v", r)
		}
	}()
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
}

func (cl *Classification) finish() {
	class := ReadOnly
	if cl.ParseError != nil || (len(cl.Commands) == 0 && len(cl.Issues) == 0) {
		class = Unknown
	}
	for _, is := range cl.Issues {
		class = worse(class, is.Class)
	}
	for _, c := range cl.Commands {
		class = worse(class, c.Class)
	}
	if class != ReadOnly {
		cl.RunsProjectCode = false // only meaningful for commands that auto-run
	}
	cl.Class = class
	cl.Sensitive = dedup(cl.Sensitive)
	cl.Protected = dedup(cl.Protected)
}

func dedup(s []string) []string {
	if len(s) < 2 {
		return s
	}
	seen := map[string]bool{}
	out := s[:0]
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// maxDepth bounds nesting (substitutions within substitutions); deeper is Unknown.
const maxDepth = 32

type classifier struct {
	out   *Classification
	depth int
}

func (c *classifier) issue(class Class, format string, args ...any) {
	c.out.Issues = append(c.out.Issues, Issue{class, fmt.Sprintf(format, args...)})
}

// tooDeep reports (once) that the nesting limit was reached. The command then counts as not
// parsed, so that it is never allowed in any mode: commands below the limit were not seen.
func (c *classifier) tooDeep() bool {
	if c.depth <= maxDepth {
		return false
	}
	if c.out.ParseError == nil {
		c.out.ParseError = fmt.Errorf("the command nests more than %d levels deep", maxDepth)
		c.issue(Unknown, "%s", c.out.ParseError)
	}
	return true
}

func (c *classifier) stmts(list []*syntax.Stmt) {
	if c.tooDeep() {
		return
	}
	c.depth++
	defer func() { c.depth-- }()
	for _, s := range list {
		c.stmt(s)
	}
}

func (c *classifier) stmt(s *syntax.Stmt) {
	if s == nil {
		return
	}
	if s.Background || s.Coprocess || s.Disown {
		c.issue(Unknown, "a command runs in the background")
	}
	switch cmd := s.Cmd.(type) {
	case *syntax.CallExpr:
		c.call(cmd, s.Redirs)
		return
	case nil:
		// Only redirections: "> file" truncates or creates a file.
		if len(s.Redirs) == 0 {
			return
		}
		c.out.Commands = append(c.out.Commands, c.redirOnly(s.Redirs))
		return
	}
	// A compound command: its redirections apply to all of it.
	var r redirResult
	for _, rd := range s.Redirs {
		c.redirect(rd, &r)
	}
	c.out.Issues = append(c.out.Issues, r.issues...)
	c.out.Protected = append(c.out.Protected, r.protected...)
	c.out.Sensitive = append(c.out.Sensitive, r.sensitive...)
	switch cmd := s.Cmd.(type) {
	case *syntax.BinaryCmd:
		// && || | |&: a list or pipeline is read-only only if every part is.
		c.stmt(cmd.X)
		c.stmt(cmd.Y)
	case *syntax.Block:
		c.stmts(cmd.Stmts)
	case *syntax.Subshell:
		c.stmts(cmd.Stmts)
	case *syntax.TimeClause:
		c.stmt(cmd.Stmt)
	case *syntax.FuncDecl:
		c.issue(Unknown, "defines a function (%s)", funcName(cmd))
		c.generic(cmd)
	case *syntax.IfClause:
		c.issue(Unknown, "an if statement is not analysed")
		c.generic(cmd)
	case *syntax.WhileClause:
		c.issue(Unknown, "a loop is not analysed")
		c.generic(cmd)
	case *syntax.ForClause:
		c.issue(Unknown, "a loop is not analysed")
		c.generic(cmd)
	case *syntax.CaseClause:
		c.issue(Unknown, "a case statement is not analysed")
		c.generic(cmd)
	case *syntax.DeclClause:
		c.issue(Unknown, "%s changes shell variables", declName(cmd))
		c.generic(cmd)
	default:
		c.issue(Unknown, "a %s is not analysed", nodeName(cmd))
		c.generic(cmd)
	}
}

func funcName(f *syntax.FuncDecl) string {
	if f.Name != nil {
		return f.Name.Value
	}
	return "anonymous"
}

func declName(d *syntax.DeclClause) string {
	if d.Variant != nil {
		return d.Variant.Value
	}
	return "a declaration"
}

func nodeName(n syntax.Node) string {
	switch n.(type) {
	case *syntax.ArithmCmd:
		return "arithmetic command"
	case *syntax.TestClause:
		return "[[ test ]]"
	case *syntax.LetClause:
		return "let statement"
	case *syntax.CoprocClause:
		return "coprocess"
	}
	return "shell construct"
}

// generic walks a construct that is not analysed, only to find the commands it holds (so that
// forbid rules and reasons see them).
func (c *classifier) generic(n syntax.Node) {
	if c.tooDeep() {
		return
	}
	c.depth++
	defer func() { c.depth-- }()
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			c.stmt(n)
			return false
		case *syntax.CmdSubst:
			c.stmts(n.Stmts)
			return false
		case *syntax.ProcSubst:
			c.stmts(n.Stmts)
			return false
		}
		return true
	})
}

// call classifies one simple command with the redirections of its statement.
func (c *classifier) call(ce *syntax.CallExpr, redirs []*syntax.Redirect) {
	// Reserve this command's slot first, so that commands found inside its words (substitutions)
	// come after it in source order.
	idx := len(c.out.Commands)
	c.out.Commands = append(c.out.Commands, Command{})
	cmd := Command{Clean: true}
	var found []Issue // every reason with the class it implies; the worst are shown first
	bad := func(cl Class, format string, args ...any) {
		found = append(found, Issue{cl, fmt.Sprintf(format, args...)})
		cmd.Clean = false
	}
	for _, a := range ce.Assigns {
		name := "?"
		if a.Name != nil {
			name = a.Name.Value
		}
		bad(Unknown, "assignment %s=… changes the environment of what runs", name)
		c.generic(a)
	}
	glob, nameGlob := false, false
	for i, w := range ce.Args {
		wi := c.word(w)
		cmd.Argv = append(cmd.Argv, wi.value)
		cmd.dyn = append(cmd.dyn, !wi.static)
		if !wi.static {
			bad(Unknown, "%s", wi.reason)
		}
		if wi.glob {
			cmd.Clean = false
			glob = true
			if i == 0 {
				nameGlob = true
				bad(Unknown, "the command name %s is a glob", wi.value)
			}
		}
	}
	switch {
	case len(ce.Args) == 0:
		if len(ce.Assigns) == 0 {
			bad(Unknown, "empty command")
		}
	case cmd.dyn[0]:
		found = append(found, Issue{Unknown, fmt.Sprintf("the command name %s is not a literal word", cmd.Argv[0])})
	case !nameGlob:
		ac, ar, extra := classifyArgv(cmd.Argv, glob)
		for _, r := range ar {
			found = append(found, Issue{ac, r})
		}
		if extra.runsProjectCode {
			c.out.RunsProjectCode = true
		}
		if extra.sensitive != "" {
			c.out.Sensitive = append(c.out.Sensitive, extra.sensitive)
		}
	}
	var r redirResult
	for _, rd := range redirs {
		c.redirect(rd, &r)
	}
	for _, is := range r.issues {
		bad(is.Class, "%s", is.Reason)
	}
	cmd.Class = ReadOnly
	for _, is := range found {
		cmd.Class = worse(cmd.Class, is.Class)
	}
	slices.SortStableFunc(found, func(a, b Issue) int { return b.Class.severity() - a.Class.severity() })
	for _, is := range found {
		cmd.Reasons = append(cmd.Reasons, is.Reason)
	}
	c.out.Sensitive = append(c.out.Sensitive, r.sensitive...)
	c.scanPaths(&cmd, r.protected)
	c.out.Commands[idx] = cmd
}

// redirOnly classifies a statement that is only redirections ("> file").
func (c *classifier) redirOnly(redirs []*syntax.Redirect) Command {
	cmd := Command{Class: ReadOnly}
	var r redirResult
	for _, rd := range redirs {
		c.redirect(rd, &r)
	}
	for _, is := range r.issues {
		cmd.Class = worse(cmd.Class, is.Class)
		cmd.Reasons = append(cmd.Reasons, is.Reason)
	}
	c.out.Protected = append(c.out.Protected, r.protected...)
	c.out.Sensitive = append(c.out.Sensitive, r.sensitive...)
	return cmd
}

// scanPaths records sensitive-looking arguments, and protected-looking arguments and write
// targets of commands that are not read-only.
func (c *classifier) scanPaths(cmd *Command, targets []string) {
	c.out.Protected = append(c.out.Protected, targets...)
	for i, a := range cmd.Argv {
		if i == 0 || (i < len(cmd.dyn) && cmd.dyn[i]) {
			continue
		}
		for _, p := range argPaths(a) {
			if isSensitivePath(p) {
				c.out.Sensitive = append(c.out.Sensitive, a)
			}
			if cmd.Class != ReadOnly && isProtectedPath(p) {
				c.out.Protected = append(c.out.Protected, a)
			}
		}
	}
}

// argPaths returns the parts of an argument that may name a path: the argument itself and, for
// --opt=value, the value.
func argPaths(a string) []string {
	out := []string{a}
	if strings.HasPrefix(a, "-") {
		if i := strings.IndexByte(a, '='); i >= 0 {
			out = append(out, a[i+1:])
		}
	}
	return out
}

type redirResult struct {
	issues    []Issue
	protected []string
	sensitive []string
}

// redirect classifies one redirection. Harmless: output to /dev/null, duplicating or closing a
// numbered descriptor, and reading a regular file. Everything else can write or needs review.
func (c *classifier) redirect(rd *syntax.Redirect, r *redirResult) {
	add := func(cl Class, format string, args ...any) {
		r.issues = append(r.issues, Issue{cl, fmt.Sprintf(format, args...)})
	}
	if rd.N != nil && !isDigits(rd.N.Value) {
		add(Unknown, "redirection %s%s assigns a descriptor to a variable", rd.N.Value, rd.Op)
	}
	if rd.Hdoc != nil {
		c.word(rd.Hdoc) // for the commands its substitutions hold
	}
	if rd.Word == nil {
		add(Unknown, "redirection %s without a target", rd.Op)
		return
	}
	wi := c.word(rd.Word)
	switch rd.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		add(Unknown, "here-document")
		return
	case syntax.WordHdoc:
		add(Unknown, "here-string")
		return
	}
	if !wi.static || wi.glob {
		add(Unknown, "redirection %s to a computed target %s", rd.Op, wi.value)
		return
	}
	target := wi.value
	switch rd.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.RdrAllClob, syntax.AppAllClob:
		if target == "/dev/null" {
			return
		}
		if isNetDevice(target) {
			add(Network, "redirection %s %s opens a network connection", rd.Op, target)
			return
		}
		add(Write, "output redirected to %s (%s)", target, rd.Op)
		r.protected = appendProtected(r.protected, target)
	case syntax.DplOut, syntax.DplIn:
		// >&2, 2>&1, <&0, >&- are harmless; ">&file" writes a file in bash.
		if isDigits(target) || target == "-" {
			return
		}
		add(Write, "output redirected to %s (%s)", target, rd.Op)
		r.protected = appendProtected(r.protected, target)
	case syntax.RdrIn:
		switch {
		case target == "/dev/null":
		case isNetDevice(target):
			add(Network, "redirection < %s opens a network connection", target)
		case strings.HasPrefix(target, "/dev/") || strings.HasPrefix(target, "/proc/"):
			add(Unknown, "input read from the device %s", target)
		case isSensitivePath(target):
			r.sensitive = append(r.sensitive, target)
		}
	case syntax.RdrInOut:
		if isNetDevice(target) {
			add(Network, "redirection <> %s opens a network connection", target)
			return
		}
		add(Write, "redirection <> %s opens the file for writing", target)
		r.protected = appendProtected(r.protected, target)
	default:
		add(Unknown, "redirection %s is not analysed", rd.Op)
	}
}

func appendProtected(list []string, target string) []string {
	if isProtectedPath(target) {
		list = append(list, target)
	}
	return list
}

// isNetDevice reports bash's special /dev/tcp and /dev/udp redirection targets.
func isNetDevice(p string) bool {
	p = path.Clean(p)
	return strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/") || p == "/dev/tcp" || p == "/dev/udp"
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
