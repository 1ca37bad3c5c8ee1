package harness

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/mcp"
	"github.com/agentd/agentd/tools/sandbox"
)

// Asker asks the user about one call the policy cannot decide alone. The editor daemon asks
// through reviews; `agentd run` asks in the terminal. Ask must return when ctx is cancelled.
type Asker interface {
	Ask(ctx context.Context, q Question) (Answer, error)
}

// TogetherAsker is an Asker that puts a question up and waits for the answer (an editor's
// review): it calls the question's Call.Posted once the question is visible, so that every file
// change of one model reply is up for review at once, decided in any order. An Asker that asks one
// question at a time (a terminal) does not implement it: its questions come one after another.
type TogetherAsker interface {
	Asker
	AsksTogether() bool
}

// Question is one call to decide.
type Question struct {
	// Call is the call to decide. For a command, its preview's sandbox line also names what
	// allowing it opens: the unix sockets of its rule, the sensitive files approving unmasks.
	Call    agent.GateRequest
	Request policy.Request
	Verdict policy.Verdict
	// Kind is "edit" (a file change with a diff), "command" or "tool".
	Kind string
	// Grants are the "allow for this session" choices the user may be offered, narrowest first.
	Grants []policy.Grant
}

// Answer kinds.
const (
	AnswerAccept           = "accept"
	AnswerAcceptForSession = "acceptForSession"
	AnswerReject           = "reject"
	// AnswerRejectForSession rejects the call and every later one its Grant's scope covers, for
	// the rest of the session (a policy refusal, kept as grants are: policy.Policy.Refusals).
	AnswerRejectForSession = "rejectForSession"
	AnswerCancelTurn       = "cancelTurn"
)

// Answer is the user's decision.
type Answer struct {
	Decision string
	// Hunks are the accepted hunks of an edit (nil: all).
	Hunks []string
	// Grant is the scope of an acceptForSession or a rejectForSession.
	Grant *policy.Grant
	// Reason is the user's reason for a reject, told to the model.
	Reason string
	// HunkReasons are the user's reasons for single rejected hunks of an edit (hunk ID → reason;
	// a reject, or a partial accept whose Hunks do not name them), each told to the model.
	HunkReasons map[string]string
	// Content is the user's own version of a changed file (they edited the proposal): written
	// instead of it (an accept; nil: the proposal).
	Content *string
	// By says who decided, for the audit log: "user" (default), "grant", "timeout", …
	By string
}

// AnswerUnavailable is not a user's decision: nobody could decide (no editor that can review was
// attached, the reviewing editor disconnected, no decision came within the timeout). Reason says
// which, for the model; the call gets approval_unavailable and the turn ends, as in `agentd run`
// without a terminal.
const AnswerUnavailable = "unavailable"

// ErrCancelTurn is returned by a gate when the user cancelled the whole turn.
var ErrCancelTurn = errors.New("the user cancelled the turn")

// gate turns policy verdicts and the user's answers into the kernel's gate decisions.
type gate struct {
	h   *Harness
	ask Asker
	// cancelTurn stops the running turn (set by the frontend once the agent session exists).
	cancelTurn func()
}

func newGate(h *Harness, ask Asker) *gate { return &gate{h: h, ask: ask} }

// Decide is the kernel's gate: the policy's verdict, else the Asker's answer. The decision says who
// made it (store.ByPolicy, store.ByGrant, store.ByUser, or what the Asker's Answer.By said) for
// the audit log.
func (g *gate) Decide(ctx context.Context, req agent.GateRequest) (agent.GateDecision, error) {
	preq := g.h.policyRequest(req)
	v := g.h.Policy.Decide(preq)
	switch v.Decision {
	case policy.Allow:
		by := store.ByPolicy
		if g.h.Policy.Grants().Covers(preq) {
			by = store.ByGrant
		}
		sockets, _ := g.optIns(req, preq)
		return agent.GateDecision{Allow: true, Approval: approvalOf(sockets), By: by}, nil
	case policy.Deny:
		return agent.GateDecision{Type: tools.PermissionDenied, Reason: v.Reason, By: store.ByPolicy}, nil
	}
	if r, ok := g.h.Policy.Refusals().Covering(preq); ok && v.Grantable {
		return agent.GateDecision{Type: tools.RejectedByUser, By: store.ByGrant,
			Reason: "the user rejected " + r.String() + " for this session"}, nil
	}
	if g.ask == nil {
		// Nobody to ask (agentd run without a terminal). Not a rejection by the user: the call
		// gets its own result type, and the turn ends, since nothing the model does can obtain
		// the approval.
		return agent.GateDecision{Type: tools.ApprovalUnavailable, EndTurn: true, By: store.ByPolicy,
			Reason: v.Reason + "; no one can approve it here: there is no terminal or editor to ask the user. " + g.howToAllow(req, preq, v)}, nil
	}
	q := Question{Call: req, Request: preq, Verdict: v, Kind: kindOf(req)}
	sockets, sensitive := g.optIns(req, preq)
	q.Call.Preview = showOptIns(req.Preview, sockets, sensitive)
	if v.Grantable {
		q.Grants = g.h.Policy.Suggest(preq, v)
	}
	ans, err := g.ask.Ask(ctx, q)
	if err != nil {
		return agent.GateDecision{}, err
	}
	by := ans.By
	if by == "" {
		by = store.ByUser
	}
	d, err := g.answer(ans, by, v, sockets, sensitive, req.Preview)
	d.By = by
	return d, err
}

// answer turns the Asker's answer into the kernel's decision.
func (g *gate) answer(ans Answer, by string, v policy.Verdict, sockets, sensitive []string, pv *tools.Preview) (agent.GateDecision, error) {
	switch ans.Decision {
	case AnswerAccept:
		a := &tools.Approval{Hunks: ans.Hunks, Note: ans.Reason, HunkReasons: ans.HunkReasons, Content: ans.Content, UnixSockets: sockets}
		if by == store.ByUser {
			// Only the user's own yes to this command unmasks what it names (a grant never
			// covers sensitive reads, but a settle by grant must not unmask either).
			a.ReadableSensitive = sensitive
		}
		return agent.GateDecision{Allow: true, Approval: a}, nil
	case AnswerAcceptForSession:
		if ans.Grant != nil {
			if _, err := g.h.Policy.Grants().Add(*ans.Grant); err != nil {
				return agent.GateDecision{}, err
			}
		}
		return agent.GateDecision{Allow: true, Approval: approvalOf(sockets)}, nil
	case AnswerRejectForSession:
		if ans.Grant == nil {
			return agent.GateDecision{}, errors.New("a rejection for the session needs its scope")
		}
		r, err := g.h.Policy.Refusals().Add(*ans.Grant)
		if err != nil {
			return agent.GateDecision{}, err
		}
		reason := ans.Reason
		if reason == "" {
			reason = "the user rejected " + r.String() + " for this session"
		}
		return agent.GateDecision{Reason: tools.RejectionReason(reason, pv, ans.HunkReasons)}, nil
	case AnswerUnavailable:
		// Fail closed, and tell the truth: the user did not reject it. Nothing the model does
		// in this turn can obtain the approval, so the turn ends, as in `agentd run`.
		return agent.GateDecision{Type: tools.ApprovalUnavailable, EndTurn: true, Reason: v.Reason + "; " + ans.Reason}, nil
	case AnswerCancelTurn:
		if g.cancelTurn != nil {
			g.cancelTurn()
		}
		return agent.GateDecision{Reason: "the user cancelled the turn"}, nil
	default:
		return agent.GateDecision{Reason: tools.RejectionReason(ans.Reason, pv, ans.HunkReasons)}, nil
	}
}

// howToAllow tells the user what would let a call that asks run without asking, as far as the
// policy allows anything to (see policy.Decide).
func (g *gate) howToAllow(req agent.GateRequest, preq policy.Request, v policy.Verdict) string {
	config := filepath.Join(g.h.rt.opts.Policy.ConfigDir, "config")
	terminal := "run `agentd run` in a terminal to be asked"
	switch {
	case preq.MCP != nil:
		return "MCP tools ask in ask and auto-edit modes: run with --approval yolo, set \"trustReadOnly\": true for server " +
			preq.MCP.Server + " in " + filepath.Join(g.h.rt.opts.Policy.ConfigDir, mcp.ConfigFile) +
			" (its read-only tools then run without asking), or " + terminal + "."
	case !v.Grantable:
		// Protected paths, sensitive reads, network access, unparsable commands, no sandbox:
		// these ask in every mode and no rule or grant covers them.
		return "No approval mode, rule or grant allows this without asking: " + terminal + ", or use an editor."
	case preq.Permission.Access == tools.AccessWrite:
		return "To allow it: run with --approval auto-edit (edits apply without asking, and `agentd revert` undoes them), " +
			"put `mode auto-edit` in " + config + ", or " + terminal + "."
	case strings.HasPrefix(v.Reason, "asks: rule "):
		return "A rule asks for it: change that rule in " + config + ", or " + terminal + "."
	}
	if kindOf(req) == "command" {
		if strings.HasPrefix(v.Reason, "asks: commands ask in ") { // a read-only command in ask mode
			return "To allow it: run with --approval auto-edit (read-only commands run in the sandbox without asking), " +
				"put `mode auto-edit` in " + config + ", or " + terminal + "."
		}
		// A rule per program and subcommand the line runs (not the exact command: a rule for
		// `go test` also allows the next `go test -run X`).
		var cmds []policy.Grant
		for _, gr := range g.h.Policy.Suggest(preq, v) {
			if gr.Scope == policy.ScopeCommand {
				cmds = append(cmds, gr)
			}
		}
		var rules []string
		for _, gr := range cmds {
			narrower := slices.ContainsFunc(cmds, func(o policy.Grant) bool {
				return len(o.Prefix) < len(gr.Prefix) && slices.Equal(gr.Prefix[:len(o.Prefix)], o.Prefix)
			})
			if !narrower {
				// String quotes the words as the config file reads them: command `go test`.
				rules = append(rules, "`allow "+strings.Trim(strings.TrimPrefix(gr.String(), "command "), "`")+"`")
			}
		}
		rule := "an `allow` rule for the command"
		switch len(rules) {
		case 0:
		case 1:
			rule = "the rule " + rules[0]
		default:
			rule = "the rules " + strings.Join(rules, " and ")
		}
		return "To allow it: add " + rule + " to " + config + ", run with --approval yolo (commands run in the sandbox " +
			"without asking), or " + terminal + "."
	}
	return "To allow it: " + terminal + "."
}

// optIns returns what a bash call may get beyond the base sandbox policy once allowed: the unix
// sockets the `socket` lines of the user's rules open for its command line, and the sensitive
// workspace files it names (absolute, resolved against its working directory), which only the
// user's approval of this one call unmasks. Nil for other tools.
func (g *gate) optIns(req agent.GateRequest, preq policy.Request) (sockets, sensitive []string) {
	if preq.Command == "" {
		return nil, nil
	}
	cl := g.h.Policy.Classify(preq.Command)
	cwd := ""
	if req.Preview != nil && req.Preview.Command != nil {
		cwd = req.Preview.Command.Cwd
	}
	return cl.UnixSockets(), sensitiveReads(cl, cwd)
}

// sensitiveReads lists the sensitive files a command line names as static words (the
// classifier's Sensitive: arguments, --opt=value values, input redirections), as absolute paths
// resolved against cwd. A computed name (e=.en; cat ${e}v) is not there, and a command line that
// changes directory (cd, pushd, popd) gets none, since its relative names would resolve elsewhere.
// The bash tool keeps only regular files inside the workspace (builtin.optInsOf).
func sensitiveReads(cl policy.Classification, cwd string) []string {
	if !filepath.IsAbs(cwd) || cl.ParseError != nil {
		return nil
	}
	for _, c := range cl.Commands {
		if len(c.Argv) > 0 && (c.Argv[0] == "cd" || c.Argv[0] == "pushd" || c.Argv[0] == "popd") {
			return nil
		}
	}
	var out []string
	for _, s := range cl.Sensitive {
		words := []string{s}
		if _, v, ok := strings.Cut(s, "="); ok && strings.HasPrefix(s, "-") {
			words = append(words, v)
		}
		for _, w := range words {
			if _, sens, _ := fsafe.Classify(filepath.ToSlash(w)); !sens || w == "" {
				continue
			}
			p := w
			if !filepath.IsAbs(p) {
				p = filepath.Join(cwd, p)
			}
			if p = filepath.Clean(p); !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// showOptIns is the preview the user is asked about: a command's sandbox line also says which
// unix sockets the command gets and which sensitive files approving it unmasks.
func showOptIns(pv *tools.Preview, sockets, sensitive []string) *tools.Preview {
	if pv == nil || pv.Command == nil || len(sockets)+len(sensitive) == 0 {
		return pv
	}
	cp, cmd := *pv, *pv.Command
	if len(sockets) > 0 {
		cmd.Sandbox += "; unix sockets ON (" + strings.Join(sockets, ", ") + ")"
	}
	if len(sensitive) > 0 && !strings.Contains(cmd.Sandbox, sandbox.SensitiveUnmasked) {
		cmd.Sandbox += "; approving unmasks " + strings.Join(sensitive, ", ")
	}
	cp.Command = &cmd
	return &cp
}

// approvalOf is the approval of a call allowed without the user's own yes: only the sockets.
func approvalOf(sockets []string) *tools.Approval {
	if len(sockets) == 0 {
		return nil
	}
	return &tools.Approval{UnixSockets: sockets}
}

func kindOf(req agent.GateRequest) string {
	switch {
	case req.Preview != nil && req.Preview.Diff != nil:
		return "edit"
	case req.Preview != nil && req.Preview.Command != nil:
		return "command"
	}
	return "tool"
}

// policyRequest describes a call for the policy.
func (h *Harness) policyRequest(req agent.GateRequest) policy.Request {
	pr := policy.Request{
		Tool:             req.Call.Name,
		Preview:          req.Preview,
		SandboxAvailable: h.rt.sandbox != nil && h.rt.features.LandlockABI > 0,
	}
	if pm, ok := req.Tool.(tools.PermissionMetadata); ok {
		pr.Permission = pm.Permission(req.Call)
	} else {
		pr.Permission = tools.Permission{Access: tools.AccessExec}
	}
	pr.Command, pr.Network = pr.Permission.Command, pr.Permission.Network
	if mt, ok := req.Tool.(*mcp.Tool); ok {
		pr.MCP = &policy.MCPCall{Server: mt.Server(), Tool: mt.RemoteName(), TrustedReadOnly: mt.TrustedReadOnly()}
	}
	return pr
}
