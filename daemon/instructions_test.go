package daemon

import (
	"github.com/agentd/agentd/harness"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

const instructionsMarker = "Run make check before you answer."

// TestProjectInstructions drives sessions as an editor does: AGENTS.md is read only in a trusted
// workspace, capped, placed after the static system prompt (at the start of the first user
// message), and reported in the session's info.
func TestProjectInstructions(t *testing.T) {
	long := instructionsMarker + "\n" + strings.Repeat("Keep functions short and name things well.\n", 400) + "TAIL-PAST-THE-CAP\n"
	outside := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(outside, []byte(instructionsMarker+" (from outside the workspace)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		content   string // "" : a symlink to a file outside the workspace
		trusted   bool
		want      *rpc.InstructionsInfo
		untrusted bool // the file exists but was ignored for want of trust
	}{
		{name: "trusted", content: instructionsMarker + "\n", trusted: true,
			want: &rpc.InstructionsInfo{Path: "AGENTS.md", Bytes: int64(len(instructionsMarker) + 1)}},
		{name: "untrusted", content: instructionsMarker + "\n", untrusted: true},
		{name: "capped", content: long, trusted: true,
			want: &rpc.InstructionsInfo{Path: "AGENTS.md", Bytes: int64(len(long)), Truncated: true}},
		{name: "link out of the workspace", trusted: true},
	}
	var systems []string
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"main.go": "package main\n"}
			if tc.content != "" {
				files["AGENTS.md"] = tc.content
			}
			state := t.TempDir()
			env := newEnvWith(t, files, func(o *harness.Options) { o.Policy.StateDir = state })
			if tc.content == "" {
				if err := os.Symlink(outside, filepath.Join(env.ws, "AGENTS.md")); err != nil {
					t.Fatal(err)
				}
			}
			if tc.trusted {
				if err := os.WriteFile(filepath.Join(state, "trusted-workspaces"), []byte(env.ws+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			ed := env.editor(true)
			var res rpc.SessionNewResult
			ed.mustCall(rpc.MethodSessionNew, rpc.SessionNewParams{}, &res)
			got := res.Session.Instructions
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("session info instructions = %+v, want %+v", got, tc.want)
			}

			env.ollama.Enqueue(ollamatest.Text("ok"))
			ed.prompt(res.Session.SessionID, "fix it")
			if u := ed.turnEnd(); u.Type != rpc.UpdateTurnCompleted || u.Reason != "done" {
				t.Fatalf("turn ended with %+v", u)
			}
			chats := env.ollama.Chats()
			if len(chats) == 0 {
				t.Fatal("no chat request")
			}
			msgs := chats[len(chats)-1].Request.Messages
			if len(msgs) < 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
				t.Fatalf("request messages %+v", msgs)
			}
			sys, user := msgs[0].Content, msgs[1].Content
			systems = append(systems, sys)
			if strings.Contains(sys, instructionsMarker) || strings.Contains(sys, env.ws) {
				t.Errorf("the system prompt holds workspace facts or instructions:\n%s", sys)
			}
			if !strings.HasPrefix(user, "<context>\nWorkspace: "+env.ws+"\n") || !strings.HasSuffix(user, "</context>\n\nfix it") {
				t.Errorf("the first user message does not carry the context block:\n%s", user)
			}
			if read := strings.Contains(user, instructionsMarker); read != (tc.want != nil) {
				t.Errorf("instructions in the prompt: %v, want %v:\n%s", read, tc.want != nil, user)
			}
			if tc.want != nil && tc.want.Truncated {
				if strings.Contains(user, "TAIL-PAST-THE-CAP") || !strings.Contains(user, "[AGENTS.md is ") {
					t.Errorf("a long AGENTS.md is not capped with a note:\n%s", user[len(user)-300:])
				}
				if len(user) > agent.MaxInstructionsBytes+1024 {
					t.Errorf("the first user message is %d bytes, over the cap", len(user))
				}
			}
			env.srv.mu.Lock()
			ls := env.srv.sessions[res.Session.SessionID]
			env.srv.mu.Unlock()
			if ls == nil {
				t.Fatal("session not found")
			}
			if _, untrusted := ls.h.Instructions(); untrusted != tc.untrusted {
				t.Errorf("untrusted = %v, want %v", untrusted, tc.untrusted)
			}
		})
	}
	for _, s := range systems[1:] {
		if s != systems[0] {
			t.Errorf("the system prompt differs between workspaces:\n%s\n---\n%s", systems[0], s)
		}
	}
}
