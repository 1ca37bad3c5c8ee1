package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentd/agentd/tools"
)

// followUps puts the changes a call proposed after it ran (tools.FollowUp: what a command
// changed that needs review) to the gate, each like a file change, applies those allowed and
// returns the text that tells the model what became of each, in order. Each question goes up
// once the previous one is up (GateRequest.Posted) or decided, so an editor shows them
// together. With no gate, nothing is applied: unlike a call, a follow-up is never allowed by
// default (fail closed).
func (k *Kernel) followUps(ctx context.Context, call *tools.Call, fus []tools.FollowUp) string {
	texts := make([]string, len(fus))
	var wg sync.WaitGroup
	for i := range fus {
		up := make(chan struct{})
		posted := sync.OnceFunc(func() { close(up) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer posted()
			texts[i] = k.followUp(ctx, call, &fus[i], posted)
		}()
		select {
		case <-up:
		case <-ctx.Done():
		}
	}
	wg.Wait()
	return strings.Join(texts, "")
}

// followUp gates and applies one follow-up and says what became of it.
func (k *Kernel) followUp(ctx context.Context, call *tools.Call, fu *tools.FollowUp, posted func()) string {
	// say tells the model what became of the change, and the front ends (FollowUpEnd).
	var applied bool
	var typ tools.ResultType
	say := func(format string, args ...any) string {
		text := "[" + fu.Subject + ": " + fmt.Sprintf(format, args...) + "]\n"
		k.Emit(FollowUpEnd{CallID: call.ID, Subject: fu.Subject, Applied: applied, Type: typ, Text: text})
		return text
	}
	if k.cfg.Gate == nil {
		typ = tools.ApprovalUnavailable
		return say("NOT applied: nobody can review changes here, and it needs a review")
	}
	fc := &tools.Call{ID: call.ID, Name: call.Name, Raw: call.Raw, Args: call.Args, Preview: fu.Preview}
	d, err := k.cfg.Gate(ctx, GateRequest{Tool: followUpTool{name: call.Name, fu: fu}, Call: fc, Label: fu.Label,
		Preview: fu.Preview, Posted: posted, FollowUp: true, Subject: fu.Subject})
	switch {
	case ctx.Err() != nil:
		return say("NOT applied: %s", strings.TrimSuffix(cancelText(ctx), "."))
	case err != nil:
		return say("NOT applied: the user's review could not be obtained (%v)", err)
	case !d.Allow:
		typ = cmp.Or(d.Type, tools.RejectedByUser)
		why := "the user rejected it"
		switch d.Type {
		case tools.PermissionDenied:
			why = "it is not permitted"
		case tools.ApprovalUnavailable:
			why = "no one could review it"
		}
		if d.Reason != "" {
			why += " (" + d.Reason + ")"
		}
		return say("NOT applied: %s. Do not make this change another way; if it is needed, tell the user", why)
	}
	text, err := fu.Apply(ctx, d.Approval)
	if err != nil {
		msg := err.Error()
		var te *tools.Error
		if errors.As(err, &te) {
			msg = te.Message
		}
		return say("the user accepted it, but it was NOT applied: %s", msg)
	}
	applied = true
	return say("%s", text)
}

// followUpTool is the tool a gate sees for a follow-up: the call's name, and the change's
// permission for the policy. It never runs.
type followUpTool struct {
	name string
	fu   *tools.FollowUp
}

var _ tools.PermissionMetadata = followUpTool{}

func (t followUpTool) Name() string                            { return t.name }
func (t followUpTool) Description() string                     { return t.fu.Label }
func (t followUpTool) Spec() *tools.Spec                       { return followUpSpec }
func (t followUpTool) Permission(*tools.Call) tools.Permission { return t.fu.Permission }
func (t followUpTool) Execute(context.Context, *tools.Call) (tools.Output, error) {
	return tools.Output{}, errors.New("a follow-up change is applied by the kernel, not executed")
}

var followUpSpec = tools.NewSpec[struct{}]()
