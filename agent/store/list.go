package store

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/agent"
)

// Summary describes a stored session for a session list.
type Summary struct {
	ID        string    `json:"id"`
	Title     string    `json:"title,omitzero"`
	Workspace string    `json:"workspace,omitzero"`
	Model     string    `json:"model,omitzero"`
	Mode      string    `json:"mode,omitzero"` // the approval mode in force
	Created   time.Time `json:"created"`
	// Updated is the time of the last entry.
	Updated time.Time `json:"updated"`
	// Turns counts the turns started.
	Turns int `json:"turns"`
	// LastPrompt is the prompt of the last turn, cut to about 200 characters.
	LastPrompt string `json:"lastPrompt,omitzero"`
}

const maxPromptBytes = 800

// fold updates the summary with the next entry of the journal.
func (s *Summary) fold(e agent.Entry) {
	if !e.Time.IsZero() {
		s.Updated = e.Time
	}
	switch e.Type {
	case agent.EntrySession:
		if e.Session != nil {
			s.Workspace, s.Model, s.Mode, s.Created = e.Session.Workspace, e.Session.Model,
				e.Session.ApprovalMode, e.Session.Created
		}
	case agent.EntryTitle:
		s.Title = e.Title
	case agent.EntryMode:
		s.Mode = e.Mode
	case agent.EntryTurnStart:
		s.Turns++
		p := e.Prompt
		if e.Typed != "" {
			p = e.Typed // the user's words, without the editor context appended for the model
		}
		s.LastPrompt = clip(p, 200, maxPromptBytes)
	}
}

// clip cuts s to at most runes characters and maxBytes bytes, marking the cut with "…".
func clip(s string, runes, maxBytes int) string {
	n, i := 0, 0
	for i < len(s) {
		if n == runes || i >= maxBytes {
			return strings.TrimRight(s[:i], " \n\t") + "…"
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
		n++
	}
	return s
}

// metaFile is sessions/<id>.meta.json: the summary of the journal's first Size bytes (always a
// line boundary).
type metaFile struct {
	Version int     `json:"version"`
	Size    int64   `json:"size"`
	Summary Summary `json:"summary"`
}

const metaVersion = 1

func writeMeta(path string, size int64, sum Summary) error {
	b, err := json.Marshal(metaFile{Version: metaVersion, Size: size, Summary: sum})
	if err != nil {
		return err
	}
	return replaceFile(path, append(b, '\n')) // an index: no fsync (see replaceFile)
}

func readMeta(path string) (metaFile, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return metaFile{}, false
	}
	var m metaFile
	if json.Unmarshal(b, &m) != nil || m.Version != metaVersion || m.Size <= 0 {
		return metaFile{}, false
	}
	return m, true
}

// List returns the stored sessions, most recently updated first. It reads each session's meta
// index and only the journal lines written after it (a session being written, or one whose
// agentd crashed before its last Sync); a missing or corrupt index is rebuilt from the journal.
// A session that cannot be read at all is logged and left out. List may run while sessions are
// being written.
func (s *Store) List() ([]Summary, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, sessionsDir))
	if err != nil {
		return nil, fmt.Errorf("store: list sessions: %w", err)
	}
	var out []Summary
	for _, ent := range ents {
		name := ent.Name()
		id, ok := strings.CutSuffix(name, journalExt)
		if !ok || !ent.Type().IsRegular() || checkID(id) != nil {
			continue
		}
		sum, err := s.Summary(id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			s.log.Warn("store: cannot read a session for the list", "session", id, "err", err)
			continue
		}
		out = append(out, sum)
	}
	slices.SortFunc(out, func(a, b Summary) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out, nil
}

// Summary returns one session's summary (see List).
func (s *Store) Summary(id string) (Summary, error) {
	if err := checkID(id); err != nil {
		return Summary{}, err
	}
	f, err := os.Open(s.journalPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Summary{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Summary{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Summary{}, err
	}
	size := st.Size()

	if m, ok := readMeta(s.metaPath(id)); ok && m.Size <= size && lineStartsAt(f, m.Size) {
		sum := m.Summary
		sum.ID = id
		if m.Size < size {
			// Catch up with what was appended since the index was written.
			if _, err := scanJournal(io.NewSectionReader(f, m.Size, size-m.Size), m.Size, id, s.log, sum.fold); err != nil {
				return Summary{}, err
			}
		}
		return sum, nil
	}

	// No usable index: rebuild it from the whole journal.
	sum := Summary{ID: id}
	info, err := scanJournal(io.NewSectionReader(f, 0, size), 0, id, s.log, sum.fold)
	if err != nil {
		return Summary{}, err
	}
	if info.tail == 0 && info.end > 0 {
		// The index is consistent whoever else writes one: it covers exactly info.end bytes.
		if err := writeMeta(s.metaPath(id), info.end, sum); err != nil {
			s.log.Warn("store: cannot write a session's meta index", "session", id, "err", err)
		}
	}
	return sum, nil
}

// lineStartsAt reports whether off is the start of a line of f (the byte before it is '\n').
func lineStartsAt(f *os.File, off int64) bool {
	var b [1]byte
	n, err := f.ReadAt(b[:], off-1)
	return n == 1 && err == nil && b[0] == '\n'
}
