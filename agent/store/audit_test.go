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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools"
)

// allAudit reads every record of the audit log (whatever the day).
func allAudit(t *testing.T, st *Store) map[string]AuditRecord {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(st.Dir(), auditDir, "*.jsonl"))
	out := map[string]AuditRecord{}
	for _, f := range files {
		day, err := time.Parse(time.DateOnly, strings.TrimSuffix(filepath.Base(f), ".jsonl"))
		if err != nil {
			t.Fatalf("audit file name %s", f)
		}
		recs, err := st.ReadAudit(day)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			out[r.Session+"/"+r.CallID] = r
		}
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
