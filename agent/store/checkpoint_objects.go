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
	"time"
)

// changedFiles reports whether the turn may have changed a file on disk: it is false when the
// manifest is empty or every file is known to be as before (a write that failed without writing,
// or one that went to an editor buffer).
func (m *manifest) changedFiles() bool {
	for _, f := range m.Files {
		if f.NotKept != "" || f.Post == nil || !f.Post.same(f.Pre) {
			return true
		}
	}
	return false
}

func (m *manifest) file(abs string) *fileRecord {
	for _, f := range m.Files {
		if f.Path == abs {
			return f
		}
	}
	return nil
}

// manifestPath names a turn's manifest. Turn IDs that are not plain file names are hashed.
func (c *Checkpoints) manifestPath(turnID string) string {
	name := turnID
	if !validID.MatchString(turnID) {
		sum := sha256.Sum256([]byte(turnID))
		name = "@" + hex.EncodeToString(sum[:16])
	}
	return filepath.Join(c.st.manifestDir(c.session), name+".json")
}

func (c *Checkpoints) loadManifest(turnID string) (*manifest, error) {
	m, err := readManifest(c.manifestPath(turnID))
	if err != nil {
		return nil, err
	}
	if m.Turn != turnID {
		return nil, fmt.Errorf("store: manifest %s is for turn %q", c.manifestPath(turnID), m.Turn)
	}
	// Contents recorded by Intend after the manifest was last saved.
	intents, err := c.readIntents(turnID)
	if err != nil {
		return nil, err
	}
	if m.IntentLog < len(intents) {
		for _, r := range intents[m.IntentLog:] {
			if rec := m.file(r.Path); rec != nil && rec.NotKept == "" && !slices.Contains(rec.Intended, r.Sum) {
				rec.Intended = append(rec.Intended, r.Sum)
			}
		}
	}
	m.IntentLog = len(intents)
	return m, nil
}

func readManifest(p string) (*manifest, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("store: manifest %s: %w", p, err)
	}
	if m.Version != manifestVersion {
		return nil, fmt.Errorf("store: manifest %s has version %d", p, m.Version)
	}
	return &m, nil
}

func (c *Checkpoints) saveManifest(m *manifest) error {
	manifestSaves.Add(1)
	m.Updated = time.Now().UTC()
	b, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.st.manifestDir(c.session), 0o700); err != nil {
		return fmt.Errorf("store: save checkpoint: %w", err)
	}
	if err := writeFileAtomic(c.manifestPath(m.Turn), append(b, '\n')); err != nil {
		return fmt.Errorf("store: save checkpoint: %w", err)
	}
	if m == c.cur {
		c.dirty = false
	}
	return nil
}

// putObject stores data under its SHA-256 (hex) unless an object of that name exists already.
// The caller holds objMu shared.
func (s *Store) putObject(sum string, data []byte) error {
	p := filepath.Join(s.objectsPath(), sum)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(data)) {
		return nil
	}
	return writeFileAtomic(p, data)
}

// readObject returns the object named sum, checking its content against the name.
func (s *Store) readObject(sum string) ([]byte, error) {
	if !isObjectName(sum) {
		return nil, fmt.Errorf("invalid object name %q", sum)
	}
	data, err := os.ReadFile(filepath.Join(s.objectsPath(), sum))
	if err != nil {
		return nil, err
	}
	got := sha256.Sum256(data)
	if hex.EncodeToString(got[:]) != sum {
		return nil, errors.New("its content does not match its hash")
	}
	return data, nil
}

func isObjectName(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// GCResult reports what GC removed.
type GCResult struct {
	Removed int
	Bytes   int64
}

// GC removes checkpoint objects that no manifest references (after sessions were deleted), and
// temporary files a crash left behind. A manifest that does not parse still protects every
// SHA-256 it contains. GC waits for running BeforeWrite calls and holds them off meanwhile.
func (s *Store) GC() (GCResult, error) {
	s.objMu.Lock()
	defer s.objMu.Unlock()
	refs := map[string]bool{}
	root := filepath.Join(s.dir, checkpointsDir)
	sessions, err := os.ReadDir(root)
	if err != nil {
		return GCResult{}, fmt.Errorf("store: gc: %w", err)
	}
	for _, sd := range sessions {
		if !sd.IsDir() || sd.Name() == objectsDir {
			continue
		}
		dir := filepath.Join(root, sd.Name())
		ents, err := os.ReadDir(dir)
		if err != nil {
			return GCResult{}, fmt.Errorf("store: gc: %w", err)
		}
		for _, ent := range ents {
			if strings.HasPrefix(ent.Name(), tmpPrefix) || ent.IsDir() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, ent.Name()))
			if err != nil {
				return GCResult{}, fmt.Errorf("store: gc: %w", err)
			}
			var m manifest
			if json.Unmarshal(b, &m) == nil && m.Version == manifestVersion {
				for _, f := range m.Files {
					refs[f.Pre.SHA256] = true
				}
				continue
			}
			for _, word := range bytes.FieldsFunc(b, func(r rune) bool { return !isHexRune(r) }) {
				if len(word) == 2*sha256.Size {
					refs[strings.ToLower(string(word))] = true
				}
			}
		}
	}
	var res GCResult
	objs, err := os.ReadDir(s.objectsPath())
	if err != nil {
		return GCResult{}, fmt.Errorf("store: gc: %w", err)
	}
	for _, o := range objs {
		name := o.Name()
		fi, err := o.Info()
		if err != nil {
			continue
		}
		remove := isObjectName(name) && !refs[name]
		if strings.HasPrefix(name, tmpPrefix) && time.Since(fi.ModTime()) > time.Hour {
			remove = true
		}
		if !remove {
			continue
		}
		if err := os.Remove(filepath.Join(s.objectsPath(), name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return res, fmt.Errorf("store: gc: %w", err)
		}
		res.Removed++
		res.Bytes += fi.Size()
	}
	return res, nil
}

func isHexRune(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F'
}
