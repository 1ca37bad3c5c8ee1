package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Intend records, durably, that the content data is about to be written to the file at absPath
// (after its BeforeWrite in this turn): should agentd die before AfterWrite, Revert still
// recognizes the file as the turn left it. Middleware calls it through fsafe.WithWriteHook right
// before the disk write. An error means the intent could not be recorded: do not write. A path
// without BeforeWrite in this turn, or whose pre-image was not kept, records nothing.
func (c *Checkpoints) Intend(absPath string, data []byte) error {
	if !c.known(absPath) {
		// Not a canonical path BeforeWrite recorded (the middleware passes those): resolve it.
		p, err := c.ws.Resolve(absPath)
		if err != nil {
			return err
		}
		absPath = p.Abs()
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.cur
	if m == nil {
		return ErrNoTurn
	}
	rec := m.file(absPath)
	if rec == nil || rec.NotKept != "" || slices.Contains(rec.Intended, hash) {
		return nil
	}
	if err := c.appendIntent(m, absPath, hash); err != nil {
		return fmt.Errorf("store: record the new content of %s for revert: %w", rec.Rel, err)
	}
	rec.Intended = append(rec.Intended, hash)
	return nil
}

// intentRecord is one line of a turn's intent log, checkpoints/<session>/<turn>.intents: the
// file at Path is about to hold the content whose SHA-256 is Sum. The log is append-only; one
// fsync makes a record durable (the file itself was made durable with the turn's manifest).
// Each record is written as "\n" + JSON + "\n", so a record torn by a crash never glues onto the
// next; lines that do not parse are skipped.
type intentRecord struct {
	Path string `json:"path"`
	Sum  string `json:"sha256"`
}

func (c *Checkpoints) intentLogPath(turnID string) string {
	return strings.TrimSuffix(c.manifestPath(turnID), ".json") + ".intents"
}

// ensureIntentLog creates the turn's intent log if it is missing; the caller makes the directory
// entry durable (saveManifest fsyncs the directory).
func (c *Checkpoints) ensureIntentLog(turnID string) error {
	if err := os.MkdirAll(c.st.manifestDir(c.session), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(c.intentLogPath(turnID), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// appendIntent appends one record to m's intent log and fsyncs it. A log that is missing (a
// manifest written by an older agentd) is created and its directory fsynced.
func (c *Checkpoints) appendIntent(m *manifest, abs, sum string) error {
	b, err := json.Marshal(intentRecord{Path: abs, Sum: sum})
	if err != nil {
		return err
	}
	f, err := c.intentLog(m.Turn)
	if err != nil {
		return err
	}
	line := append(append([]byte{'\n'}, b...), '\n')
	if _, err := f.Write(line); err != nil {
		c.closeIntentsLocked() // the next record reopens the log
		return err
	}
	// Counted once written: a reader may see it even if the fsync fails.
	m.IntentLog++
	if err := f.Sync(); err != nil {
		// Linux reports a writeback error once per open file: never trust this descriptor again.
		c.closeIntentsLocked()
		return err
	}
	return nil
}

// intentLog returns the open intent log of the turn, opening it first if needed. A log that is
// missing (a manifest written by an older agentd) is created and its directory fsynced. c.mu is
// held.
func (c *Checkpoints) intentLog(turnID string) (*os.File, error) {
	if c.intents != nil && c.intentsTurn == turnID {
		return c.intents, nil
	}
	c.closeIntentsLocked()
	p := c.intentLogPath(turnID)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			err = syncDir(filepath.Dir(p))
		}
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, err
	}
	c.intents, c.intentsTurn = f, turnID
	return f, nil
}

// closeIntentsLocked closes the open intent log, if any. c.mu is held.
func (c *Checkpoints) closeIntentsLocked() {
	if c.intents != nil {
		c.intents.Close()
		c.intents, c.intentsTurn = nil, ""
	}
}

// known reports whether absPath is, as given, a file the current turn's checkpoint holds.
func (c *Checkpoints) known(absPath string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur != nil && c.cur.file(absPath) != nil
}

// readIntents returns the records of a turn's intent log (none when it does not exist).
func (c *Checkpoints) readIntents(turnID string) ([]intentRecord, error) {
	b, err := os.ReadFile(c.intentLogPath(turnID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []intentRecord
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		var r intentRecord
		if len(line) == 0 || json.Unmarshal(line, &r) != nil || r.Path == "" || !isObjectName(r.Sum) {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}
