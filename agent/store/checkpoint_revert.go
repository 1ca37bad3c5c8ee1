package store

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
)

// Turns lists the session's turns that changed files on disk, latest first (a turn whose writes
// all left their files as they were, or went to editor buffers, is not listed). Pick the first
// entry whose Reverted is nil to "revert the last turn".
func (c *Checkpoints) Turns() ([]TurnInfo, error) {
	c.mu.Lock()
	c.flushLocked()
	c.mu.Unlock()
	dir := c.st.manifestDir(c.session)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: list checkpoints: %w", err)
	}
	var out []TurnInfo
	for _, ent := range ents {
		name := ent.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, tmpPrefix) {
			continue
		}
		m, err := readManifest(filepath.Join(dir, name))
		if err != nil {
			c.st.log.Warn("store: skipping an unreadable checkpoint manifest", "path", filepath.Join(dir, name), "err", err)
			continue
		}
		if !m.changedFiles() && m.Reverted == nil {
			continue
		}
		ti := TurnInfo{ID: m.Turn, Created: m.Created, Reverted: m.Reverted}
		for _, f := range m.Files {
			ti.Files = append(ti.Files, f.Rel)
		}
		out = append(out, ti)
	}
	slices.SortFunc(out, func(a, b TurnInfo) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out, nil
}

// Revert puts back the files the turn changed, each as it was before the turn, but only where the
// file is still exactly as the turn left it (its post-image); a file changed since — by the user,
// another program or a later turn — is skipped and reported, never overwritten. So reverting an
// older turn whose files a later turn changed again skips those files: revert the later turn
// first. A file the turn created is deleted (directories the turn created stay). Restores are
// atomic (fsafe.WriteFile).
//
// The revert is recorded: a second Revert of the turn returns ErrAlreadyReverted with the first
// result. A revert in which a file could not be written (I/O error) is not recorded, so it can be
// retried (files already restored then count as unchanged). Revert is meant for finished turns.
func (c *Checkpoints) Revert(turnID string) (RevertResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var m *manifest
	if c.cur != nil && c.cur.Turn == turnID {
		m = c.cur
	} else {
		var err error
		if m, err = c.loadManifest(turnID); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return RevertResult{Turn: turnID}, fmt.Errorf("%w: %s", ErrNoCheckpoint, turnID)
			}
			return RevertResult{Turn: turnID}, err
		}
	}
	if len(m.Files) == 0 {
		return RevertResult{Turn: turnID}, fmt.Errorf("%w: %s", ErrNoCheckpoint, turnID)
	}
	if m.Reverted != nil {
		return *m.Reverted, fmt.Errorf("%w: %s (at %s)", ErrAlreadyReverted, turnID, m.Reverted.Time.Local().Format(time.DateTime))
	}
	res := RevertResult{Turn: turnID, Restored: []string{}, Skipped: []Skip{}, Time: time.Now().UTC()}
	files := slices.Clone(m.Files)
	slices.SortFunc(files, func(a, b *fileRecord) int { return cmp.Compare(a.Rel, b.Rel) })
	retry := false
	for _, rec := range files {
		outcome, reason, ioFailed := c.revertFile(rec)
		retry = retry || ioFailed
		switch outcome {
		case restored:
			res.Restored = append(res.Restored, rec.Rel)
		case unchanged:
			res.Unchanged = append(res.Unchanged, rec.Rel)
		default:
			res.Skipped = append(res.Skipped, Skip{Path: rec.Rel, Reason: reason})
		}
	}
	if !retry {
		m.Reverted = &res
		if err := c.saveManifest(m); err != nil {
			m.Reverted = nil
			return res, fmt.Errorf("store: the files were reverted but the revert could not be recorded: %w", err)
		}
	}
	return res, nil
}

type outcome int

const (
	skipped outcome = iota
	restored
	unchanged
)

// revertFile reverts one file. ioFailed marks a failure worth retrying.
func (c *Checkpoints) revertFile(rec *fileRecord) (_ outcome, reason string, ioFailed bool) {
	if rec.NotKept != "" {
		return skipped, rec.NotKept, false
	}
	p, err := c.ws.Resolve(rec.Path)
	if err != nil {
		return skipped, "cannot be reached now: " + errText(err), false
	}
	if p.Abs() != rec.Path {
		// A symbolic link now stands on the path (or on a directory above it).
		return skipped, "the path now leads to " + p.Rel() + "; left as it is", false
	}
	if c.queue != nil {
		defer c.queue.Lock(p.Abs())()
	}
	cur, _, err := readState(p, c.maxBytes)
	switch {
	case tools.TypeOf(err, "") == tools.Oversized:
		// Larger than any pre- or post-image we could have recorded.
		return skipped, ReasonChanged, false
	case err != nil:
		return skipped, "cannot be read: " + errText(err), true
	}
	// A content the turn was about to write when agentd stopped before recording the result.
	intended := cur.Exists && cur.Other == "" && slices.Contains(rec.Intended, cur.SHA256)
	switch {
	case intended && cur.same(rec.Pre):
		return unchanged, "", false
	case intended:
		// As the turn left it: restore below.
	case rec.Post == nil:
		if cur.same(rec.Pre) {
			return unchanged, "", false
		}
		return skipped, ReasonUnrecorded, false
	case !cur.same(*rec.Post):
		if cur.same(rec.Pre) {
			return unchanged, "", false
		}
		return skipped, ReasonChanged, false
	case rec.Post.same(rec.Pre):
		return unchanged, "", false
	case cur.Other != "":
		return skipped, "is a " + cur.Other + " now; left as it is", false
	}
	// The file is exactly as the turn left it: put the pre-image back.
	if !rec.Pre.Exists {
		if err := removeFile(p); err != nil {
			return skipped, "cannot be deleted: " + errText(err), true
		}
		return restored, "", false
	}
	data, err := c.st.readObject(rec.Pre.SHA256)
	if err != nil {
		return skipped, "its copy from before the turn is missing or damaged (" + err.Error() + "); left as it is", false
	}
	if _, err := fsafe.WriteFile(p, data, fsafe.WriteOptions{Perm: rec.Pre.Mode, MkdirAll: true}); err != nil {
		return skipped, "cannot be written: " + errText(err), true
	}
	return restored, "", false
}

// errText is an error's message without a *tools.Error's type prefix.
func errText(err error) string {
	var te *tools.Error
	if errors.As(err, &te) {
		return te.Message
	}
	return err.Error()
}

// readState describes what is at p now; data is the content of a regular file.
func readState(p fsafe.Path, maxBytes int64) (image, []byte, error) {
	info, err := fsafe.Stat(p)
	if tools.TypeOf(err, "") == tools.NotFound {
		return image{}, nil, nil
	}
	if err != nil {
		return image{}, nil, err
	}
	if !info.Mode.IsRegular() {
		return image{Exists: true, Other: kindName(info.Mode)}, nil, nil
	}
	data, st, err := fsafe.ReadFile(p, maxBytes)
	if tools.TypeOf(err, "") == tools.NotFound {
		return image{}, nil, nil // removed meanwhile
	}
	if err != nil {
		return image{}, nil, err
	}
	return image{Exists: true, SHA256: st.HashHex(), Size: st.Size, Mode: info.Mode.Perm()}, data, nil
}

func kindName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// removeFile deletes the regular file at p through an os.Root of its workspace root (confined
// like every fsafe operation), then syncs its directory.
func removeFile(p fsafe.Path) error {
	r, err := os.OpenRoot(p.Root())
	if err != nil {
		return err
	}
	defer r.Close()
	fi, err := r.Lstat(p.Rel())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is a %s", p.Rel(), kindName(fi.Mode()))
	}
	if err := r.Remove(p.Rel()); err != nil {
		return err
	}
	if d, err := r.Open(path.Dir(p.Rel())); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// inGitDir reports whether the slash-separated relative path has a ".git" component
// (case-folded: on a case-insensitive file system ".GIT" is the same directory).
func inGitDir(rel string) bool {
	for c := range strings.SplitSeq(rel, "/") {
		if strings.EqualFold(c, ".git") {
			return true
		}
	}
	return false
}

// TurnFile is one file a turn changed, as TurnFiles reports it: enough to show the turn's change
// (pre-image to what the turn left) and to undo it.
type TurnFile struct {
	// Abs is the canonical absolute path, Rel the workspace-relative one.
	Abs, Rel string
	// NotKept says why the file cannot be undone ("" when it can).
	NotKept string
	// PreExists and Pre are the file before the turn (Pre is nil when it did not exist);
	// PreMode its permission bits.
	PreExists bool
	Pre       []byte
	PreMode   fs.FileMode

	post     *image
	intended []string
}

// Untouched reports whether the turn left the file as it was before (or every change to it was
// undone since): such files have nothing to show.
func (f TurnFile) Untouched() bool {
	return f.NotKept == "" && f.post != nil && f.post.same(image{Exists: f.PreExists, SHA256: f.preSum()}) && len(f.intended) == 0
}

func (f TurnFile) preSum() string {
	if !f.PreExists {
		return ""
	}
	sum := sha256.Sum256(f.Pre)
	return hex.EncodeToString(sum[:])
}

// AsLeft reports whether a file whose current state is exists with content hash sum (SHA-256,
// hex) is exactly as the turn left it; reason says why not (the same words Revert uses).
func (f TurnFile) AsLeft(exists bool, sum string) (ok bool, reason string) {
	if f.NotKept != "" {
		return false, f.NotKept
	}
	if exists && slices.Contains(f.intended, sum) {
		return true, ""
	}
	if f.post == nil {
		return false, ReasonUnrecorded
	}
	if f.post.Exists != exists || (exists && f.post.SHA256 != sum) || f.post.Other != "" {
		return false, ReasonChanged
	}
	return true, ""
}

// TurnFiles returns the turn's record and its files with their pre-images, in path order. A turn
// without a checkpoint is an error wrapping ErrNoCheckpoint.
func (c *Checkpoints) TurnFiles(turnID string) (TurnInfo, []TurnFile, error) {
	c.mu.Lock()
	m, err := c.manifestLocked(turnID)
	var files []*fileRecord
	var info TurnInfo
	if err == nil {
		info = TurnInfo{ID: m.Turn, Created: m.Created, Reverted: m.Reverted}
		files = slices.Clone(m.Files)
		for i, f := range files {
			cp := *f
			if f.Post != nil {
				post := *f.Post
				cp.Post = &post
			}
			cp.Intended = slices.Clone(f.Intended)
			files[i] = &cp
		}
	}
	c.mu.Unlock()
	if err != nil {
		return TurnInfo{ID: turnID}, nil, err
	}
	slices.SortFunc(files, func(a, b *fileRecord) int { return cmp.Compare(a.Rel, b.Rel) })
	out := make([]TurnFile, 0, len(files))
	for _, rec := range files {
		info.Files = append(info.Files, rec.Rel)
		tf := TurnFile{Abs: rec.Path, Rel: rec.Rel, NotKept: rec.NotKept, PreExists: rec.Pre.Exists, PreMode: rec.Pre.Mode,
			post: rec.Post, intended: rec.Intended}
		if rec.NotKept == "" && rec.Pre.Exists {
			data, err := c.st.readObject(rec.Pre.SHA256)
			if err != nil {
				tf.NotKept = "its copy from before the turn is missing or damaged (" + err.Error() + "); left as it is"
			}
			tf.Pre = data
		}
		out = append(out, tf)
	}
	return info, out, nil
}

// manifestLocked returns the turn's manifest (the live one for the current turn). c.mu is held.
func (c *Checkpoints) manifestLocked(turnID string) (*manifest, error) {
	if c.cur != nil && c.cur.Turn == turnID {
		return c.cur, nil
	}
	m, err := c.loadManifest(turnID)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(m.Files) == 0) {
		return nil, fmt.Errorf("%w: %s", ErrNoCheckpoint, turnID)
	}
	return m, err
}

// Settle records, after part of a turn's change to the file at absPath was undone, what is on
// disk now as what the turn left: later views of the turn show what remains of its change, and
// a later Revert restores the pre-image from there. Once every file of the turn is back to its
// pre-image, the turn is recorded as reverted (with undone as the files restored).
func (c *Checkpoints) Settle(turnID, absPath string, undone []string) error {
	p, err := c.ws.Resolve(absPath)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.manifestLocked(turnID)
	if err != nil {
		return err
	}
	rec := m.file(p.Abs())
	if rec == nil || rec.NotKept != "" {
		return fmt.Errorf("store: %s is not a file turn %s changed", p.Rel(), turnID)
	}
	img, _, err := readState(p, c.maxBytes)
	if err != nil {
		return err
	}
	rec.Post, rec.Intended = &img, nil
	if m.Reverted == nil {
		all := true
		for _, f := range m.Files {
			if f.NotKept != "" || f.Post == nil || !f.Post.same(f.Pre) || len(f.Intended) > 0 {
				all = false
			}
		}
		if all {
			m.Reverted = &RevertResult{Turn: turnID, Restored: slices.Clone(undone), Skipped: []Skip{}, Time: time.Now().UTC()}
		}
	}
	return c.saveManifest(m)
}

// Remove deletes the regular file at absPath (a file a turn created, when its creation is
// undone), confined to the workspace like every fsafe operation, under the file's mutation lock.
func (c *Checkpoints) Remove(absPath string) error {
	p, err := c.ws.Resolve(absPath)
	if err != nil {
		return err
	}
	if c.queue != nil {
		defer c.queue.Lock(p.Abs())()
	}
	return removeFile(p)
}
