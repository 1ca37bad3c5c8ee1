package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/atomicfile"
)

// Directory and file names under the state directory.
const (
	sessionsDir    = "sessions"
	checkpointsDir = "checkpoints"
	objectsDir     = "objects"
	auditDir       = "audit"

	journalExt = ".jsonl"
	metaExt    = ".meta.json"

	// tmpPrefix starts the name of every temporary file the store writes before a rename.
	tmpPrefix = ".tmp-"
)

// ErrSessionOpen is returned by Create, Resume and Delete when the session already has a writer
// (in this process, or in another agentd holding its lock).
var ErrSessionOpen = errors.New("store: the session is open for writing elsewhere")

// ErrNotFound is returned for a session that does not exist.
var ErrNotFound = errors.New("store: no such session")

// Store is a state directory: sessions, checkpoints and the audit log.
type Store struct {
	dir string
	log *slog.Logger

	mu   sync.Mutex
	open map[string]bool // sessions with a writer in this process

	// objMu orders checkpoint object writes (+ the manifest that references them) against GC:
	// writers hold it shared, GC exclusively, so GC never removes an object a manifest is about
	// to reference.
	objMu sync.RWMutex

	audit *auditWriter
}

// DefaultDir returns agentd's state directory: $XDG_STATE_HOME/agentd, or ~/.local/state/agentd
// when XDG_STATE_HOME is unset or not absolute (the XDG spec says to ignore relative values).
// Open creates it.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "agentd"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("store: no state directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "agentd"), nil
}

// Open opens (creating it 0700 when missing) the state directory dir.
func Open(dir string) (*Store, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("store: the state directory %q is not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	for _, d := range []string{dir, filepath.Join(dir, sessionsDir), filepath.Join(dir, checkpointsDir),
		filepath.Join(dir, checkpointsDir, objectsDir), filepath.Join(dir, auditDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	s := &Store{dir: dir, log: slog.Default(), open: map[string]bool{}}
	s.audit = &auditWriter{dir: filepath.Join(dir, auditDir), log: s.log}
	return s, nil
}

// Dir returns the state directory.
func (s *Store) Dir() string { return s.dir }

// Close closes the audit log. Sessions are closed by their owners.
func (s *Store) Close() error { return s.audit.close() }

func (s *Store) journalPath(id string) string {
	return filepath.Join(s.dir, sessionsDir, id+journalExt)
}

func (s *Store) metaPath(id string) string {
	return filepath.Join(s.dir, sessionsDir, id+metaExt)
}

func (s *Store) objectsPath() string { return filepath.Join(s.dir, checkpointsDir, objectsDir) }

func (s *Store) manifestDir(sessionID string) string {
	return filepath.Join(s.dir, checkpointsDir, sessionID)
}

// claim registers a writer for id in this process.
func (s *Store) claim(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[id] {
		return fmt.Errorf("%w: %s", ErrSessionOpen, id)
	}
	s.open[id] = true
	return nil
}

func (s *Store) release(id string) {
	s.mu.Lock()
	delete(s.open, id)
	s.mu.Unlock()
}

// validID matches session IDs: a file name without separators, never "." or "..", never hidden.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func checkID(id string) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("store: invalid session ID %q", id)
	}
	return nil
}

// NewSessionID returns a new session ID that sorts by creation time: "s-" + the UTC date and time
// + 6 random hex digits, e.g. "s-20261130-142501-1f3a9c".
func NewSessionID() string {
	return "s-" + time.Now().UTC().Format("20060102-150405") + "-" + randomHex(3)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	return hex.EncodeToString(b)
}

// writeFileAtomic replaces path with data: temporary file in the same directory, fsync, rename,
// directory fsync. A reader sees the old content or the new, never a mix.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteWith(path, data, atomicfile.Options{TempPrefix: tmpPrefix, StrictDirSync: true})
}

// syncDir fsyncs a directory so a new or renamed entry in it survives a power loss.
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }
