package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
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
