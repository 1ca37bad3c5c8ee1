package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/internal/termtext"
)

// replyAsk is the terminal's round of questions about one run of file changes of a model reply
// (agent.ReplyChanges): once they are all up, the list is printed, then each change is asked
// about in the model's order. A change that waits for an earlier one of its file is asked once
// that one is decided and applied (it is previewed against what it left).
type replyAsk struct {
	r    *agent.ReplyChanges
	qs   map[string]*pendingQuestion // by call ID; under terminalAsker.rmu
	once sync.Once
}

// pendingQuestion is a question of a reply waiting for the user's answer.
type pendingQuestion struct {
	q   harness.Question
	ans chan answered // buffered: the answer is given once
}

type answered struct {
	a   harness.Answer
	err error
}

// askInReply registers a file change of a reply, says it is up (the next one of the reply is then
// put to the gate), and waits for the answer the round of questions gives it.
func (a *terminalAsker) askInReply(ctx context.Context, q harness.Question) (harness.Answer, error) {
	p := &pendingQuestion{q: q, ans: make(chan answered, 1)}
	a.rmu.Lock()
	if a.replies == nil {
		a.replies = map[*agent.ReplyChanges]*replyAsk{}
	}
	ra := a.replies[q.Call.Reply]
	if ra == nil {
		ra = &replyAsk{r: q.Call.Reply, qs: map[string]*pendingQuestion{}}
		a.replies[q.Call.Reply] = ra
	}
	ra.qs[q.Call.Call.ID] = p
	a.wakeLocked()
	a.rmu.Unlock()
	if q.Call.Posted != nil {
		q.Call.Posted()
	}
	// Every gate of a batch has the batch's context: the round ends with it.
	ra.once.Do(func() { go a.decideReply(ctx, ra) })
	select {
	case r := <-p.ans:
		return r.a, r.err
	case <-ctx.Done():
		return harness.Answer{}, ctx.Err()
	}
}

// callEnded notes that a call ended (its ToolEnd): a change that ended without a question (its
// arguments did not fit, the approval mode allowed it) is not waited for.
func (a *terminalAsker) callEnded(id string) {
	a.rmu.Lock()
	defer a.rmu.Unlock()
	if a.ended == nil {
		a.ended = map[string]bool{}
	}
	a.ended[id] = true
	a.wakeLocked()
}

// wakeLocked wakes whoever waits for a question or the end of a call. rmu is held.
func (a *terminalAsker) wakeLocked() {
	if a.wake != nil {
		close(a.wake)
	}
	a.wake = make(chan struct{})
}

// question waits until the change id has been put to the user (its question) or has ended
// without one (nil).
func (a *terminalAsker) question(ctx context.Context, ra *replyAsk, id string) (*pendingQuestion, error) {
	for {
		a.rmu.Lock()
		p, ended := ra.qs[id], a.ended[id]
		if a.wake == nil {
			a.wake = make(chan struct{})
		}
		wake := a.wake
		a.rmu.Unlock()
		switch {
		case p != nil:
			return p, nil
		case ended:
			return nil, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// waitEnded waits until the call id has ended (its ToolEnd was printed).
func (a *terminalAsker) waitEnded(ctx context.Context, id string) error {
	for {
		a.rmu.Lock()
		ended := a.ended[id]
		if a.wake == nil {
			a.wake = make(chan struct{})
		}
		wake := a.wake
		a.rmu.Unlock()
		if ended {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// decideReply is the round of questions of a reply: it waits until every change that waits for
// no other is up, lists them, and asks about each in the model's order. Answering for "the rest"
// applies to the changes listed with their diff; a change that waits for an earlier one is shown
// and asked when its turn comes, unless the rest was rejected.
func (a *terminalAsker) decideReply(ctx context.Context, ra *replyAsk) {
	select {
	case <-ra.r.Up:
	case <-ctx.Done():
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	defer func() {
		a.rmu.Lock()
		delete(a.replies, ra.r)
		a.rmu.Unlock()
	}()

	a.rmu.Lock()
	up := maps.Clone(ra.qs) // the changes up now: each that waits for no other
	a.rmu.Unlock()
	listed := map[string]bool{}
	for id := range up {
		listed[id] = true
	}
	num, total := a.listReply(ra, up)
	if total == 0 {
		return
	}
	rest, restReason := restAsk, ""
	for _, c := range ra.r.Changes {
		p, err := a.question(ctx, ra, c.CallID)
		if err != nil {
			return // the batch ended: every gate's context ended with it
		}
		if p == nil {
			continue
		}
		switch {
		case rest == restReject:
			reason := restReason
			if reason == "" {
				reason = "the user rejected the rest of the reply's changes"
			}
			p.ans <- answered{a: harness.Answer{Decision: harness.AnswerReject, Reason: reason}}
			continue
		case rest == restAccept && listed[c.CallID]:
			p.ans <- answered{a: harness.Answer{Decision: harness.AnswerAccept}}
			continue
		}
		header := ""
		if total > 1 {
			header = fmt.Sprintf("change %d of %d:", num[c.CallID], total)
		}
		ans, r, err := a.askOne(ctx, p.q, header, num[c.CallID] < total)
		p.ans <- answered{a: ans, err: err}
		if err != nil || ans.Decision == harness.AnswerCancelTurn {
			return
		}
		// Its result line is printed before the next question, not into its prompt.
		if a.waitEnded(ctx, c.CallID) != nil {
			return
		}
		if r != restAsk {
			rest, restReason = r, ans.Reason
		}
	}
}

// listReply prints the run of changes: each one that is up with its path, what it does and its
// added and removed lines, and each that waits for an earlier one with the one it waits for (a
// list of one is not printed). It returns the number of each change listed, and how many.
func (a *terminalAsker) listReply(ra *replyAsk, up map[string]*pendingQuestion) (map[string]int, int) {
	w := a.t.err
	num := map[string]int{} // call ID → its number in the list
	var lines []string
	for _, c := range ra.r.Changes {
		if up[c.CallID] == nil && c.After == "" {
			continue // ended without a question
		}
		num[c.CallID] = len(num) + 1
		if p := up[c.CallID]; p != nil {
			lines = append(lines, fmt.Sprintf("  %d. %s", num[c.CallID], changeLine(w, p.q)))
			continue
		}
		after := "an earlier change of it"
		if k, ok := num[c.After]; ok {
			after = fmt.Sprintf("%d", k)
		}
		lines = append(lines, fmt.Sprintf("  %d. %s %s  %s", num[c.CallID], termtext.Line(c.Tool), termtext.Line(argPath(c.Args)),
			w.Paint("2", "after "+after+": shown once that one is decided")))
	}
	if len(lines) == 0 {
		return num, 0
	}
	a.t.endLine()
	if len(lines) > 1 {
		w.Printf("\n%s\n", w.Paint("1;33", fmt.Sprintf("the reply proposes %d file changes; each is asked below, in this order:", len(lines))))
		for _, l := range lines {
			w.Print(termtext.Styled(l + "\n")) // built from escaped parts
		}
	}
	return num, len(lines)
}

// changeLine is a file change in the list: its path, created / edited / deleted, and its
// added and removed lines.
func changeLine(w *termtext.Writer, q harness.Question) string {
	pv := q.Call.Preview
	if pv == nil || pv.Diff == nil {
		return termtext.Line(q.Call.Label)
	}
	d := pv.Diff
	what := "edited"
	switch {
	case d.Created:
		what = "created"
	case d.Deleted:
		what = "deleted"
	}
	add, del := d.Stats()
	return fmt.Sprintf("%s  %s  %s %s", termtext.Line(d.Path), what,
		w.Paint("32", fmt.Sprintf("+%d", add)), w.Paint("31", fmt.Sprintf("−%d", del)))
}

// argPath is the "path" argument of a call as the model sent it ("" when there is none).
func argPath(args json.RawMessage) string {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(args, &a) != nil {
		return ""
	}
	return strings.TrimSpace(a.Path)
}
