package store

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
)

// Checkpoints keeps, for one session on one workspace, the state of every file a turn changed
// before its first change (the pre-image) and after its last (the post-image), so the turn can be
// reverted. It needs no git and never touches the workspace's .git: pre-images live in the state
// directory (checkpoints/objects, content-addressed), one manifest per turn beside them.
//
// What is covered: calls whose tool declares tools.AccessWrite with the paths it changes
// (tools.PermissionMetadata), through Middleware, or any code that calls BeforeWrite/AfterWrite.
// Commands (bash) and MCP servers declare no paths: the change sets they apply are checkpointed
// through the tools.ChangeRecorder the middleware gives every call.
//
// The post-image is what is on disk right after the call. A write that goes to an editor's buffer
// (fsafe's Writer, for documents open in the editor) reaches the disk only when the user saves, so
// the turn's post-image equals its pre-image: Revert reports such a file as unchanged and leaves
// it alone (undo it in the editor); once saved, the file counts as changed since the turn.
//
// It is safe for concurrent use. Keep one Checkpoints per session (with the session): two for the
// same session would overwrite each other's manifests.
type Checkpoints struct {
	st       *Store
	ws       *fsafe.Workspace
	session  string
	queue    *tools.MutationQueue
	maxBytes int64

	mu  sync.Mutex
	cur *manifest // the turn begun last; nil before Begin
	// dirty: cur holds post-images not yet saved. Each is covered by a durable intent record
	// (Intend), so a crash before the save loses nothing Revert needs; the manifest is saved with
	// the next change, at the turn's end, or before Turns reads the manifests.
	dirty bool
	// intents is the open intent log of the turn intentsTurn (appendIntent), kept open for the
	// turn so that an edit costs one write and one fsync there, not an open and a close too;
	// closed at the turn's end and when another turn begins.
	intents     *os.File
	intentsTurn string
}

// CheckpointOptions tune Checkpoints. Every field is optional.
type CheckpointOptions struct {
	// Queue serializes Revert's writes with the tools' writes: pass the queue given to
	// fsafe.Options. Nil: Revert does not wait for running writes (the daemon should not revert
	// while a turn runs anyway).
	Queue *tools.MutationQueue
	// MaxFileBytes is the largest file whose pre-image is kept; a write to a larger file fails
	// (fsafe refuses to change files over its WriteBytes limit anyway). Default 64 MiB.
	MaxFileBytes int64
}

// Errors of Checkpoints.
var (
	// ErrNoTurn is returned by BeforeWrite and AfterWrite before Begin.
	ErrNoTurn = errors.New("store: no turn begun for checkpoints")
	// ErrNoCheckpoint is returned by Revert for a turn that changed no file.
	ErrNoCheckpoint = errors.New("store: the turn changed no files")
	// ErrAlreadyReverted is returned by Revert for a turn reverted before (with that revert's
	// result).
	ErrAlreadyReverted = errors.New("store: the turn was already reverted")
)

// Reasons a file is skipped by Revert.
const (
	ReasonChanged    = "changed since the turn (by you or another program); left as it is"
	ReasonUnrecorded = "agentd stopped before it recorded this file's new content, so it cannot tell the turn's version from a later change; left as it is"
	ReasonGitDir     = "inside a .git directory: agentd never keeps or restores files there; check it yourself"
	ReasonNotRegular = "not a regular file before the turn; only regular files are kept"
)

// RevertResult is the outcome of a revert. Paths are workspace-relative (fsafe.Path.Rel).
type RevertResult struct {
	Turn string `json:"turn"`
	// Restored lists the files put back as they were before the turn (deleted, for files the
	// turn created).
	Restored []string `json:"restored"`
	// Unchanged lists the files that were already as before the turn (nothing to do).
	Unchanged []string `json:"unchanged,omitzero"`
	// Skipped lists the files left alone, with the reason.
	Skipped []Skip `json:"skipped"`
	// Time is when the revert ran.
	Time time.Time `json:"time"`
}

// Skip is a file Revert left alone.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// TurnInfo describes a turn that has a checkpoint.
type TurnInfo struct {
	ID      string
	Created time.Time
	// Files are the workspace-relative paths the turn changed.
	Files []string
	// Reverted is set once the turn was reverted.
	Reverted *RevertResult
}

// manifest is checkpoints/<session>/<turn>.json.
type manifest struct {
	Version  int           `json:"version"`
	Session  string        `json:"session"`
	Turn     string        `json:"turn"`
	Created  time.Time     `json:"created"`
	Updated  time.Time     `json:"updated"`
	Files    []*fileRecord `json:"files"`
	Reverted *RevertResult `json:"reverted,omitzero"`
	// IntentLog is how many records of the turn's intent log (<turn>.intents, see Intend) this
	// manifest already accounts for; loading merges the later ones into Intended.
	IntentLog int `json:"intentLog,omitzero"`
}

const manifestVersion = 1

// fileRecord is one file a turn changed.
type fileRecord struct {
	Path string `json:"path"` // canonical absolute
	Rel  string `json:"rel"`
	Pre  image  `json:"pre"`
	// Post is nil until AfterWrite recorded it.
	Post *image `json:"post,omitzero"`
	// Intended are the SHA-256 (hex) of contents a write was about to put on disk since Post
	// was last recorded (Intend, before the write): if agentd dies between the write and
	// AfterWrite, a file holding one of them is as the turn left it.
	Intended []string `json:"intended,omitzero"`
	// NotKept says why no pre-image was kept; Revert skips the file with this reason.
	NotKept string `json:"notKept,omitzero"`
}

// image is the state of a file at one moment.
type image struct {
	Exists bool `json:"exists"`
	// Other names what is there when it is not a regular file ("directory", "symbolic link", …).
	Other  string      `json:"other,omitzero"`
	SHA256 string      `json:"sha256,omitzero"` // content hash of a regular file (its object name)
	Size   int64       `json:"size,omitzero"`
	Mode   fs.FileMode `json:"mode,omitzero"` // permission bits
}

func (a image) same(b image) bool {
	return a.Exists == b.Exists && a.Other == b.Other && a.SHA256 == b.SHA256
}

// Checkpoints returns the checkpoints of a session on a workspace.
func (s *Store) Checkpoints(ws *fsafe.Workspace, sessionID string, opt CheckpointOptions) (*Checkpoints, error) {
	if err := checkID(sessionID); err != nil {
		return nil, err
	}
	if ws == nil {
		return nil, errors.New("store: checkpoints need a workspace")
	}
	if opt.MaxFileBytes <= 0 {
		opt.MaxFileBytes = 64 << 20
	}
	return &Checkpoints{st: s, ws: ws, session: sessionID, queue: opt.Queue, maxBytes: opt.MaxFileBytes}, nil
}

// Begin starts the checkpoint of a turn: later BeforeWrite/AfterWrite calls belong to it. Nothing
// is written until the turn changes a file. Beginning a turn that already has a checkpoint (a turn
// resumed after a crash) continues it.
func (c *Checkpoints) Begin(turnID string) error {
	if turnID == "" {
		return errors.New("store: empty turn ID")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
	c.closeIntentsLocked()
	m, err := c.loadManifest(turnID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		now := time.Now().UTC()
		m = &manifest{Version: manifestVersion, Session: c.session, Turn: turnID, Created: now, Updated: now}
	case err != nil:
		// Keep the damaged manifest aside (it may name pre-images worth recovering by hand) and
		// start afresh.
		p := c.manifestPath(turnID)
		aside := p + ".damaged-" + time.Now().UTC().Format("20060102T150405")
		if rerr := os.Rename(p, aside); rerr != nil {
			return fmt.Errorf("store: checkpoint of turn %s is unreadable (%v) and cannot be moved aside: %w", turnID, err, rerr)
		}
		c.st.log.Warn("store: moved an unreadable checkpoint manifest aside", "path", aside, "err", err)
		now := time.Now().UTC()
		m = &manifest{Version: manifestVersion, Session: c.session, Turn: turnID, Created: now, Updated: now}
	}
	c.cur = m
	return nil
}

// Observe begins a turn's checkpoint on agent.TurnStart; feed it the session's events (or call
// Begin yourself).
func (c *Checkpoints) Observe(e agent.Event) {
	switch e := e.(type) {
	case agent.TurnStart:
		if err := c.Begin(e.TurnID); err != nil {
			c.st.log.Error("store: cannot begin a turn's checkpoint", "session", c.session, "turn", e.TurnID, "err", err)
		}
	case agent.TurnEnd:
		c.mu.Lock()
		c.flushLocked()
		c.closeIntentsLocked()
		c.mu.Unlock()
	}
}

// flushLocked saves the current manifest if it holds unsaved post-images. c.mu is held. A failure
// is logged: the intent log still covers those files.
func (c *Checkpoints) flushLocked() {
	if !c.dirty || c.cur == nil {
		return
	}
	if err := c.saveManifest(c.cur); err != nil {
		c.st.log.Warn("store: cannot save a turn's checkpoint manifest; its intent log covers it", "session", c.session, "turn", c.cur.Turn, "err", err)
	}
}

// BeforeWrite keeps the pre-image of the file at absPath (its content, or the fact that it does
// not exist) before the turn's first change to it; later calls for the same file in the same turn
// do nothing. It returns once the pre-image and the manifest naming it are durable. A file inside
// a .git directory, or something that is not a regular file, is recorded without a pre-image (Revert
// reports it). An error means the pre-image could not be kept: do not write.
func (c *Checkpoints) BeforeWrite(absPath string) error {
	if c.known(absPath) {
		return nil // the turn's first change of this file kept it already
	}
	p, err := c.ws.Resolve(absPath)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.cur
	if m == nil {
		return ErrNoTurn
	}
	if m.file(p.Abs()) != nil {
		return nil
	}
	rec := &fileRecord{Path: p.Abs(), Rel: p.Rel()}
	c.st.objMu.RLock()
	defer c.st.objMu.RUnlock()
	// The pre-image object and the manifest naming it are made durable in parallel (each: a
	// temporary file's fsync, then its directory's): both are before this returns, so before
	// the file is replaced. A crash in between leaves at worst a manifest naming an object that
	// is not there for a file that was not changed, which Revert reports as unchanged.
	var objStored chan error
	if inGitDir(p.Rel()) {
		rec.NotKept = ReasonGitDir
	} else {
		img, data, err := readState(p, c.maxBytes)
		if tools.TypeOf(err, "") == tools.Oversized {
			return tools.Errorf(tools.Oversized, "%s is larger than %d bytes, the most a checkpoint keeps",
				p.Rel(), c.maxBytes)
		}
		if err != nil {
			return err
		}
		switch {
		case img.Other != "":
			rec.Pre, rec.NotKept = img, ReasonNotRegular
		case img.Exists:
			objStored = make(chan error, 1)
			go func() { objStored <- c.st.putObject(img.SHA256, data) }()
			rec.Pre = img
		}
	}
	objErr := func() error {
		if objStored == nil {
			return nil
		}
		if err := <-objStored; err != nil {
			return fmt.Errorf("store: keep the content of %s: %w", p.Rel(), err)
		}
		return nil
	}
	m.Files = append(m.Files, rec)
	if m.Reverted != nil {
		// The turn writes again after it was reverted (a turn resumed after a crash): it can be
		// reverted again. Files already restored now count as unchanged.
		m.Reverted = nil
	}
	// The intent log exists before the manifest naming the file is saved: the manifest's
	// directory fsync makes both entries durable, so Intend needs one fsync per record.
	if err := c.ensureIntentLog(m.Turn); err != nil {
		objErr()
		m.Files = m.Files[:len(m.Files)-1]
		return fmt.Errorf("store: save checkpoint: %w", err)
	}
	if err := c.saveManifest(m); err != nil {
		objErr()
		m.Files = m.Files[:len(m.Files)-1]
		return err
	}
	if err := objErr(); err != nil {
		// The saved manifest names a pre-image that is not kept: take the file out again (the
		// call fails and the file is not written, so a manifest still naming it only says that
		// the file is unchanged).
		m.Files = m.Files[:len(m.Files)-1]
		if serr := c.saveManifest(m); serr != nil {
			c.st.log.Warn("store: cannot save a turn's checkpoint manifest", "session", c.session, "turn", m.Turn, "err", serr)
		}
		return err
	}
	return nil
}

// AfterWrite records the post-image of the file at absPath: what is on disk now. The last call of
// the turn wins. It must follow BeforeWrite for the same file in the same turn.
func (c *Checkpoints) AfterWrite(absPath string) error {
	p, err := c.ws.Resolve(absPath)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.cur
	if m == nil {
		return ErrNoTurn
	}
	rec := m.file(p.Abs())
	if rec == nil {
		return fmt.Errorf("store: AfterWrite(%s) without BeforeWrite in turn %s", p.Rel(), m.Turn)
	}
	if rec.NotKept != "" {
		return nil
	}
	img, _, err := readState(p, c.maxBytes)
	if err != nil {
		return err
	}
	if rec.Post != nil && rec.Post.same(img) && len(rec.Intended) == 0 {
		return nil
	}
	old, oldIntended := rec.Post, rec.Intended
	if img.Exists && img.Other == "" && slices.Contains(rec.Intended, img.SHA256) {
		// What is on disk is a content Intend recorded durably (in the intent log): Revert
		// recognizes it even if this post-image is lost, so it is saved later, without an
		// fsync of its own on every edit.
		rec.Post, rec.Intended = &img, nil
		c.dirty = m == c.cur
		if !c.dirty {
			return c.saveManifest(m)
		}
		return nil
	}
	rec.Post, rec.Intended = &img, nil
	if err := c.saveManifest(m); err != nil {
		rec.Post, rec.Intended = old, oldIntended
		return err
	}
	return nil
}

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

// Middleware returns the kernel middleware that checkpoints write calls: for a call whose tool
// implements tools.PermissionMetadata with Access == tools.AccessWrite, it calls BeforeWrite for
// each of the permission's paths before the call runs (if one fails, the call fails with nothing
// written) and AfterWrite for each after it returns. AfterWrite runs after a failed call too: a
// call that failed part-way may still have changed a file, and one that changed nothing records a
// post-image equal to its pre-image, which Revert leaves alone.
//
// Every call also gets a tools.ChangeRecorder (BeforeWrite and AfterWrite by another name): a
// command's or an MCP server's change set is checkpointed by the same mechanism as an edit
// when it is applied.
func (c *Checkpoints) Middleware() agent.Middleware {
	return func(next agent.ExecFunc) agent.ExecFunc {
		return func(ctx context.Context, t tools.Tool, call *tools.Call) (tools.Output, error) {
			ctx = tools.WithChangeRecorder(ctx, changeRecorder{c})
			pm, ok := t.(tools.PermissionMetadata)
			if !ok {
				return next(ctx, t, call)
			}
			perm := pm.Permission(call)
			if perm.Access != tools.AccessWrite || len(perm.Paths) == 0 {
				return next(ctx, t, call)
			}
			for _, p := range perm.Paths {
				if err := c.BeforeWrite(p); err != nil {
					return tools.Output{}, &tools.Error{Type: tools.TypeOf(err, tools.IOError), Message: fmt.Sprintf(
						"Not run: agentd could not keep a copy of %s to make this change revertible (%v). Nothing was changed.",
						p, err)}
				}
			}
			// Record each content right before it goes to disk, so that a turn killed between
			// the write and AfterWrite still reverts completely.
			ctx = fsafe.WithWriteHook(ctx, func(p fsafe.Path, data []byte) error {
				if !slices.Contains(perm.Paths, p.Abs()) {
					return nil
				}
				return c.Intend(p.Abs(), data)
			})
			out, err := next(ctx, t, call)
			for _, p := range perm.Paths {
				if aerr := c.AfterWrite(p); aerr != nil {
					c.st.log.Error("store: cannot record a file's new content; the turn's revert will skip it",
						"session", c.session, "path", p, "err", aerr)
				}
			}
			return out, err
		}
	}
}

// manifestSaves counts manifest saves (each an fsync), for tests of batching.
var manifestSaves atomic.Int64

// changeRecorder is a call's tools.ChangeRecorder.
type changeRecorder struct{ c *Checkpoints }

func (r changeRecorder) BeforeChange(paths []string) error { return r.c.BeforeWriteAll(paths) }
func (r changeRecorder) AfterChange(paths []string)        { r.c.AfterWriteAll(paths) }

// BeforeWriteAll is BeforeWrite for many files with one manifest save: a command's change set
// can hold thousands of files (a package install), and a save per file would cost an fsync each.
func (c *Checkpoints) BeforeWriteAll(absPaths []string) error {
	var ps []fsafe.Path
	for _, a := range absPaths {
		if c.known(a) {
			continue
		}
		p, err := c.ws.Resolve(a)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.cur
	if m == nil {
		return ErrNoTurn
	}
	c.st.objMu.RLock()
	defer c.st.objMu.RUnlock()
	n0 := len(m.Files)
	fail := func(err error) error {
		m.Files = m.Files[:n0]
		return err
	}
	seen := map[string]bool{}
	for _, f := range m.Files {
		seen[f.Path] = true
	}
	for _, p := range ps {
		if seen[p.Abs()] {
			continue
		}
		seen[p.Abs()] = true
		rec := &fileRecord{Path: p.Abs(), Rel: p.Rel()}
		if inGitDir(p.Rel()) {
			rec.NotKept = ReasonGitDir
		} else {
			img, data, err := readState(p, c.maxBytes)
			if tools.TypeOf(err, "") == tools.Oversized {
				return fail(tools.Errorf(tools.Oversized, "%s is larger than %d bytes, the most a checkpoint keeps", p.Rel(), c.maxBytes))
			}
			if err != nil {
				return fail(err)
			}
			switch {
			case img.Other != "":
				rec.Pre, rec.NotKept = img, ReasonNotRegular
			case img.Exists:
				if err := c.st.putObject(img.SHA256, data); err != nil {
					return fail(fmt.Errorf("store: keep the content of %s: %w", p.Rel(), err))
				}
				rec.Pre = img
			}
		}
		m.Files = append(m.Files, rec)
	}
	if len(m.Files) == n0 {
		return nil
	}
	reverted := m.Reverted
	m.Reverted = nil
	if err := c.ensureIntentLog(m.Turn); err != nil {
		m.Reverted = reverted
		return fail(fmt.Errorf("store: save checkpoint: %w", err))
	}
	if err := c.saveManifest(m); err != nil {
		m.Reverted = reverted
		return fail(err)
	}
	return nil
}

// AfterWriteAll is AfterWrite for many files with one manifest save. Files without a
// BeforeWrite in this turn are skipped; failures are logged (the revert skips such a file).
func (c *Checkpoints) AfterWriteAll(absPaths []string) {
	var ps []fsafe.Path
	for _, a := range absPaths {
		if p, err := c.ws.Resolve(a); err == nil {
			ps = append(ps, p)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.cur
	if m == nil {
		return
	}
	byPath := map[string]*fileRecord{}
	for _, f := range m.Files {
		byPath[f.Path] = f
	}
	changed := false
	for _, p := range ps {
		rec := byPath[p.Abs()]
		if rec == nil || rec.NotKept != "" {
			continue
		}
		img, _, err := readState(p, c.maxBytes)
		if err != nil {
			c.st.log.Error("store: cannot record a file's new content; the turn's revert will skip it",
				"session", c.session, "path", p.Abs(), "err", err)
			continue
		}
		rec.Post, rec.Intended = &img, nil
		changed = true
	}
	if changed {
		if err := c.saveManifest(m); err != nil {
			c.st.log.Error("store: cannot save a turn's checkpoint manifest", "session", c.session, "turn", m.Turn, "err", err)
		}
	}
}

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
