package store_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
)

// Example wires a session the way the daemon does: the journal, checkpoints as kernel
// middleware, the audit log around the gate and on the event sink; then resumes the session and
// reverts its last turn.
func Example() {
	stateDir, _ := os.MkdirTemp("", "agentd-state") // the daemon: store.DefaultDir()
	defer os.RemoveAll(stateDir)
	wsDir, _ := os.MkdirTemp("", "agentd-ws")
	defer os.RemoveAll(wsDir)
	os.WriteFile(filepath.Join(wsDir, "main.go"), []byte("package main\n"), 0o644)

	st, err := store.Open(stateDir)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	ws, _ := fsafe.NewWorkspace(wsDir)
	defer ws.Close()
	queue := &tools.MutationQueue{} // the one given to fsafe.Options{Queue: …}

	// A new session: the journal is the session's agent.Journal.
	sf, err := st.Create(agent.SessionSettings{Workspace: ws.Roots()[0], Model: "qwen3:8b", ApprovalMode: "ask", NumCtx: 32768})
	if err != nil {
		log.Fatal(err)
	}
	cp, _ := st.Checkpoints(ws, sf.ID(), store.CheckpointOptions{Queue: queue})
	audit := st.Audit(sf.ID())
	policyGate := func(ctx context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		// By: ByUser after a prompt, ByGrant for a grant
		return agent.GateDecision{Allow: true, By: store.ByPolicy}, nil
	}
	sink := func(e agent.Event) {
		cp.Observe(e)    // TurnStart begins the turn's checkpoint
		audit.Observe(e) // ToolEnd writes the audit record
		// … then the editor connection
	}
	_ = agent.SessionConfig{
		ID:      sf.ID(),
		Journal: sf,
		Sink:    sink,
		Kernel: agent.Config{
			Gate:       audit.WrapGate(policyGate),
			Middleware: []agent.Middleware{cp.Middleware()},
			// Registry: …
		},
	}

	// What the loop and a write tool do during turn t1 (here by hand).
	sf.Append(agent.Entry{Type: agent.EntryTurnStart, TurnID: "t1", Prompt: "add a comment"})
	sink(agent.TurnStart{TurnID: "t1"})
	main := filepath.Join(ws.Roots()[0], "main.go")
	cp.BeforeWrite(main)
	os.WriteFile(main, []byte("package main // edited\n"), 0o644)
	cp.AfterWrite(main)
	sf.Append(agent.Entry{Type: agent.EntryTurnEnd, TurnID: "t1", Reason: "done"})
	sf.Sync() // at the turn boundary
	sf.Close()

	// Later (after a restart): list, resume, revert the last turn that changed files.
	list, _ := st.List()
	fmt.Println("sessions:", len(list), "turns:", list[0].Turns, "last prompt:", list[0].LastPrompt)
	sf, replayed, err := st.Resume(list[0].ID)
	if err != nil {
		log.Fatal(err)
	}
	defer sf.Close()
	fmt.Println("resumed turns:", len(replayed.Turns)) // SessionConfig.Turns = len(replayed.Turns)
	turns, _ := cp.Turns()
	res, err := cp.Revert(turns[0].ID)
	fmt.Println("restored:", res.Restored, "skipped:", len(res.Skipped), err)
	b, _ := os.ReadFile(main)
	fmt.Printf("main.go: %q\n", b)
	_, err = cp.Revert(turns[0].ID)
	fmt.Println("again:", errors.Is(err, store.ErrAlreadyReverted))
	// Output:
	// sessions: 1 turns: 1 last prompt: add a comment
	// resumed turns: 1
	// restored: [main.go] skipped: 0 <nil>
	// main.go: "package main\n"
	// again: true
}
