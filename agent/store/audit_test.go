package store

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/preview"
	"github.com/agentd/agentd/tools"
)

// allAudit reads every record of the audit log (whatever the day).
func allAudit(t *testing.T, st *Store) map[string]AuditRecord {
	t.Helper()
	out := map[string]AuditRecord{}
	for _, r := range auditLines(t, st) {
		out[r.Session+"/"+r.CallID] = r
	}
	return out
}

func TestAuditThroughKernelWithGate(t *testing.T) {
	e := newCPEnv(t)
	st := e.st
	a := st.Audit("s-audit")
	gate := func(ctx context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		switch tools.ArgsOf[writeArgs](req.Call).Path {
		case "policy.txt":
			return agent.GateDecision{Type: tools.PermissionDenied, Reason: "protected by rule 3"}, nil
		case "user.txt":
			return agent.GateDecision{Reason: "no thanks", By: ByUser}, nil
		case "grant.txt":
			return agent.GateDecision{Allow: true, By: ByGrant}, nil
		case "broken.txt":
			return agent.GateDecision{}, errors.New("editor went away")
		}
		return agent.GateDecision{Allow: true}, nil
	}
	reg, _ := tools.NewRegistry(&writeTool{ws: e.ws})
	k := agent.NewKernel(agent.Config{Registry: reg, Gate: a.WrapGate(gate)}, a.Observe)
	k.Emit(agent.TurnStart{TurnID: "t1", Prompt: "go"})
	spaced := json.RawMessage(`{"path": "ok.txt", "content": "hello"}`)
	k.RunBatch(context.Background(), []agent.ToolCall{
		{ID: "c-ok", Name: "write", Arguments: spaced},
		toolCall("c-policy", "write", writeArgs{Path: "policy.txt", Content: "x"}),
		toolCall("c-user", "write", writeArgs{Path: "user.txt", Content: "x"}),
		toolCall("c-grant", "write", writeArgs{Path: "grant.txt", Content: "x"}),
		toolCall("c-broken", "write", writeArgs{Path: "broken.txt", Content: "x"}),
		{ID: "c-invalid", Name: "write", Arguments: json.RawMessage(`{"path": 1, "bogus": true`)},
		toolCall("c-unknown", "nosuch", map[string]int{"n": 1}),
	}, nil)
	k.Emit(agent.TurnEnd{TurnID: "t1", Reason: "done"})

	// A session without a gate.
	b := st.Audit("s-nogate")
	if b.WrapGate(nil) != nil {
		t.Fatal("WrapGate(nil) must stay nil")
	}
	k2 := agent.NewKernel(agent.Config{Registry: reg, Gate: b.WrapGate(nil)}, b.Observe)
	k2.Emit(agent.TurnStart{TurnID: "t7"})
	k2.RunBatch(context.Background(), []agent.ToolCall{toolCall("c-free", "write", writeArgs{Path: "free.txt", Content: "x"})}, nil)

	recs := allAudit(t, st)
	if len(recs) != 8 {
		t.Fatalf("%d records: %v", len(recs), recs)
	}
	type want struct {
		decision, by, reason string
		result               tools.ResultType
	}
	for key, w := range map[string]want{
		"s-audit/c-ok":      {DecisionAllowed, ByGate, "", tools.OK},
		"s-audit/c-policy":  {DecisionRejected, ByPolicy, "protected by rule 3", tools.PermissionDenied},
		"s-audit/c-user":    {DecisionRejected, ByUser, "no thanks", tools.RejectedByUser},
		"s-audit/c-grant":   {DecisionAllowed, ByGrant, "", tools.OK},
		"s-audit/c-broken":  {DecisionGateFailed, ByGate, "editor went away", tools.RejectedByUser},
		"s-audit/c-invalid": {DecisionNotAsked, ByNoGate, "", tools.InvalidArgs},
		"s-audit/c-unknown": {DecisionNotAsked, ByNoGate, "", tools.NotFound},
		"s-nogate/c-free":   {DecisionNotAsked, ByNoGate, "", tools.OK},
	} {
		r, ok := recs[key]
		if !ok {
			t.Errorf("%s: no record", key)
			continue
		}
		by := w.by
		if key == "s-audit/c-broken" {
			by = "" // the gate failed before anyone decided
		}
		if r.Decision != w.decision || r.By != by || r.Reason != w.reason || r.Result != w.result {
			t.Errorf("%s: decision %q by %q reason %q result %q; want %+v", key, r.Decision, r.By, r.Reason, r.Result, w)
		}
		if r.Duration <= 0 || r.Time.IsZero() || r.ArgsSHA256 == "" {
			t.Errorf("%s: duration %v time %v sha %q", key, r.Duration, r.Time, r.ArgsSHA256)
		}
	}
	ok := recs["s-audit/c-ok"]
	if ok.Turn != "t1" || ok.Tool != "write" || ok.IsError {
		t.Errorf("ok record %+v", ok)
	}
	var args map[string]string
	if json.Unmarshal(ok.Args, &args) != nil || args["path"] != "ok.txt" || args["content"] != "hello" {
		t.Errorf("args %s", ok.Args)
	}
	sum := sha256.Sum256(spaced)
	if ok.ArgsBytes != len(spaced) || ok.ArgsSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("args size/hash cover the exact bytes sent: %d %s", ok.ArgsBytes, ok.ArgsSHA256)
	}
	if ok.ResultBytes != len("wrote ok.txt") {
		t.Errorf("result bytes %d", ok.ResultBytes)
	}
	if ok.GateWait <= 0 {
		t.Errorf("gate wait %v", ok.GateWait)
	}
	if inv := recs["s-audit/c-invalid"]; inv.Args != nil || inv.ArgsText != `{"path": 1, "bogus": true` || !inv.IsError {
		t.Errorf("invalid args record %+v", inv)
	}
	if free := recs["s-nogate/c-free"]; free.Turn != "t7" || free.Session != "s-nogate" {
		t.Errorf("no-gate record %+v", free)
	}
}

func TestAuditCutsHugeArguments(t *testing.T) {
	st, _ := newTestStore(t)
	a := st.Audit("s-big")
	args, _ := json.Marshal(map[string]string{"content": strings.Repeat("é", 40000)}) // 80 KB
	a.Observe(agent.ToolStart{CallID: "c1", Tool: "write", Args: args})
	a.Observe(agent.ToolEnd{CallID: "c1", Tool: "write", Result: tools.Result{Type: tools.OK, Elapsed: time.Millisecond}})
	r := allAudit(t, st)["s-big/c1"]
	if !r.ArgsTruncated || r.Args != nil || len(r.ArgsText) > maxAuditArgs || r.ArgsBytes != len(args) {
		t.Errorf("record: truncated %v, text %d bytes, size %d", r.ArgsTruncated, len(r.ArgsText), r.ArgsBytes)
	}
	if !strings.HasPrefix(string(args), r.ArgsText) || strings.ContainsRune(r.ArgsText, '\uFFFD') {
		t.Error("the cut text is not a clean prefix")
	}
}

// Concurrent sessions append to one audit file: every line is whole.
func TestAuditConcurrentAppends(t *testing.T) {
	st, _ := newTestStore(t)
	const sessions, calls = 4, 150
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := st.Audit(fmt.Sprint("s-", s))
			for i := range calls {
				id := fmt.Sprint("c", i)
				a.Observe(agent.ToolStart{CallID: id, Tool: "bash", Args: json.RawMessage(`{"command":"` + strings.Repeat("x", i*20) + `"}`)})
				a.Observe(agent.ToolEnd{CallID: id, Tool: "bash", Result: tools.Result{Type: tools.OK,
					Content: []tools.Block{{Type: "text", Text: "out"}}}})
			}
		}()
	}
	wg.Wait()
	files, _ := filepath.Glob(filepath.Join(st.Dir(), auditDir, "*.jsonl"))
	lines := 0
	for _, f := range files {
		fh, _ := os.Open(f)
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r AuditRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("damaged audit line: %v", err)
			}
			lines++
		}
		fh.Close()
	}
	if lines != sessions*calls {
		t.Errorf("%d lines, want %d", lines, sessions*calls)
	}
	if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
		t.Errorf("audit file mode %v", fi.Mode())
	}
}

// auditLines reads every line of the audit log in file order (whatever the day).
func auditLines(t *testing.T, st *Store) []AuditRecord {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(st.Dir(), auditDir, "*.jsonl"))
	var out []AuditRecord
	for _, f := range files {
		day, err := time.Parse(time.DateOnly, strings.TrimSuffix(filepath.Base(f), ".jsonl"))
		if err != nil {
			t.Fatalf("audit file name %s", f)
		}
		recs, err := st.ReadAudit(day)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

// proposingTool is a command that changed files it may not apply on its own: it proposes
// them as follow-ups (tools.FollowUp), each written by its Apply unless fail says why not.
type proposingTool struct {
	fus []tools.FollowUp
}

func (p *proposingTool) Name() string        { return "bash" }
func (p *proposingTool) Description() string { return "run a command" }
func (p *proposingTool) Spec() *tools.Spec   { return bashSpec }
func (p *proposingTool) Execute(context.Context, *tools.Call) (tools.Output, error) {
	return tools.Output{Text: "ran\n", FollowUps: p.fus}, nil
}

var bashSpec = tools.NewSpec[struct {
	Command string `json:"command"`
}]()

// TestAuditRecordsEachFollowUp: each change a command proposed for review after it ran gets an
// audit record of its own — who decided, which file, whether it was applied, and what the user
// accepted (the whole change, some hunks, their own edited version) — beside the call's record,
// which keeps the decision about the command itself. A reader can tell that the command's
// .husky/pre-commit was accepted by the user, and when.
func TestAuditRecordsEachFollowUp(t *testing.T) {
	st, _ := newTestStore(t)
	a := st.Audit("s-fu")
	fu := func(path, old, new string, fail error) tools.FollowUp {
		d := preview.ComputeFile(path, old, old != "", new)
		return tools.FollowUp{Subject: "Review of " + path, Label: path + ", from the command `npm i`",
			Preview:    &tools.Preview{Diff: d},
			Permission: tools.Permission{Access: tools.AccessWrite, Paths: []string{"/ws/" + path}, Protected: true},
			Apply: func(context.Context, *tools.Approval) (string, error) {
				if fail != nil {
					return "", fail
				}
				return "accepted by the user and written", nil
			}}
	}
	two := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	cmd := &proposingTool{fus: []tools.FollowUp{
		fu(".husky/pre-commit", "", "#!/bin/sh\nnpm test\n", nil),
		fu(".envrc", two, strings.Replace(strings.Replace(two, "a\n", "A\n", 1), "j\n", "J\n", 1), nil),
		fu(".vscode/settings.json", "{}\n", "{\"x\": 1}\n", nil),
		fu(".npmrc", "", "registry=http://evil\n", nil),
		fu("package.json", "{}\n", "{\"scripts\": {}}\n", &tools.Error{Type: tools.Stale, Message: "the file changed since the review began"}),
	}}
	if n := len(cmd.fus[1].Preview.Diff.Hunks); n != 2 {
		t.Fatalf("the .envrc diff has %d hunks, want 2", n)
	}
	firstHunk := cmd.fus[1].Preview.Diff.Hunks[0].ID
	mine := "{\"x\": 2}\n"
	gate := func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		if !req.FollowUp {
			return agent.GateDecision{Allow: true, By: ByPolicy}, nil // the command itself
		}
		switch req.Subject {
		case "Review of .envrc":
			return agent.GateDecision{Allow: true, By: ByUser, Approval: &tools.Approval{Hunks: []string{firstHunk}}}, nil
		case "Review of .vscode/settings.json":
			return agent.GateDecision{Allow: true, By: ByUser, Approval: &tools.Approval{Content: &mine}}, nil
		case "Review of .npmrc":
			return agent.GateDecision{Type: tools.RejectedByUser, Reason: "not my registry", By: ByUser}, nil
		}
		return agent.GateDecision{Allow: true, By: ByUser}, nil
	}
	reg, _ := tools.NewRegistry(cmd)
	k := agent.NewKernel(agent.Config{Registry: reg, Gate: a.WrapGate(gate)}, a.Observe)
	k.Emit(agent.TurnStart{TurnID: "t1", Prompt: "install"})
	before := time.Now()
	k.RunBatch(context.Background(), []agent.ToolCall{toolCall("c1", "bash", map[string]string{"command": "npm i"})}, nil)
	k.Emit(agent.TurnEnd{TurnID: "t1", Reason: "done"})

	recs := auditLines(t, st)
	if len(recs) != 6 {
		t.Fatalf("%d records, want one per follow-up and the call's: %+v", len(recs), recs)
	}
	call := recs[len(recs)-1]
	if call.FollowUp != nil || call.CallID != "c1" || call.Decision != DecisionAllowed || call.By != ByPolicy || call.Result != tools.OK {
		t.Errorf("the call's record (written last) is not the decision about the command: %+v", call)
	}
	sum := sha256.Sum256([]byte(mine))
	type want struct {
		decision, by, reason string
		result               tools.ResultType
		isError              bool
		fu                   AuditFollowUp
	}
	wants := map[string]want{
		"Review of .husky/pre-commit": {DecisionAllowed, ByUser, "", tools.OK, false, AuditFollowUp{
			Path: "/ws/.husky/pre-commit", Applied: true, Accepted: AcceptedAll, Hunks: 1,
			Outcome: "[Review of .husky/pre-commit: accepted by the user and written]"}},
		"Review of .envrc": {DecisionAllowed, ByUser, "", tools.OK, false, AuditFollowUp{
			Path: "/ws/.envrc", Applied: true, Accepted: AcceptedPartial, AcceptedHunks: []string{firstHunk}, Hunks: 2,
			Outcome: "[Review of .envrc: accepted by the user and written]"}},
		"Review of .vscode/settings.json": {DecisionAllowed, ByUser, "", tools.OK, false, AuditFollowUp{
			Path: "/ws/.vscode/settings.json", Applied: true, Accepted: AcceptedEdited, Hunks: 1,
			ContentSHA256: hex.EncodeToString(sum[:]),
			Outcome:       "[Review of .vscode/settings.json: accepted by the user and written]"}},
		"Review of .npmrc": {DecisionRejected, ByUser, "not my registry", tools.RejectedByUser, false, AuditFollowUp{
			Path: "/ws/.npmrc", Hunks: 1,
			Outcome: "[Review of .npmrc: NOT applied: the user rejected it (not my registry). Do not make this change another way; if it is needed, tell the user]"}},
		"Review of package.json": {DecisionAllowed, ByUser, "", "", true, AuditFollowUp{
			Path: "/ws/package.json", Accepted: AcceptedAll, Hunks: 1,
			Outcome: "[Review of package.json: the user accepted it, but it was NOT applied: the file changed since the review began]"}},
	}
	for _, r := range recs[:len(recs)-1] {
		if r.FollowUp == nil {
			t.Errorf("a record before the call's is not a follow-up's: %+v", r)
			continue
		}
		w, ok := wants[r.FollowUp.Subject]
		if !ok {
			t.Errorf("unexpected follow-up record %+v", r.FollowUp)
			continue
		}
		delete(wants, r.FollowUp.Subject)
		w.fu.Subject = r.FollowUp.Subject
		if !reflect.DeepEqual(*r.FollowUp, w.fu) {
			t.Errorf("%s:\n got %+v\nwant %+v", w.fu.Subject, *r.FollowUp, w.fu)
		}
		if r.Decision != w.decision || r.By != w.by || r.Reason != w.reason || r.Result != w.result || r.IsError != w.isError {
			t.Errorf("%s: decision %q by %q reason %q result %q error %v; want %+v", w.fu.Subject, r.Decision, r.By, r.Reason, r.Result, r.IsError, w)
		}
		if r.Session != "s-fu" || r.Turn != "t1" || r.CallID != "c1" || r.Tool != "bash" ||
			string(r.Args) != `{"command":"npm i"}` || r.ArgsSHA256 != call.ArgsSHA256 {
			t.Errorf("%s: not tied to its call: %+v", w.fu.Subject, r)
		}
		if r.Time.Before(before.UTC().Truncate(time.Second)) || r.Time.After(call.Time) || r.GateWait <= 0 || r.Duration < r.GateWait {
			t.Errorf("%s: time %v (call ended %v), gate wait %v, duration %v", w.fu.Subject, r.Time, call.Time, r.GateWait, r.Duration)
		}
	}
	for s := range wants {
		t.Errorf("no record of %s", s)
	}

	// No gate: each follow-up is recorded as not asked, not applied.
	b := st.Audit("s-fu-nogate")
	k = agent.NewKernel(agent.Config{Registry: reg, Gate: b.WrapGate(nil)}, b.Observe)
	k.RunBatch(context.Background(), []agent.ToolCall{toolCall("c2", "bash", map[string]string{"command": "npm i"})}, nil)
	n := 0
	for _, r := range auditLines(t, st) {
		if r.Session != "s-fu-nogate" || r.FollowUp == nil {
			continue
		}
		n++
		if r.Decision != DecisionNotAsked || r.By != ByNoGate || r.FollowUp.Applied || r.Result != tools.ApprovalUnavailable ||
			!strings.Contains(r.FollowUp.Outcome, "NOT applied: nobody can review changes here") {
			t.Errorf("with no gate: %+v %+v", r, r.FollowUp)
		}
	}
	if n != len(cmd.fus) {
		t.Errorf("with no gate: %d follow-up records, want %d", n, len(cmd.fus))
	}
}
