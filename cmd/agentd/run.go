package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/internal/termtext"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools"
	"golang.org/x/term"
)

// Exit codes of `agentd run` (README.md lists them).
const (
	exitOK        = 0   // the turn finished and no call was refused
	exitError     = 1   // a model, server or setup error (the message says which, and the fix)
	exitUsage     = 2   // bad flags, arguments or configuration
	exitLimit     = 3   // the turn stopped at its step or time limit
	exitRefused   = 4   // the turn finished, but a call was refused: rejected at the prompt, or not permitted
	exitNoApprove = 5   // a call (or a change a command made) needed an approval no one could give (no terminal)
	exitCancelled = 130 // cancelled (Ctrl-C, or q at a prompt)
)

// runCmd runs one turn in a workspace from the terminal: the answer streams to stdout, tool
// activity to stderr, and every change or command the policy asks about is shown (a colored diff,
// the exact command) and approved at the prompt. Without a terminal nothing is asked: a call the
// approval mode does not allow is not run, the turn stops there, and the exit code says so.
func runCmd(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var s settings
	s.register(fs)
	dir := fs.String("C", ".", "the workspace directory")
	resume := fs.String("resume", "", "resume a stored session by ID")
	at := fs.String("at", "", "with --resume: go back to before this turn (t1, t2, …) — its files are restored unless changed since — and continue from there in a new session; without a prompt, that turn's prompt is sent again")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	prompt := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if (prompt == "" && *at == "") || (*at != "" && *resume == "") {
		fmt.Fprintln(os.Stderr, `usage: agentd run [-C DIR] [--model M] [--approval MODE] [--resume ID [--at TURN]] "prompt"`)
		return exitUsage
	}
	opts, warnings, err := s.resolve()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return exitUsage
	}
	for _, w := range warnings {
		fmt.Fprintln(os.Stderr, "agentd: warning:", w)
	}
	rt, err := harness.NewRuntime(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return 1
	}
	defer rt.Close()
	h, err := rt.Open(harness.SessionSpec{ID: *resume, Workspace: *dir, Model: s.model, Mode: s.approval})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return 1
	}
	if *at != "" {
		// Rewind: the files go back to before the turn, the conversation continues in a fork.
		res, err := harness.NewSession(h, nil).Rewind(*at)
		h.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentd:", err)
			return 1
		}
		w := termtext.New(os.Stderr, false)
		w.Printf("agentd: back to before turn %s of %s in session %s; %s restored\n", *at, *resume, res.Session, plural(len(res.Restored), "file", "files"))
		for _, sk := range res.Skipped {
			w.Printf("agentd: %s left as it is: %s\n", sk.Path, sk.Reason)
		}
		if prompt == "" {
			prompt = res.Prompt
		}
		if h, err = rt.Open(harness.SessionSpec{ID: res.Session, Model: s.model}); err != nil {
			fmt.Fprintln(os.Stderr, "agentd:", err)
			return 1
		}
	}
	// The live session closes the harness once it exists (the loop first, then the journal).
	closeSession := h.Close
	defer func() { closeSession() }()
	if *resume != "" && s.approval != "" && s.approval != h.Settings().ApprovalMode {
		// A resumed session keeps its mode unless --approval says otherwise (the way to go on
		// after a call needed an approval no one could give).
		if err := h.SetMode(s.approval); err != nil {
			fmt.Fprintln(os.Stderr, "agentd:", err)
			return exitUsage
		}
	}

	tty := term.IsTerminal(int(os.Stdin.Fd()))
	color := term.IsTerminal(int(os.Stderr.Fd())) && os.Getenv("NO_COLOR") == ""
	ui := &terminal{out: termtext.New(os.Stdout, false), err: termtext.New(os.Stderr, color)}
	var ask harness.Asker
	var asker *terminalAsker
	if tty {
		ta := &terminalAsker{t: ui, in: bufio.NewReader(os.Stdin)}
		ask, asker = ta, ta
	} else {
		ask = nil // no one to ask: the gate rejects what the mode does not allow
	}
	ends := make(chan agent.TurnEnd, 1)
	var tally refusals // written by the session's events, read after the TurnEnd arrived
	sess := harness.NewSession(h, ask)
	closeSession = sess.Close
	sess.Attach(func(u harness.Update) {
		if u.Event == nil {
			return // a call's status: the asker shows the question
		}
		ui.event(u.Event)
		tally.observe(u.Event)
		if e, ok := u.Event.(agent.ToolEnd); ok && asker != nil {
			asker.callEnded(e.CallID)
		}
		if te, ok := u.Event.(agent.TurnEnd); ok {
			ends <- te
		}
	})
	if err := sess.Start(context.Background()); err != nil {
		ui.err.Println("agentd:", describeErr(err))
		return 1
	}
	if note := harness.InstructionsNote(h.Instructions()); note != "" {
		ui.err.Println("agentd:", note)
	}
	if _, err := sess.Prompt(context.Background(), prompt); err != nil {
		ui.err.Println("agentd:", err)
		return 1
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var end agent.TurnEnd
	for done := false; !done; {
		select {
		case end = <-ends:
			done = true
		case <-sigs:
			ui.err.Println("\nagentd: cancelling the turn (press Ctrl-C again to quit at once)")
			sess.Cancel()
			go func() { <-sigs; os.Exit(130) }()
		}
	}
	ui.changeSummary(h, end.TurnID)
	ui.err.Printf("\nagentd: session %s (continue it with: agentd run --resume %s \"…\")\n", h.ID(), h.ID())
	return exitCode(ui.err, end, &tally)
}

// changeSummary prints, on stderr, the files the turn changed with their added and removed lines
// and how to revert them (nothing when the turn changed no file).
func (t *terminal) changeSummary(h *harness.Harness, turnID string) {
	if turnID == "" {
		return
	}
	_, files, err := h.TurnChanges(turnID)
	if err != nil {
		if !errors.Is(err, harness.ErrUnknownTurn) {
			slog.Warn("cannot list the turn's changes", "turn", turnID, "err", err)
		}
		return
	}
	if len(files) == 0 {
		return
	}
	noun := "files"
	if len(files) == 1 {
		noun = "file"
	}
	t.err.Printf("\nagentd: changed %d %s:\n", len(files), noun)
	for _, f := range files {
		add, del := f.Diff.Stats()
		note := ""
		switch {
		case f.ChangedSince:
			note = "  (changed since)"
		case f.Status != "modified":
			note = "  (" + f.Status + ")"
		}
		t.err.Printf("  %s  %s %s%s\n", termtext.Line(f.Rel), t.err.Paint("32", fmt.Sprintf("+%d", add)), t.err.Paint("31", fmt.Sprintf("−%d", del)), note)
	}
	t.err.Printf("  undo them: agentd revert --session %s --turn %s\n", h.ID(), turnID)
}

// exitCode reports how the turn ended and returns the exit code (see the exit* constants). Every
// call that was not run as asked is listed in full, with what would allow it.
func exitCode(w *termtext.Writer, end agent.TurnEnd, t *refusals) int {
	switch end.Reason {
	case "cancelled":
		return exitCancelled
	case "error":
		w.Println("agentd:", describeErr(end.Err))
		return exitError
	}
	if len(t.unapproved) > 0 || end.Reason == "blocked" {
		w.Printf("agentd: the turn stopped: %s not run because %s an approval and there is no terminal to ask in:\n",
			plural(len(t.unapproved), "call was", "calls were"), pick(len(t.unapproved), "it needs", "they need"))
		t.list(w, t.unapproved)
		return exitNoApprove
	}
	if len(t.unreviewed) > 0 {
		w.Printf("agentd: NOT applied: %s a command made %s your review, and there is no terminal to ask in (run agentd in a terminal, or use an editor, to review such changes):\n",
			plural(len(t.unreviewed), "change", "changes"), pick(len(t.unreviewed), "needs", "need"))
		for _, f := range t.unreviewed {
			w.Printf("  %s\n", termtext.Line(f.Subject))
		}
		return exitNoApprove
	}
	if len(t.refused) > 0 {
		w.Printf("agentd: not everything asked was done: %s refused:\n", plural(len(t.refused), "call was", "calls were"))
		t.list(w, t.refused)
	}
	switch end.Reason {
	case "done", "terminated":
		if len(t.refused) > 0 {
			return exitRefused
		}
		return exitOK
	default:
		w.Println("agentd: the turn stopped:", end.Reason)
		return exitLimit
	}
}

// refusals collects the calls of a turn that were not run as asked.
type refusals struct {
	args       map[string]string // by call ID, from ToolStart
	refused    []agent.ToolEnd   // rejected_by_user, permission_denied
	unapproved []agent.ToolEnd   // approval_unavailable
	// unreviewed are changes a command made that need a review no one could give: not applied.
	unreviewed []agent.FollowUpEnd
}

func (r *refusals) observe(e agent.Event) {
	switch e := e.(type) {
	case agent.ToolStart:
		if r.args == nil {
			r.args = map[string]string{}
		}
		r.args[e.CallID] = string(e.Args)
	case agent.FollowUpEnd:
		if !e.Applied && e.Type == tools.ApprovalUnavailable {
			r.unreviewed = append(r.unreviewed, e)
		}
	case agent.ToolEnd:
		switch e.Result.Type {
		case tools.ApprovalUnavailable:
			r.unapproved = append(r.unapproved, e)
		case tools.RejectedByUser, tools.PermissionDenied:
			r.refused = append(r.refused, e)
		}
	}
}

// list prints each call and its whole result text: the reason, and what would allow it.
func (r *refusals) list(w *termtext.Writer, ends []agent.ToolEnd) {
	for _, e := range ends {
		w.Printf("  %s %s\n", termtext.Line(e.Tool), shorten(r.args[e.CallID], 200))
		for _, line := range strings.Split(strings.TrimRight(e.Result.Text(), "\n"), "\n") {
			w.Printf("    %s\n", termtext.Line(line))
		}
	}
}

// plural says "1 call was" or "2 calls were".
func plural(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, pick(n, one, many))
}

func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func describeErr(err error) string {
	var me *agent.ModelError
	if errors.As(err, &me) {
		if me.Fix != "" {
			return me.Message + "\n  fix: " + me.Fix
		}
		return me.Message
	}
	return err.Error()
}

// terminal renders a session's events. Everything goes through termtext: what the model
// controls (its reply, commands, diffs, paths, tool results) reaches the terminal with its
// control characters shown, never raw.
type terminal struct {
	out, err *termtext.Writer
	midLine  bool // the answer's last text did not end a line
	thinking bool
}

func (t *terminal) event(e agent.Event) {
	switch e := e.(type) {
	case agent.MessageDelta:
		if e.Thinking != "" {
			if !t.thinking {
				t.err.Print(t.err.Paint("2", "thinking: "))
				t.thinking = true
			}
			t.err.Print(t.err.Paint("2", e.Thinking))
		}
		if e.Text != "" {
			if t.thinking {
				t.err.Println()
				t.thinking = false
			}
			t.out.Stream(e.Text)
			t.midLine = !strings.HasSuffix(e.Text, "\n")
		}
	case agent.MessageEnd:
		t.endLine()
	case agent.ToolStart:
		t.endLine()
		t.err.Printf("%s %s %s\n", t.err.Paint("36", "→"), termtext.Line(e.Tool), t.err.Paint("2", shorten(string(e.Args), 100)))
	case agent.ToolEnd:
		mark, code := "✓", "32"
		if e.Result.IsError {
			mark, code = "✗ "+string(e.Result.Type), "31"
		}
		t.err.Printf("%s %s %s\n", t.err.Paint(code, mark), termtext.Line(e.Tool), t.err.Paint("2", shorten(firstLine(e.Result.Text()), 100)))
	case agent.Compacted:
		t.err.Printf("%s\n", t.err.Paint("2", fmt.Sprintf("(history compacted: ~%d → ~%d tokens)", e.Before, e.After)))
	case agent.TurnEnd:
		t.endLine()
	}
}

func (t *terminal) endLine() {
	if t.thinking {
		t.err.Println()
		t.thinking = false
	}
	if t.midLine {
		t.out.Println()
		t.midLine = false
	}
}

// shorten puts s on one line (runs of white space become one space, control characters are
// shown escaped) and cuts it to about n bytes, on a character boundary.
func shorten(s string, n int) string {
	s = termtext.Line(strings.Join(strings.Fields(s), " "))
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n] + "…"
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// terminalAsker asks at the terminal, one question at a time. The file changes of one model
// reply are listed first and then asked about one after another, in the model's order
// (replyAsk); the results still reach the model in the order of its calls.
type terminalAsker struct {
	t  *terminal
	in *bufio.Reader
	// mu is held while a question (or a reply's list of changes) is at the terminal.
	mu sync.Mutex

	rmu     sync.Mutex
	replies map[*agent.ReplyChanges]*replyAsk
	ended   map[string]bool // calls whose ToolEnd was seen
	wake    chan struct{}   // closed and replaced when a question is added or a call ends
}

// AsksTogether: the gate may put every file change of a reply up at once; the asker lists them
// and asks about each in turn.
func (a *terminalAsker) AsksTogether() bool { return true }

func (a *terminalAsker) Ask(ctx context.Context, q harness.Question) (harness.Answer, error) {
	if q.Call.Reply != nil {
		return a.askInReply(ctx, q)
	}
	// Any other question (a command, a tool, a command's change to review) is asked on its own;
	// Posted is not called, so the next one comes once this one is decided, in order.
	a.mu.Lock()
	defer a.mu.Unlock()
	ans, _, err := a.askOne(ctx, q, "", false)
	return ans, err
}

// The rest of a reply's file changes, as the user answered for them.
const (
	restAsk    = ""
	restAccept = "accept"
	restReject = "reject"
)

// askOne shows one question and reads its answer. header, when set, is printed in place of the
// policy's reason (a reply's "file 2 of 3"); more offers to answer for the rest of the reply too,
// which rest then says.
func (a *terminalAsker) askOne(ctx context.Context, q harness.Question, header string, more bool) (ans harness.Answer, rest string, err error) {
	t := a.t
	t.endLine()
	w := t.err
	if header != "" {
		w.Printf("\n%s %s (%s)\n", w.Paint("1;33", header), termtext.Line(q.Call.Label), termtext.Line(q.Verdict.Reason))
	} else {
		w.Printf("\n%s %s\n", w.Paint("1;33", "approval needed:"), termtext.Line(q.Verdict.Reason))
	}
	var options string
	var sessionGrant *policy.Grant
	switch q.Kind {
	case "edit":
		d := *q.Call.Preview.Diff
		d.Path = termtext.Line(d.Path) // a name with a line break must not make lines of its own
		for _, line := range strings.SplitAfter(d.Unified(3), "\n") {
			switch {
			case strings.HasPrefix(line, "+++") || strings.HasPrefix(line, "---"):
				w.Print(w.Paint("1", line))
			case strings.HasPrefix(line, "+"):
				w.Print(w.Paint("32", line))
			case strings.HasPrefix(line, "-"):
				w.Print(w.Paint("31", line))
			case strings.HasPrefix(line, "@@"):
				w.Print(w.Paint("36", line))
			default:
				w.Print(line)
			}
		}
		options = "[y] apply  [n] reject (with a reason)  [q] cancel the turn"
		for _, g := range q.Grants {
			if g.Scope == policy.ScopeTool {
				g := g
				sessionGrant = &g
				options = "[y] apply  [a] apply all edits this session  [n] reject (with a reason)  [q] cancel the turn"
				break
			}
		}
		if more {
			options = strings.Replace(options, "  [q]", "  [Y] apply it and the rest listed  [N] reject it and the rest  [q]", 1)
		}
	case "command":
		c := q.Call.Preview.Command
		lines := commandLines(c.Argv[len(c.Argv)-1])
		w.Printf("  %s %s\n", w.Paint("1", "$"), lines[0])
		for _, l := range lines[1:] {
			w.Printf("  %s %s\n", w.Paint("2", "│"), l)
		}
		w.Printf("  in %s; sandbox: %s; timeout %ds\n", termtext.Line(c.Cwd), termtext.Line(c.Sandbox), c.TimeoutMS/1000)
		options = "[y] run  [n] reject (with a reason)  [q] cancel the turn"
		if len(q.Grants) > 0 {
			g := q.Grants[0]
			sessionGrant = &g
			options = fmt.Sprintf("[y] run  [a] allow %s for this session  [n] reject (with a reason)  [q] cancel the turn", termtext.Line(g.String()))
		}
	default:
		w.Printf("  %s\n", termtext.Line(q.Call.Label))
		options = "[y] allow  [n] reject (with a reason)  [q] cancel the turn"
		for _, g := range q.Grants {
			if g.Scope == policy.ScopeTool { // e.g. an MCP tool: allow that tool for the session
				g := g
				sessionGrant = &g
				options = fmt.Sprintf("[y] allow  [a] allow %s for this session  [n] reject (with a reason)  [q] cancel the turn", termtext.Line(g.String()))
				break
			}
		}
	}
	for {
		w.Printf("%s ", options)
		line, err := a.readLine(ctx)
		if err != nil {
			return harness.Answer{}, "", err
		}
		line = strings.TrimSpace(line)
		if more && q.Kind == "edit" {
			switch line {
			case "Y":
				return harness.Answer{Decision: harness.AnswerAccept}, restAccept, nil
			case "N":
				w.Print("reason, for it and the rest (optional, the model reads it): ")
				reason, err := a.readLine(ctx)
				if err != nil {
					return harness.Answer{}, "", err
				}
				return harness.Answer{Decision: harness.AnswerReject, Reason: strings.TrimSpace(reason)}, restReject, nil
			}
		}
		switch strings.ToLower(line) {
		case "y", "yes":
			return harness.Answer{Decision: harness.AnswerAccept}, restAsk, nil
		case "a", "all":
			if sessionGrant != nil {
				// Edits of the reply already put up are covered by the grant as well.
				rest := restAsk
				if q.Kind == "edit" {
					rest = restAccept
				}
				return harness.Answer{Decision: harness.AnswerAcceptForSession, Grant: sessionGrant}, rest, nil
			}
		case "n", "no":
			w.Print("reason (optional, the model reads it): ")
			reason, err := a.readLine(ctx)
			if err != nil {
				return harness.Answer{}, "", err
			}
			return harness.Answer{Decision: harness.AnswerReject, Reason: strings.TrimSpace(reason)}, restAsk, nil
		case "q", "quit":
			return harness.Answer{Decision: harness.AnswerCancelTurn}, restAsk, nil
		}
	}
}

// commandLines splits a command into the lines shown for it: a line of several lines is shown
// with a bar before each line after the first, so that none of them looks like agentd's own, and
// a run of blank lines (which could push the start of the command out of sight) is one line
// saying how many there are.
func commandLines(cmd string) []string {
	var out []string
	blank := 0
	flush := func() {
		switch {
		case blank == 1:
			out = append(out, "")
		case blank > 1:
			out = append(out, fmt.Sprintf("(%d blank lines)", blank))
		}
		blank = 0
	}
	for i, l := range strings.Split(cmd, "\n") {
		if i > 0 && strings.TrimSpace(l) == "" {
			blank++
			continue
		}
		flush()
		out = append(out, termtext.Escape(l))
	}
	flush()
	return out
}

// readLine reads a line from the terminal, or returns when ctx ends.
func (a *terminalAsker) readLine(ctx context.Context) (string, error) {
	ch := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		line, err := a.in.ReadString('\n')
		if err != nil && line == "" {
			errc <- err
			return
		}
		ch <- line
	}()
	select {
	case line := <-ch:
		return line, nil
	case err := <-errc:
		return "", fmt.Errorf("reading the answer: %w", err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
