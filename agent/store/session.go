package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools/fsafe"
)

// ErrClosed is returned by a SessionFile after Close.
var ErrClosed = errors.New("store: session file closed")

// SessionFile is the journal of one session, open for appending. It implements agent.Journal.
// It is meant for one writer (the session's goroutine) but is safe for concurrent use; List and
// Load may read the same session from other goroutines meanwhile.
type SessionFile struct {
	st *Store
	id string

	mu       sync.Mutex
	f        *os.File
	size     int64 // offset just after the last complete line
	broken   bool  // a write failed part-way: cut the file back to size before the next one
	synced   int64 // size at the last fsync
	metaSize int64 // size the meta index was last written for
	sum      Summary
}

var _ agent.Journal = (*SessionFile)(nil)

// Create creates a new session journal and writes (and syncs) its first entry, the settings.
// An empty settings.ID gets NewSessionID(); a zero Created gets the current time.
func (s *Store) Create(settings agent.SessionSettings) (*SessionFile, error) {
	generated := settings.ID == ""
	if settings.Created.IsZero() {
		settings.Created = time.Now().UTC()
	}
	for attempt := 0; ; attempt++ {
		if generated {
			settings.ID = NewSessionID()
		}
		if err := checkID(settings.ID); err != nil {
			return nil, err
		}
		sf, err := s.create(settings)
		if generated && errors.Is(err, fs.ErrExist) && attempt < 10 {
			continue // two sessions created in the same second drew the same random suffix
		}
		return sf, err
	}
}

func (s *Store) create(settings agent.SessionSettings) (*SessionFile, error) {
	id := settings.ID
	if err := s.claim(id); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.journalPath(id), os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		s.release(id)
		return nil, fmt.Errorf("store: create session %s: %w", id, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		s.release(id)
		return nil, fmt.Errorf("store: session %s: %w", id, err)
	}
	sf := &SessionFile{st: s, id: id, f: f, sum: Summary{ID: id}}
	err = sf.Append(agent.Entry{Type: agent.EntrySession, Time: time.Now().UTC(), Session: &settings})
	if err == nil {
		err = sf.Sync()
	}
	if err == nil {
		err = syncDir(filepath.Join(s.dir, sessionsDir))
	}
	if err != nil {
		sf.Close()
		os.Remove(s.journalPath(id)) // created by this call (O_EXCL): leave no half session
		return nil, fmt.Errorf("store: create session %s: %w", id, err)
	}
	return sf, nil
}

// Resume reopens a stored session for appending and returns it with the session rebuilt from its
// journal. A torn last line (a crash mid-write) is cut off first, so the next entry starts on a
// clean line; a complete last entry that only lacks its newline gets one.
func (s *Store) Resume(id string) (*SessionFile, agent.Replayed, error) {
	if err := checkID(id); err != nil {
		return nil, agent.Replayed{}, err
	}
	if err := s.claim(id); err != nil {
		return nil, agent.Replayed{}, err
	}
	sf, entries, err := s.resume(id)
	if err != nil {
		s.release(id)
		return nil, agent.Replayed{}, err
	}
	return sf, agent.Replay(entries), nil
}

func (s *Store) resume(id string) (*SessionFile, []agent.Entry, error) {
	f, err := os.OpenFile(s.journalPath(id), os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: resume session %s: %w", id, err)
	}
	fail := func(err error) (*SessionFile, []agent.Entry, error) {
		f.Close()
		return nil, nil, fmt.Errorf("store: resume session %s: %w", id, err)
	}
	if err := lockFile(f); err != nil {
		return fail(err)
	}
	var entries []agent.Entry
	sum := Summary{ID: id}
	info, err := scanJournal(io.NewSectionReader(f, 0, 1<<62), 0, id, s.log, func(e agent.Entry) {
		entries = append(entries, e)
		sum.fold(e)
	})
	if err != nil {
		return fail(err)
	}
	size := info.end
	if info.tail > 0 {
		if info.tailParsed {
			// A complete entry lost only its newline: keep it, end its line.
			if _, err := f.Write([]byte{'\n'}); err != nil {
				return fail(err)
			}
			size += info.tail + 1
		} else {
			s.log.Warn("store: cutting a torn last line of a session journal (a crash mid-write)",
				"session", id, "offset", info.end, "bytes", info.tail)
			if err := f.Truncate(info.end); err != nil {
				return fail(err)
			}
		}
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	sf := &SessionFile{st: s, id: id, f: f, size: size, synced: size, sum: sum}
	sf.writeMeta()
	return sf, entries, nil
}

// Load reads a session's entries. It never fails because of a damaged line: a torn last line (a
// crash mid-write) is ignored and a line that does not parse is skipped with a log line.
func (s *Store) Load(id string) ([]agent.Entry, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	f, err := os.Open(s.journalPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: load session %s: %w", id, err)
	}
	defer f.Close()
	var entries []agent.Entry
	if _, err := scanJournal(f, 0, id, s.log, func(e agent.Entry) { entries = append(entries, e) }); err != nil {
		return nil, fmt.Errorf("store: load session %s: %w", id, err)
	}
	return entries, nil
}

// Delete removes a session: its journal, its meta index and its checkpoint manifests (run GC to
// free the objects only it referenced). It fails with ErrSessionOpen while the session has a
// writer.
func (s *Store) Delete(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := s.claim(id); err != nil {
		return err
	}
	defer s.release(id)
	f, err := os.OpenFile(s.journalPath(id), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("store: delete session %s: %w", id, err)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return fmt.Errorf("store: delete session %s: %w", id, err)
	}
	if err := os.RemoveAll(s.manifestDir(id)); err != nil {
		return fmt.Errorf("store: delete session %s: %w", id, err)
	}
	if err := os.Remove(s.metaPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: delete session %s: %w", id, err)
	}
	if err := os.Remove(s.journalPath(id)); err != nil {
		return fmt.Errorf("store: delete session %s: %w", id, err)
	}
	return syncDir(filepath.Join(s.dir, sessionsDir))
}

// ID returns the session's ID.
func (f *SessionFile) ID() string { return f.id }

// Summary returns the session's summary as of the last Append.
func (f *SessionFile) Summary() Summary {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sum
}

// Append writes one entry as one JSON line, at once (one write call): it survives a crash of
// agentd, and an operating-system crash once Sync returned. A zero Time is set to now. A tool call
// whose arguments are not valid JSON (a model's mistake) is stored with its arguments as a JSON
// string, so the entry is never lost.
func (f *SessionFile) Append(e agent.Entry) error {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	line, err := encodeEntry(e)
	if err != nil {
		return fmt.Errorf("store: session %s: encode %s entry: %w", f.id, e.Type, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return ErrClosed
	}
	if err := f.repair(); err != nil {
		return err
	}
	n, err := f.f.Write(line)
	if err != nil {
		if n > 0 {
			f.broken = true
			_ = f.repair()
		}
		return fmt.Errorf("store: session %s: append: %w", f.id, err)
	}
	f.size += int64(n)
	f.sum.fold(e)
	return nil
}

// repair cuts off a line a failed write left half-written, so the next entry starts on a clean
// line. The caller holds mu.
func (f *SessionFile) repair() error {
	if !f.broken {
		return nil
	}
	if err := f.f.Truncate(f.size); err != nil {
		return fmt.Errorf("store: session %s: cut a half-written line: %w", f.id, err)
	}
	f.broken = false
	return nil
}

// Sync makes everything appended so far durable (fsync) and updates the session's meta index.
// The loop calls it at turn boundaries and after each batch of tool calls, before the model
// reads their results. The renames of the files the tools wrote (fsafe.SyncDirs) are made
// durable at the same time, in parallel with the journal's fsync: when Sync returns, the
// results and the writes they report are both durable.
func (f *SessionFile) Sync() error {
	var dirsSynced chan struct{}
	if fsafe.PendingDirs() > 0 {
		dirsSynced = make(chan struct{})
		go func() {
			fsafe.SyncDirs()
			close(dirsSynced)
		}()
	}
	if dirsSynced != nil {
		defer func() { <-dirsSynced }()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return ErrClosed
	}
	if err := f.repair(); err != nil {
		return err
	}
	if f.synced != f.size {
		if err := f.f.Sync(); err != nil {
			return fmt.Errorf("store: session %s: sync: %w", f.id, err)
		}
		f.synced = f.size
	}
	f.writeMeta()
	return nil
}

// writeMeta writes the meta index if it is behind. It is only an index: a failure is logged,
// List rebuilds it. The caller holds mu (or owns f exclusively).
func (f *SessionFile) writeMeta() {
	if f.metaSize == f.size {
		return
	}
	if err := writeMeta(f.st.metaPath(f.id), f.size, f.sum); err != nil {
		f.st.log.Warn("store: cannot write a session's meta index", "session", f.id, "err", err)
		return
	}
	f.metaSize = f.size
}

// Close syncs and closes the journal, releasing it for another writer. It is idempotent.
func (f *SessionFile) Close() error {
	f.mu.Lock()
	if f.f == nil {
		f.mu.Unlock()
		return nil
	}
	f.mu.Unlock()
	err := f.Sync()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return err
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	f.f = nil
	f.st.release(f.id)
	return err
}

// encodeEntry returns e as one JSON line.
func encodeEntry(e agent.Entry) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		fixed, changed := sanitizeEntry(e)
		if !changed {
			return nil, err
		}
		if b, err = json.Marshal(fixed); err != nil {
			return nil, err
		}
	}
	return append(b, '\n'), nil
}

// sanitizeEntry replaces tool-call arguments that are not valid JSON (json.Marshal refuses them)
// by a JSON string of their text. It copies what it changes.
func sanitizeEntry(e agent.Entry) (agent.Entry, bool) {
	changed := false
	if e.Message != nil {
		if m, ok := sanitizeMessage(*e.Message); ok {
			e.Message, changed = &m, true
		}
	}
	cloned := false
	for i := range e.Messages {
		if m, ok := sanitizeMessage(e.Messages[i]); ok {
			if !cloned {
				e.Messages, cloned = slices.Clone(e.Messages), true
			}
			e.Messages[i], changed = m, true
		}
	}
	return e, changed
}

func sanitizeMessage(m agent.Message) (agent.Message, bool) {
	changed := false
	for i, c := range m.ToolCalls {
		if c.Arguments == nil || json.Valid(c.Arguments) {
			continue
		}
		if !changed {
			m.ToolCalls = slices.Clone(m.ToolCalls)
			changed = true
		}
		if len(c.Arguments) == 0 {
			m.ToolCalls[i].Arguments = nil
			continue
		}
		s, _ := json.Marshal(string(c.Arguments))
		m.ToolCalls[i].Arguments = s
	}
	return m, changed
}

// scanInfo describes a scanned journal.
type scanInfo struct {
	// end is the offset just after the last complete (newline-terminated) line.
	end int64
	// tail is the length of an unterminated last line; tailParsed says it held a whole entry
	// (which was delivered).
	tail       int64
	tailParsed bool
}

// scanJournal reads journal lines from r, which starts at offset base of the file, and calls fn
// with each entry in order. Lines that do not parse are skipped (logged); an unterminated last
// line is delivered only if it holds a whole entry.
func scanJournal(r io.Reader, base int64, id string, log *slog.Logger, fn func(agent.Entry)) (scanInfo, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	info := scanInfo{end: base}
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			if b[len(b)-1] == '\n' {
				if e, ok := parseLine(b[:len(b)-1], id, info.end, log); ok {
					fn(e)
				}
				info.end += int64(len(b))
			} else {
				info.tail = int64(len(b))
				if e, ok := parseEntry(b); ok {
					info.tailParsed = true
					fn(e)
				} else {
					log.Info("store: ignoring a torn last line of a session journal (a crash mid-write)",
						"session", id, "offset", info.end, "bytes", len(b))
				}
			}
		}
		if err == io.EOF {
			return info, nil
		}
		if err != nil {
			return info, err
		}
	}
}

// entryStart is how every encoded entry begins (Type is Entry's first field).
var entryStart = []byte(`{"type":`)

// parseLine parses one complete line. A line that does not parse is skipped with a log line;
// if an entry was glued onto the end of a torn line (a write after a crash that nobody cut off),
// that entry is recovered.
func parseLine(b []byte, id string, off int64, log *slog.Logger) (agent.Entry, bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return agent.Entry{}, false
	}
	e, ok := parseEntry(b)
	if ok {
		return e, true
	}
	for i := 1; i < len(b); {
		j := bytes.Index(b[i:], entryStart)
		if j < 0 {
			break
		}
		if e, ok := parseEntry(b[i+j:]); ok {
			log.Warn("store: skipped the unreadable start of a session journal line and kept the entry after it",
				"session", id, "offset", off, "skipped", i+j)
			return e, true
		}
		i += j + 1
	}
	log.Warn("store: skipped an unreadable session journal line", "session", id, "offset", off,
		"bytes", len(b))
	return agent.Entry{}, false
}

func parseEntry(b []byte) (agent.Entry, bool) {
	var e agent.Entry
	if err := json.Unmarshal(b, &e); err != nil || e.Type == "" {
		return agent.Entry{}, false
	}
	return e, true
}

// Fork copies a session to a new one: its journal up to the start of turn before ("" : all of
// it), under a new ID and creation time, and returns the new ID. The copied entries are the same
// bytes but for the session's ID, so the fork rebuilds the same history, and the model reads the
// same prompt prefix. The session may be open elsewhere: Fork only reads it.
func (s *Store) Fork(id, before string) (string, error) {
	entries, err := s.Load(id)
	if err != nil {
		return "", err
	}
	if len(entries) == 0 || entries[0].Type != agent.EntrySession || entries[0].Session == nil {
		return "", fmt.Errorf("store: session %s has no settings entry", id)
	}
	if before != "" && !slices.ContainsFunc(entries, func(e agent.Entry) bool {
		return e.Type == agent.EntryTurnStart && e.TurnID == before
	}) {
		return "", fmt.Errorf("%w: session %s has no turn %s", ErrNotFound, id, before)
	}
	settings := *entries[0].Session
	settings.ID, settings.Created = "", time.Time{}
	sf, err := s.Create(settings)
	if err != nil {
		return "", err
	}
	newID := sf.ID()
	created := sf.sum.Created
	for _, e := range entries[1:] {
		if e.Type == agent.EntryTurnStart && e.TurnID == before {
			break
		}
		if e.Session != nil {
			cp := *e.Session
			cp.ID, cp.Created = newID, created
			e.Session = &cp
		}
		if err := sf.Append(e); err != nil {
			sf.Close()
			s.Delete(newID)
			return "", err
		}
	}
	if err := sf.Close(); err != nil {
		return "", err
	}
	return newID, nil
}
