package harness

import (
	"testing"
	"time"

	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/ollama/ollamatest"
)

// TestAuditSaysWhoDecided: the gate's Decision carries who decided, and the audit log records it:
// the policy (yolo, or nobody to ask), the user (an Answer without By), or what the front end's
// Asker said (an editor's "timeout", "disconnect", …).
func TestAuditSaysWhoDecided(t *testing.T) {
	for _, tc := range []struct {
		name, mode string
		ask        Asker
		decision   string
		by         string
	}{
		{"policy allows", "yolo", nil, store.DecisionAllowed, store.ByPolicy},
		{"nobody to ask", "auto-edit", nil, store.DecisionRejected, store.ByPolicy},
		{"the user accepts", "ask", &recordingAsker{ans: Answer{Decision: AnswerAccept}}, store.DecisionAllowed, store.ByUser},
		{"the asker says who", "ask", &recordingAsker{ans: Answer{Decision: AnswerReject, By: "timeout"}}, store.DecisionRejected, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newMCPFixture(t)
			f.fake.Enqueue(ollamatest.Calls(ollamatest.Call("inventory__stock", `{"sku":"X-1"}`)))
			f.fake.Enqueue(ollamatest.Text("done"))
			_, _, h := f.turn(t, tc.mode, tc.ask)
			recs, err := f.rt.Store().ReadAudit(time.Now().UTC())
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, r := range recs {
				if r.Session != h.ID() || r.Tool != "inventory__stock" {
					continue
				}
				found = true
				if r.Decision != tc.decision || r.By != tc.by {
					t.Errorf("audit: decision %q by %q, want %q by %q", r.Decision, r.By, tc.decision, tc.by)
				}
			}
			if !found {
				t.Errorf("no audit record of the call in session %s: %+v", h.ID(), recs)
			}
		})
	}
}
