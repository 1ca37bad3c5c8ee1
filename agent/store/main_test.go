package store

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/internal/bug"
)

// Environment of the crash child (see TestCrashKillMidWrite).
const (
	envCrashChild = "AGENTD_STORE_CRASH_CHILD"
	envCrashDir   = "AGENTD_STORE_CRASH_DIR"
	envCrashID    = "AGENTD_STORE_CRASH_ID"
	envCrashFirst = "AGENTD_STORE_CRASH_FIRST"
	// envCrashTear makes the child, after that many synced turns, write half of its next line
	// with a write call of its own, report "torn" and wait to be killed: a kill mid-line for sure.
	envCrashTear = "AGENTD_STORE_CRASH_TEAR"
)

func TestMain(m *testing.M) {
	if os.Getenv(envCrashChild) == "1" {
		crashChild()
		return
	}
	if os.Getenv(envKillWriteChild) != "" {
		killWriteChild(os.Getenv(envKillWriteChild)) // checkpoint_test.go
		return
	}
	bug.PanicOnBugs.Store(true)
	os.Exit(m.Run())
}

// crashChild appends turns to a session forever, syncing at each turn boundary and reporting
// "synced <turn>" on stdout after each Sync returns, until its parent kills it.
func crashChild() {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	st, err := Open(os.Getenv(envCrashDir))
	if err != nil {
		fail(err)
	}
	id := os.Getenv(envCrashID)
	first, _ := strconv.Atoi(os.Getenv(envCrashFirst))
	var sf *SessionFile
	if first == 1 {
		sf, err = st.Create(agent.SessionSettings{ID: id, Workspace: "/ws", Model: "m"})
	} else {
		sf, _, err = st.Resume(id)
	}
	if err != nil {
		fail(err)
	}
	tear, _ := strconv.Atoi(os.Getenv(envCrashTear))
	for n := first; ; n++ {
		turn := "t" + strconv.Itoa(n)
		if tear > 0 && n-first == tear {
			line, err := encodeEntry(crashTurn(turn, n)[2])
			if err != nil {
				fail(err)
			}
			sf.mu.Lock()
			if _, err := sf.f.Write(line[:len(line)/2]); err != nil {
				fail(err)
			}
			fmt.Println("torn")
			select {} // until killed
		}
		for _, e := range crashTurn(turn, n) {
			if err := sf.Append(e); err != nil {
				fail(err)
			}
		}
		if err := sf.Sync(); err != nil {
			fail(err)
		}
		fmt.Printf("synced %s\n", turn)
	}
}

// crashTurn is turn n of the crash test: big messages, so a kill is likely to land mid-write.
func crashTurn(turn string, n int) []agent.Entry {
	return []agent.Entry{
		{Type: agent.EntryTurnStart, TurnID: turn, Prompt: "prompt " + turn},
		{Type: agent.EntryMessage, TurnID: turn, Message: &agent.Message{Role: agent.RoleUser, Content: "prompt " + turn}},
		{Type: agent.EntryMessage, TurnID: turn, Message: &agent.Message{Role: agent.RoleAssistant, Content: crashContent(n)}},
		{Type: agent.EntryTurnEnd, TurnID: turn, Reason: "done"},
	}
}

func crashContent(n int) string {
	return strings.Repeat(string(rune('a'+n%26)), 128<<10+n)
}

// logCapture is a slog handler that keeps messages, for tests that expect a log line.
type logCapture struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logCapture) lines() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.msgs, "\n")
}

// newTestStore opens a store in a temporary directory; its log lines go to the returned capture.
func newTestStore(t *testing.T) (*Store, *logCapture) {
	t.Helper()
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lc := &logCapture{}
	st.log = slog.New(slog.NewTextHandler(&captureWriter{lc}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st.audit.log = st.log
	t.Cleanup(func() { st.Close() })
	return st, lc
}

type captureWriter struct{ l *logCapture }

func (w *captureWriter) Write(b []byte) (int, error) {
	w.l.mu.Lock()
	w.l.msgs = append(w.l.msgs, string(bytes.TrimSpace(b)))
	w.l.mu.Unlock()
	return len(b), nil
}

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
