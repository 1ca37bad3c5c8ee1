package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools/sandbox"
)

// TestCommandChangesNeedingReviewArriveAsFileReviews drives a command that writes a git hook
// (.husky/pre-commit) and an ordinary file, through the real rpc, the real policy and bubblewrap,
// in every approval mode that runs commands: the ordinary file applies without a question; the
// hook comes to the editor as a file review (kind "edit", with its hunks and diff, named as the
// command's) even in yolo. Accepted, it is written, is part of the turn's changes and turn/undo
// removes it; rejected, it is not written; the model is told either way.
func TestCommandChangesNeedingReviewArriveAsFileReviews(t *testing.T) {
	env := newEnv(t, map[string]string{"a.txt": "a\n"})
	if sb, sbErr := env.srv.rt.Sandbox(); sb == nil || sb.Mode() != sandbox.ModeBwrap {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no bubblewrap sandbox in CI: %v", sbErr)
		}
		t.Skipf("BUBBLEWRAP UNAVAILABLE (no copy-on-write layer), not tested: %v", sbErr)
	}
	ed := env.editor(true)
	s := ed.newSession()
	seen := map[string]bool{}
	hook := filepath.Join(env.ws, ".husky", "pre-commit")
	for _, mode := range []string{"yolo", "auto-edit", "ask"} {
		accept := mode != "auto-edit"
		ed.mustCall(rpc.MethodSessionSetMode, rpc.SessionSetModeParams{SessionID: s, ApprovalMode: mode}, nil)
		os.RemoveAll(filepath.Join(env.ws, ".husky"))
		// A computed name: the command classifier does not see the hook (yolo runs the command
		// without a question); what the command wrote is what is reviewed.
		env.ollama.Enqueue(bashCall(`d=.hus; mkdir -p ${d}ky && printf '#!/bin/sh\necho `+mode+`\n' > ${d}ky/pre-commit && echo `+mode+` > ordinary-`+mode+`.txt`),
			ollamatest.Text("done"))
		turn := ed.prompt(s, "set up the hook")
		var file rpc.ReviewRequestedParams
		for file.ReviewID == "" {
			r := ed.nextReview(seen)
			switch r.Kind {
			case "command": // the command itself, where the mode asks for it
				if mode == "yolo" {
					t.Fatalf("yolo asked about the command: %+v", r)
				}
				ed.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: r.ReviewID, Decision: rpc.Decision{Type: "accept"}}, nil)
			case "edit":
				file = r
			default:
				t.Fatalf("%s: unexpected review %+v", mode, r)
			}
		}
		if got := readWS(t, env, "ordinary-"+mode+".txt"); got != mode+"\n" {
			t.Errorf("%s: the ordinary file was not applied before the review: %q", mode, got)
		}
		if _, err := os.Lstat(hook); err == nil {
			t.Fatalf("%s: the hook reached the workspace before the review was decided", mode)
		}
		f := file.File
		if f == nil || f.Path != ".husky/pre-commit" || !f.Created || len(f.Hunks) != 1 ||
			!strings.Contains(strings.Join(f.Hunks[0].Added, "\n"), "echo "+mode) || !strings.Contains(f.UnifiedDiff, "+echo "+mode) {
			t.Fatalf("%s: the review is not the hook's file change: %+v", mode, f)
		}
		if file.Tool != "bash" || !strings.HasPrefix(file.Label, ".husky/pre-commit, from the command `d=.hus; mkdir") ||
			!strings.Contains(file.Why, "the command `d=.hus; mkdir") || len(file.Scopes) != 0 {
			t.Errorf("%s: the review does not say it is the command's, asking in every mode: tool %q label %q why %q scopes %+v",
				mode, file.Tool, file.Label, file.Why, file.Scopes)
		}
		d := rpc.Decision{Type: "reject", Reason: "not my hook"}
		if accept {
			d = rpc.Decision{Type: "accept"}
		}
		ed.mustCall(rpc.MethodReviewDecide, rpc.ReviewDecideParams{ReviewID: file.ReviewID, Decision: d}, nil)
		if end := ed.turnEndOf(turn); end.Reason != "done" {
			t.Fatalf("%s: turn end = %+v", mode, end)
		}
		res := env.toolResults()
		told := "Review of the created .husky/pre-commit: accepted by the user and written"
		if !accept {
			told = "Review of the created .husky/pre-commit: NOT applied: the user rejected it"
		}
		if !strings.Contains(res[len(res)-1], told) {
			t.Errorf("%s: the model was not told %q:\n%s", mode, told, res[len(res)-1])
		}
		_, err := os.Lstat(hook)
		if written := err == nil; written != accept {
			t.Fatalf("%s: the hook written: %v, want %v", mode, written, accept)
		}
		if !accept {
			continue
		}
		if got := readWS(t, env, ".husky/pre-commit"); got != "#!/bin/sh\necho "+mode+"\n" {
			t.Errorf("%s: the hook = %q", mode, got)
		}
		ch := changes(t, ed, s, turn)
		if c := fileOf(t, ch, ".husky/pre-commit"); c.Status != "created" {
			t.Errorf("%s: the accepted hook in turn/changes: %+v", mode, c)
		}
		var undo rpc.TurnUndoResult
		ed.mustCall(rpc.MethodTurnUndo, rpc.TurnUndoParams{SessionID: s, TurnID: turn}, &undo)
		if _, err := os.Lstat(hook); err == nil {
			t.Errorf("%s: turn/undo left the hook: %+v", mode, undo)
		}
	}

	// Nobody to ask (an editor that cannot review): the hook is not written, and the model is
	// told why.
	plain := env.editor(false)
	s2 := plain.newSession()
	plain.mustCall(rpc.MethodSessionSetMode, rpc.SessionSetModeParams{SessionID: s2, ApprovalMode: "yolo"}, nil)
	os.RemoveAll(filepath.Join(env.ws, ".husky"))
	env.ollama.Enqueue(bashCall(`d=.hus; mkdir -p ${d}ky && echo planted > ${d}ky/pre-commit`), ollamatest.Text("done"))
	turn := plain.prompt(s2, "set up the hook")
	if end := plain.turnEndOf(turn); end.Reason != "done" {
		t.Fatalf("no reviewer: turn end = %+v\n%s", end, plain.dump())
	}
	if _, err := os.Lstat(hook); err == nil {
		t.Error("no reviewer: the hook reached the workspace")
	}
	if res := env.toolResults(); !strings.Contains(res[len(res)-1], "NOT applied: no one could review it") {
		t.Errorf("no reviewer: the model was not told:\n%s", res[len(res)-1])
	}

	// The audit log has an entry of its own for each review of the hook: who decided, the file,
	// applied or not, and when — in the order they were decided.
	recs, err := env.srv.rt.Store().ReadAudit(time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if r.FollowUp == nil || (r.Session != s && r.Session != s2) {
			continue
		}
		if r.FollowUp.Path != hook || r.Tool != "bash" || r.Time.IsZero() {
			t.Errorf("the audit record of a review of the hook: %+v %+v", r, r.FollowUp)
		}
		got = append(got, fmt.Sprintf("%s by %s applied %v", r.Decision, r.By, r.FollowUp.Applied))
		if r.Decision == store.DecisionRejected && !strings.Contains(r.Reason, "not my hook") &&
			!strings.Contains(r.Reason, "no editor that can review changes is attached") {
			t.Errorf("a rejection's reason in the audit log: %q", r.Reason)
		}
	}
	want := []string{
		"allowed by user applied true",        // yolo
		"rejected by user applied false",      // auto-edit: "not my hook"
		"allowed by user applied true",        // ask
		"rejected by no editor applied false", // nobody to ask
	}
	if !slices.Equal(got, want) {
		t.Errorf("the audit log's records of the hook's reviews:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
