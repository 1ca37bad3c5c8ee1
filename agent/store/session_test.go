package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
)

// allEntries is a session that uses every entry type and every field.
func allEntries(id string) []agent.Entry {
	settings := &agent.SessionSettings{ID: id, Workspace: "/home/u/proj", Model: "qwen3:8b",
		ApprovalMode: "ask", NumCtx: 32768, Created: at(0)}
	call := agent.ToolCall{ID: "call_1", Name: "edit", Arguments: json.RawMessage(`{"path":"a.go","old":"x","new":"y"}`)}
	return []agent.Entry{
		{Type: agent.EntrySession, Time: at(0), Session: settings},
		{Type: agent.EntryMessage, Time: at(1), Message: &agent.Message{Role: agent.RoleSystem, Content: "You are agentd."}},
		{Type: agent.EntryTurnStart, Time: at(2), TurnID: "t1", Prompt: "fix the bug"},
		{Type: agent.EntryMessage, Time: at(2), TurnID: "t1", Message: &agent.Message{Role: agent.RoleUser,
			Content: "fix the bug", Images: [][]byte{{0x89, 'P', 'N', 'G', 0, 1, 2}}}},
		{Type: agent.EntryUsage, Time: at(3), TurnID: "t1", Usage: &agent.Usage{PromptTokens: 100, OutputTokens: 20,
			PromptDuration: time.Second, OutputDuration: 2 * time.Second, LoadDuration: 3, TotalDuration: 4}},
		{Type: agent.EntryMessage, Time: at(3), TurnID: "t1", Message: &agent.Message{Role: agent.RoleAssistant,
			Content: "Editing.\nLine two \"quoted\"", Thinking: "hmm", ToolCalls: []agent.ToolCall{call}}},
		{Type: agent.EntryMessage, Time: at(4), TurnID: "t1", Message: &agent.Message{Role: agent.RoleTool,
			ToolCallID: "call_1", ToolName: "edit", Content: "ok"}},
		{Type: agent.EntryTurnEnd, Time: at(5), TurnID: "t1", Reason: "done"},
		{Type: agent.EntryTitle, Time: at(6), Title: "Fix the bug"},
		{Type: agent.EntryMode, Time: at(7), Mode: "auto-edit"},
		{Type: agent.EntryTurnStart, Time: at(8), TurnID: "t2", Prompt: "now the tests"},
		{Type: agent.EntryCompaction, Time: at(9), TurnID: "t2", Summary: "we fixed a bug", Messages: []agent.Message{
			{Role: agent.RoleSystem, Content: "You are agentd."},
			{Role: agent.RoleUser, Content: "Summary: we fixed a bug"}}},
		{Type: agent.EntryMessage, Time: at(10), TurnID: "t2", Message: &agent.Message{Role: agent.RoleUser, Content: "now the tests"}},
		{Type: agent.EntryTurnEnd, Time: at(11), TurnID: "t2", Reason: "error", Error: "server_down: connection refused"},
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeSession creates a session and appends entries (the first must be the session entry,
// which Create writes itself).
func writeSession(t *testing.T, st *Store, entries []agent.Entry) *SessionFile {
	t.Helper()
	sf, err := st.Create(*entries[0].Session)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries[1:] {
		if err := sf.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := sf.Sync(); err != nil {
		t.Fatal(err)
	}
	return sf
}

func TestRoundTripEveryEntryType(t *testing.T) {
	st, _ := newTestStore(t)
	want := allEntries("s-rt")
	sf := writeSession(t, st, want)
	if err := sf.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := st.Load("s-rt")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("loaded %d entries, want %d", len(got), len(want))
	}
	// The session entry's time is Create's own; everything else must come back byte for byte.
	if got[0].Type != agent.EntrySession || jsonOf(t, got[0].Session) != jsonOf(t, want[0].Session) {
		t.Errorf("session entry: got %s", jsonOf(t, got[0]))
	}
	for i := 1; i < len(want); i++ {
		if g, w := jsonOf(t, got[i]), jsonOf(t, want[i]); g != w {
			t.Errorf("entry %d:\n got %s\nwant %s", i, g, w)
		}
	}
	// One entry per line.
	raw, _ := os.ReadFile(st.journalPath("s-rt"))
	if n := bytes.Count(raw, []byte{'\n'}); n != len(want) {
		t.Errorf("%d lines for %d entries", n, len(want))
	}

	r := agent.Replay(got)
	if r.Settings.ID != "s-rt" || r.Settings.Model != "qwen3:8b" || r.Title != "Fix the bug" || r.Mode != "auto-edit" {
		t.Errorf("replay: %+v", r)
	}
	if len(r.Turns) != 2 || r.Turns[0].Reason != "done" || r.Turns[1].Reason != "error" || r.Turns[1].Prompt != "now the tests" {
		t.Errorf("turns: %+v", r.Turns)
	}
	wantHist := []agent.Message{want[11].Messages[0], want[11].Messages[1], *want[12].Message}
	if jsonOf(t, r.History) != jsonOf(t, wantHist) {
		t.Errorf("history after compaction:\n got %s\nwant %s", jsonOf(t, r.History), jsonOf(t, wantHist))
	}
	if !r.Updated.Equal(at(11)) {
		t.Errorf("updated %v", r.Updated)
	}
}

func TestReplayRebuildsHistoryWithoutCompaction(t *testing.T) {
	st, _ := newTestStore(t)
	all := allEntries("s-h")
	sf := writeSession(t, st, all[:10]) // through turn t1, title and mode
	sf.Close()
	got, err := st.Load("s-h")
	if err != nil {
		t.Fatal(err)
	}
	r := agent.Replay(got)
	var want []agent.Message
	for _, e := range all[:10] {
		if e.Message != nil {
			want = append(want, *e.Message)
		}
	}
	if jsonOf(t, r.History) != jsonOf(t, want) {
		t.Errorf("history:\n got %s\nwant %s", jsonOf(t, r.History), jsonOf(t, want))
	}
}

func TestAppendStampsTimeAndKeepsInvalidArguments(t *testing.T) {
	st, _ := newTestStore(t)
	sf, err := st.Create(agent.SessionSettings{ID: "s-args"})
	if err != nil {
		t.Fatal(err)
	}
	bad := agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
		{ID: "c1", Name: "edit", Arguments: json.RawMessage(`{"path": "a.go", "old": "x`)}, // cut by the model
		{ID: "c2", Name: "ls", Arguments: json.RawMessage(`{}`)},
		{ID: "c3", Name: "ls", Arguments: json.RawMessage{}},
	}}
	before := time.Now().Add(-time.Second)
	if err := sf.Append(agent.Entry{Type: agent.EntryMessage, TurnID: "t1", Message: &bad}); err != nil {
		t.Fatalf("an entry with broken tool arguments must still be stored: %v", err)
	}
	if string(bad.ToolCalls[0].Arguments) != `{"path": "a.go", "old": "x` {
		t.Error("Append modified the caller's message")
	}
	sf.Close()
	got, _ := st.Load("s-args")
	if len(got) != 2 {
		t.Fatalf("%d entries", len(got))
	}
	m := got[1].Message
	var s string
	if err := json.Unmarshal(m.ToolCalls[0].Arguments, &s); err != nil || s != `{"path": "a.go", "old": "x` {
		t.Errorf("broken arguments should come back as their text in a JSON string, got %s", m.ToolCalls[0].Arguments)
	}
	if string(m.ToolCalls[1].Arguments) != `{}` {
		t.Errorf("valid arguments changed: %s", m.ToolCalls[1].Arguments)
	}
	if got[1].Time.Before(before) {
		t.Errorf("a zero Time should be stamped, got %v", got[1].Time)
	}
}

func TestNewSessionIDSortable(t *testing.T) {
	id := NewSessionID()
	if !regexp.MustCompile(`^s-\d{8}-\d{6}-[0-9a-f]{6}$`).MatchString(id) {
		t.Fatalf("id %q", id)
	}
	if checkID(id) != nil {
		t.Fatal("generated id is not valid")
	}
	st, _ := newTestStore(t)
	sf, err := st.Create(agent.SessionSettings{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	if !strings.HasPrefix(sf.ID(), "s-") {
		t.Errorf("Create without ID gave %q", sf.ID())
	}
	if fi, err := os.Stat(st.journalPath(sf.ID())); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode: %v %v", fi, err)
	}
	fresh, err := Open(filepath.Join(t.TempDir(), "a", "agentd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"", sessionsDir, checkpointsDir, auditDir} {
		if fi, err := os.Stat(filepath.Join(fresh.Dir(), d)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("mode of %q: %v %v", d, fi.Mode(), err)
		}
	}
}

func TestInvalidIDsRefused(t *testing.T) {
	st, _ := newTestStore(t)
	for _, id := range []string{"../x", "a/b", ".hidden", "", "x\x00"} {
		if _, err := st.Load(id); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Load(%q): %v", id, err)
		}
		if _, err := st.Create(agent.SessionSettings{ID: id}); id != "" && err == nil {
			t.Errorf("Create(%q) succeeded", id)
		}
	}
	if _, err := st.Load("s-missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing session: %v", err)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/x/state")
	if d, _ := DefaultDir(); d != "/x/state/agentd" {
		t.Errorf("got %s", d)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/home/u")
	if d, _ := DefaultDir(); d != "/home/u/.local/state/agentd" {
		t.Errorf("got %s", d)
	}
	t.Setenv("XDG_STATE_HOME", "")
	if d, _ := DefaultDir(); d != "/home/u/.local/state/agentd" {
		t.Errorf("got %s", d)
	}
}

func TestOneWriterPerSession(t *testing.T) {
	st, _ := newTestStore(t)
	sf, err := st.Create(agent.SessionSettings{ID: "s-one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Resume("s-one"); !errors.Is(err, ErrSessionOpen) {
		t.Errorf("second writer in this process: %v", err)
	}
	// Another process (here: another Store on the same directory) is held off by the lock.
	other, err := Open(st.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.Resume("s-one"); !errors.Is(err, ErrSessionOpen) {
		t.Errorf("second writer through another store: %v", err)
	}
	if err := st.Delete("s-one"); !errors.Is(err, ErrSessionOpen) {
		t.Errorf("delete while open: %v", err)
	}
	sf.Close()
	if err := sf.Append(agent.Entry{Type: agent.EntryTitle, Title: "x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("append after close: %v", err)
	}
	sf2, _, err := other.Resume("s-one")
	if err != nil {
		t.Fatalf("resume after close: %v", err)
	}
	sf2.Close()
}

// tornFile writes a session, then half of one more JSON line, as a crash mid-write leaves it.
func tornFile(t *testing.T, st *Store, id string) (entries []agent.Entry, torn []byte) {
	t.Helper()
	entries = allEntries(id)[:8]
	sf := writeSession(t, st, entries)
	sf.Close()
	line, _ := encodeEntry(agent.Entry{Type: agent.EntryMessage, TurnID: "t2", Time: at(20),
		Message: &agent.Message{Role: agent.RoleAssistant, Content: "this reply was being written when"}})
	torn = line[:len(line)/2]
	f, err := os.OpenFile(st.journalPath(id), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(torn)
	f.Close()
	return entries, torn
}

func TestTornLastLineIgnoredAndResumeAppendsCleanly(t *testing.T) {
	st, logs := newTestStore(t)
	entries, _ := tornFile(t, st, "s-torn")
	got, err := st.Load("s-torn")
	if err != nil {
		t.Fatalf("a torn last line must not fail loading: %v", err)
	}
	if len(got) != len(entries) {
		t.Fatalf("loaded %d entries, want %d", len(got), len(entries))
	}
	if !strings.Contains(logs.lines(), "torn last line") {
		t.Errorf("no log line about the torn line: %s", logs.lines())
	}

	sf, r, err := st.Resume("s-torn")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Turns) != 1 || r.Turns[0].Reason != "done" {
		t.Errorf("replayed turns %+v", r.Turns)
	}
	next := agent.Entry{Type: agent.EntryTurnStart, TurnID: "t2", Time: at(30), Prompt: "again"}
	if err := sf.Append(next); err != nil {
		t.Fatal(err)
	}
	sf.Close()
	// Every line of the file parses: the torn bytes were cut, the new entry starts a clean line.
	raw, _ := os.ReadFile(st.journalPath("s-torn"))
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	for i, l := range lines {
		if _, ok := parseEntry([]byte(l)); !ok {
			t.Errorf("line %d does not parse: %.80q", i+1, l)
		}
	}
	got, _ = st.Load("s-torn")
	if len(got) != len(entries)+1 || got[len(got)-1].Prompt != "again" {
		t.Errorf("after resume: %d entries, last %+v", len(got), got[len(got)-1])
	}
}

func TestCompleteLastEntryWithoutNewlineIsKept(t *testing.T) {
	st, _ := newTestStore(t)
	entries := allEntries("s-nl")[:3]
	sf := writeSession(t, st, entries)
	sf.Close()
	// Cut only the final newline.
	p := st.journalPath("s-nl")
	fi, _ := os.Stat(p)
	os.Truncate(p, fi.Size()-1)
	if got, _ := st.Load("s-nl"); len(got) != 3 {
		t.Fatalf("loaded %d, want 3 (the last entry is whole)", len(got))
	}
	sf, _, err := st.Resume("s-nl")
	if err != nil {
		t.Fatal(err)
	}
	sf.Append(agent.Entry{Type: agent.EntryTitle, Title: "T"})
	sf.Close()
	got, _ := st.Load("s-nl")
	if len(got) != 4 || got[2].Prompt != "fix the bug" || got[3].Title != "T" {
		t.Errorf("got %s", jsonOf(t, got))
	}
}

func TestGarbageLineInTheMiddleSkipped(t *testing.T) {
	st, logs := newTestStore(t)
	entries := allEntries("s-garbage")
	sf := writeSession(t, st, entries[:4])
	sf.Close()
	f, _ := os.OpenFile(st.journalPath("s-garbage"), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("this is not json\n{\"type\":\n\n")
	f.Close()
	sf, _, err := st.Resume("s-garbage")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries[4:] {
		sf.Append(e)
	}
	sf.Close()
	got, err := st.Load("s-garbage")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(entries) {
		t.Fatalf("loaded %d entries, want %d", len(got), len(entries))
	}
	if jsonOf(t, got[4:]) != jsonOf(t, entries[4:]) {
		t.Error("entries after the garbage differ")
	}
	if strings.Count(logs.lines(), "skipped an unreadable session journal line") != 4 { // 2 lines × (Resume + Load)
		t.Errorf("log lines:\n%s", logs.lines())
	}
}

// A torn line with an entry glued after it (a writer that did not cut the tail) loses only the
// torn part.
func TestGluedEntryAfterTornLineRecovered(t *testing.T) {
	st, _ := newTestStore(t)
	entries := allEntries("s-glued")[:3]
	sf := writeSession(t, st, entries)
	sf.Close()
	torn := `{"type":"message","turnId":"t1","message":{"role":"assistant","content":"cut {\"type\": he`
	good, _ := encodeEntry(agent.Entry{Type: agent.EntryTitle, Time: at(9), Title: "kept"})
	f, _ := os.OpenFile(st.journalPath("s-glued"), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(torn)
	f.Write(good)
	f.Close()
	got, _ := st.Load("s-glued")
	if len(got) != 4 || got[3].Title != "kept" {
		t.Errorf("got %s", jsonOf(t, got))
	}
}

// A failed write that left half a line is cut before the next append.
func TestFailedWriteRepaired(t *testing.T) {
	st, _ := newTestStore(t)
	sf, err := st.Create(agent.SessionSettings{ID: "s-repair"})
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	sf.mu.Lock()
	sf.f.Write([]byte(`{"type":"message","mess`)) // as a write that failed part-way would
	sf.broken = true
	sf.mu.Unlock()
	if err := sf.Append(agent.Entry{Type: agent.EntryTitle, Title: "after"}); err != nil {
		t.Fatal(err)
	}
	sf.Sync()
	raw, _ := os.ReadFile(st.journalPath("s-repair"))
	if bytes.Contains(raw, []byte("mess")) {
		t.Errorf("half-written line still there:\n%s", raw)
	}
	got, _ := st.Load("s-repair")
	if len(got) != 2 || got[1].Title != "after" {
		t.Errorf("got %s", jsonOf(t, got))
	}
}

// TestCrashKillMidWrite runs a child process that appends big turns and syncs at turn
// boundaries, SIGKILLs it mid-write, and checks that every turn the child reported synced is
// there, that loading never fails, and that the session resumes and takes new entries. Three
// rounds: each round resumes the session the previous kill left.
func TestCrashKillMidWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	st, _ := newTestStore(t)
	const id = "s-crash"
	next := 1
	torn := 0
	for round := range 3 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envCrashChild+"=1", envCrashDir+"="+st.Dir(), envCrashID+"="+id,
			fmt.Sprintf("%s=%d", envCrashFirst, next))
		if round == 2 {
			cmd.Env = append(cmd.Env, envCrashTear+"=3")
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var synced []string
		for len(synced) < 3 && sc.Scan() {
			synced = append(synced, strings.TrimPrefix(sc.Text(), "synced "))
		}
		if len(synced) < 3 {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child reported %v; stderr: %s", round, synced, stderr.String())
		}
		if round == 2 {
			// Kill it while the last line is half written.
			if !sc.Scan() || sc.Text() != "torn" {
				t.Fatalf("child did not tear a line: %q; stderr: %s", sc.Text(), stderr.String())
			}
		} else {
			// Land somewhere in the next turn's writes.
			time.Sleep(time.Duration(rand.IntN(15)) * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, stdout)
		cmd.Wait()

		raw, err := os.ReadFile(st.journalPath(id))
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) > 0 && raw[len(raw)-1] != '\n' {
			torn++
		} else if round == 2 {
			t.Fatal("the child's half line is not at the end of the journal")
		}
		entries, err := st.Load(id)
		if err != nil {
			t.Fatalf("round %d: load after kill: %v", round, err)
		}
		r := agent.Replay(entries)
		ended := map[string]bool{}
		for _, tr := range r.Turns {
			if tr.Reason == "done" {
				ended[tr.ID] = true
			}
		}
		for _, turn := range synced {
			if !ended[turn] {
				t.Errorf("round %d: synced turn %s is missing or unfinished", round, turn)
			}
		}
		for _, e := range entries {
			if e.Message != nil && e.Message.Role == agent.RoleAssistant {
				var n int
				fmt.Sscanf(e.TurnID, "t%d", &n)
				if e.Message.Content != crashContent(n) {
					t.Errorf("round %d: turn %s: damaged message (%d bytes)", round, e.TurnID, len(e.Message.Content))
				}
			}
		}

		// Resume and append: the next entry must start on a clean line.
		sf, rr, err := st.Resume(id)
		if err != nil {
			t.Fatalf("round %d: resume: %v", round, err)
		}
		mark := fmt.Sprintf("after crash %d", round)
		if err := sf.Append(agent.Entry{Type: agent.EntryTitle, Title: mark}); err != nil {
			t.Fatal(err)
		}
		sf.Close()
		entries, _ = st.Load(id)
		if last := entries[len(entries)-1]; last.Title != mark {
			t.Errorf("round %d: the entry appended after resume was lost: %+v", round, last)
		}
		// The child of the next round continues after the last turn that was started.
		next = len(rr.Turns) + 1
	}
	t.Logf("kills that left a torn last line: %d of 3", torn)
}

func TestListSortedWithTitles(t *testing.T) {
	st, _ := newTestStore(t)
	mk := func(id, title string, updated int, prompts ...string) {
		sf, err := st.Create(agent.SessionSettings{ID: id, Workspace: "/w/" + id, Model: "m-" + id, ApprovalMode: "ask", Created: at(0)})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range prompts {
			sf.Append(agent.Entry{Type: agent.EntryTurnStart, TurnID: fmt.Sprint("t", i+1), Prompt: p, Time: at(updated - 1)})
		}
		if title != "" {
			sf.Append(agent.Entry{Type: agent.EntryTitle, Title: title, Time: at(updated)})
		}
		sf.Close()
	}
	mk("s-a", "Alpha", 30, "one", "two")
	mk("s-b", "Beta", 50, "x")
	mk("s-c", "", 40, "only prompt "+strings.Repeat("long ", 100))
	list, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "s-b,s-c,s-a" {
		t.Fatalf("order %v", ids)
	}
	a := list[2]
	if a.Title != "Alpha" || a.Turns != 2 || a.LastPrompt != "two" || a.Workspace != "/w/s-a" || a.Model != "m-s-a" ||
		a.Mode != "ask" || !a.Created.Equal(at(0)) || !a.Updated.Equal(at(30)) {
		t.Errorf("summary %+v", a)
	}
	if c := list[1]; c.Title != "" || len(c.LastPrompt) > maxPromptBytes+4 || !strings.HasSuffix(c.LastPrompt, "…") {
		t.Errorf("long prompt not clipped: %q", c.LastPrompt)
	}
}

// List uses the meta index: it does not replay a journal the index already covers.
func TestListReadsTheIndexNotTheJournal(t *testing.T) {
	st, _ := newTestStore(t)
	sf := writeSession(t, st, allEntries("s-idx"))
	sf.Close()
	fi, _ := os.Stat(st.journalPath("s-idx"))
	// An index that says something the journal does not: List must believe it.
	if err := writeMeta(st.metaPath("s-idx"), fi.Size(), Summary{ID: "s-idx", Title: "from the index", Turns: 42}); err != nil {
		t.Fatal(err)
	}
	list, _ := st.List()
	if len(list) != 1 || list[0].Title != "from the index" || list[0].Turns != 42 {
		t.Errorf("List did not use the index: %+v", list)
	}
}

func TestListRebuildsMissingCorruptOrStaleIndex(t *testing.T) {
	st, _ := newTestStore(t)
	sf := writeSession(t, st, allEntries("s-meta"))
	want := sf.Summary()
	if want.Turns != 2 || want.Title != "Fix the bug" {
		t.Fatalf("writer summary %+v", want)
	}
	check := func(what string) {
		t.Helper()
		got, err := st.Summary("s-meta")
		if err != nil {
			t.Fatal(err)
		}
		if jsonOf(t, got) != jsonOf(t, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
		}
	}
	check("fresh index")
	os.Remove(st.metaPath("s-meta"))
	check("missing index")
	if _, err := os.Stat(st.metaPath("s-meta")); err != nil {
		t.Errorf("the index was not rebuilt: %v", err)
	}
	os.WriteFile(st.metaPath("s-meta"), []byte("{garbage"), 0o600)
	check("corrupt index")
	// An index pointing into the middle of a line is not trusted.
	os.WriteFile(st.metaPath("s-meta"), []byte(`{"version":1,"size":7,"summary":{"id":"s-meta","title":"wrong"}}`), 0o600)
	check("misaligned index")

	// Appended but not yet synced (or a crash before Sync): List catches up from the index.
	sf.Append(agent.Entry{Type: agent.EntryTurnStart, TurnID: "t3", Prompt: "third", Time: at(100)})
	want.Turns, want.LastPrompt, want.Updated = 3, "third", at(100)
	check("stale index")
	sf.Close()
	check("after close")
}

func TestConcurrentListWhileWriting(t *testing.T) {
	st, _ := newTestStore(t)
	sf, err := st.Create(agent.SessionSettings{ID: "s-live", Created: at(0)})
	if err != nil {
		t.Fatal(err)
	}
	const turns = 200
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer sf.Close()
		for i := 1; i <= turns; i++ {
			turn := fmt.Sprint("t", i)
			sf.Append(agent.Entry{Type: agent.EntryTurnStart, TurnID: turn, Prompt: turn})
			sf.Append(agent.Entry{Type: agent.EntryMessage, TurnID: turn,
				Message: &agent.Message{Role: agent.RoleAssistant, Content: strings.Repeat("x", 3000)}})
			sf.Append(agent.Entry{Type: agent.EntryTurnEnd, TurnID: turn, Reason: "done"})
			if i%10 == 0 {
				sf.Sync()
			}
			_ = sf.Summary()
		}
	}()
	last := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		list, err := st.List()
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 {
			t.Fatalf("list %+v", list)
		}
		if list[0].Turns < last || list[0].Turns > turns {
			t.Fatalf("turn count went from %d to %d", last, list[0].Turns)
		}
		last = list[0].Turns
		if _, err := st.Load("s-live"); err != nil {
			t.Fatal(err)
		}
	}
	list, _ := st.List()
	if list[0].Turns != turns || list[0].LastPrompt != fmt.Sprint("t", turns) {
		t.Errorf("final %+v", list[0])
	}
}

func TestDeleteSession(t *testing.T) {
	st, _ := newTestStore(t)
	sf := writeSession(t, st, allEntries("s-del"))
	sf.Close()
	os.MkdirAll(st.manifestDir("s-del"), 0o700)
	if err := st.Delete("s-del"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{st.journalPath("s-del"), st.metaPath("s-del"), st.manifestDir("s-del")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there", filepath.Base(p))
		}
	}
	if list, _ := st.List(); len(list) != 0 {
		t.Errorf("list %+v", list)
	}
}
