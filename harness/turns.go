package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/preview"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
)

// A turn's changes, after the fact: the files a turn changed with their diffs against the turn's
// checkpoint (store.Checkpoints), and undo per file or per hunk. Undo writes like the tools do,
// through fsafe.FS.Commit: atomically on disk, or through the editor (the session's Writer) for
// a document open in it, and only when the file is exactly as the turn left it.

// Errors of the turn-changes API; front ends map them to "invalid params".
var (
	// ErrUnknownSession: the store has no session of that ID (Runtime.Open of a SessionSpec to resume).
	ErrUnknownSession = store.ErrNotFound
	// ErrUnknownTurn: the turn ID names no turn of the session that changed files.
	ErrUnknownTurn = errors.New("unknown turn")
	// ErrUnknownFile: the path names no file the turn changed.
	ErrUnknownFile = errors.New("not a file the turn changed")
	// ErrUnknownHunk: a hunk ID names no hunk of the file's diff.
	ErrUnknownHunk = errors.New("unknown hunk")
)

// TurnSummary is one turn that changed files.
type TurnSummary struct {
	ID       string
	Prompt   string // first line of the user's prompt, at most 80 characters
	Created  time.Time
	Files    int
	Reverted bool
}

// FileChange is one file a turn changed.
type FileChange struct {
	Abs, Rel string
	Status   string // modified | created | deleted
	// Diff runs from the pre-image to what the turn left, or to the current content when the
	// file changed since (ChangedSince, with Reason): undo skips such a file.
	Diff         *preview.Diff
	ChangedSince bool
	Reason       string
}

// UndoResult names the files undone and skipped (workspace-relative).
type UndoResult struct {
	Undone  []string
	Skipped []store.Skip
}

// turnPrompts remembers the prompt of each turn (replayed, then live).
func (h *Harness) observeTurn(e agent.Event) {
	if ts, ok := e.(agent.TurnStart); ok {
		h.turnMu.Lock()
		if h.prompts == nil {
			h.prompts = map[string]string{}
		}
		h.prompts[ts.TurnID] = ts.Words()
		h.turnMu.Unlock()
	}
}

func (h *Harness) promptOf(turnID string) string {
	h.turnMu.Lock()
	p, ok := h.prompts[turnID]
	h.turnMu.Unlock()
	if !ok {
		for _, t := range h.Replayed.Turns {
			if t.ID == turnID {
				p = t.Words()
			}
		}
	}
	return firstLine(p, 80)
}

// firstLine is the first non-empty line of a prompt that is not agentd's own note, cut to max
// characters.
func firstLine(s string, max int) string {
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, undoNotePrefix) {
			continue
		}
		if utf8.RuneCountInString(line) > max {
			r := []rune(line)
			line = string(r[:max-1]) + "…"
		}
		return line
	}
	return ""
}

// Turns lists the session's turns that changed files, newest first.
func (h *Harness) Turns() ([]TurnSummary, error) {
	turns, err := h.checkpoints.Turns()
	if err != nil {
		return nil, err
	}
	out := make([]TurnSummary, 0, len(turns))
	for _, t := range turns {
		out = append(out, TurnSummary{ID: t.ID, Prompt: h.promptOf(t.ID), Created: t.Created, Files: len(t.Files), Reverted: t.Reverted != nil})
	}
	return out, nil
}

// LastChangedTurn is the newest turn that changed files and is not reverted ("" if none).
func (h *Harness) LastChangedTurn() (string, error) {
	turns, err := h.checkpoints.Turns()
	if err != nil {
		return "", err
	}
	for _, t := range turns {
		if t.Reverted == nil {
			return t.ID, nil
		}
	}
	return "", nil
}

// current is the file's present content: the editor's buffer when open, else the disk.
func (h *Harness) current(p fsafe.Path) (st fsafe.Stamp, content []byte, exists bool, err error) {
	max := h.fs.Limits().WriteBytes
	st, content, _, err = fsafe.Sources(fsafe.OverlaySource{Overlay: h.overlay}, fsafe.DiskSource{Max: max}).Stamp(p)
	if err != nil {
		if isNotExist(err) {
			return fsafe.Stamp{}, nil, false, nil
		}
		return fsafe.Stamp{}, nil, false, err
	}
	if st.Size > max {
		return st, nil, true, fmt.Errorf("%s is larger than %d bytes", p.Rel(), max)
	}
	return st, content, true, nil
}

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || tools.TypeOf(err, "") == tools.NotFound
}

// TurnChanges returns the files the turn changed ("" : the newest turn that changed files and
// is not reverted; then an empty turnID when there is none), in path order. Files whose change
// was undone entirely are left out.
func (h *Harness) TurnChanges(turnID string) (string, []FileChange, error) {
	if turnID == "" {
		var err error
		if turnID, err = h.LastChangedTurn(); err != nil || turnID == "" {
			return "", nil, err
		}
	}
	_, files, err := h.checkpoints.TurnFiles(turnID)
	if errors.Is(err, store.ErrNoCheckpoint) {
		return turnID, nil, fmt.Errorf("%w %q: no turn of this session with that ID changed files", ErrUnknownTurn, turnID)
	}
	if err != nil {
		return turnID, nil, err
	}
	out := []FileChange{}
	for _, f := range files {
		if f.Untouched() {
			continue
		}
		fc, _, _ := h.fileChange(f)
		out = append(out, fc)
	}
	return turnID, out, nil
}

// fileChange computes one file's change and returns its current state too.
func (h *Harness) fileChange(f store.TurnFile) (FileChange, *fsafe.Target, fsafe.Path) {
	fc := FileChange{Abs: f.Abs, Rel: f.Rel, Status: "modified"}
	if !f.PreExists {
		fc.Status = "created"
	}
	p, err := h.fs.Resolve(f.Abs)
	if err != nil {
		fc.ChangedSince, fc.Reason = true, "cannot be reached now: "+err.Error()
		fc.Diff = preview.ComputeFile(f.Rel, string(f.Pre), f.PreExists, string(f.Pre))
		return fc, nil, p
	}
	st, content, exists, err := h.current(p)
	if err != nil {
		fc.ChangedSince, fc.Reason = true, "cannot be read: "+err.Error()
		fc.Diff = preview.ComputeFile(f.Rel, string(f.Pre), f.PreExists, string(f.Pre))
		return fc, nil, p
	}
	if !exists {
		fc.Status = "deleted"
	}
	fc.Diff = preview.ComputeFile(f.Rel, string(f.Pre), f.PreExists, string(content))
	fc.Diff.Deleted = !exists
	if ok, reason := f.AsLeft(exists, st.HashHex()); !ok {
		fc.ChangedSince, fc.Reason = true, reason
		return fc, nil, p
	}
	return fc, &fsafe.Target{Path: p, Exists: exists, Content: content, Base: st}, p
}

// UndoTurn undoes the turn's change to the chosen files (absolute paths; restored to their
// pre-image), the chosen hunks (absolute path → hunk IDs of TurnChanges' diff; reversed), or the
// whole turn when both are empty. Files changed since the turn are skipped and named. An unknown
// turn, file or hunk is an error and nothing is changed. The model is told when the next turn
// starts, in a note of its own before the prompt (turnNote). Do not call it while a turn runs.
func (h *Harness) UndoTurn(ctx context.Context, turnID string, files []string, hunks map[string][]string) (UndoResult, error) {
	res := UndoResult{Undone: []string{}, Skipped: []store.Skip{}}
	_, all, err := h.checkpoints.TurnFiles(turnID)
	if errors.Is(err, store.ErrNoCheckpoint) {
		return res, fmt.Errorf("%w %q: no turn of this session with that ID changed files", ErrUnknownTurn, turnID)
	}
	if err != nil {
		return res, err
	}
	byAbs := map[string]store.TurnFile{}
	for _, f := range all {
		byAbs[f.Abs] = f
	}
	type job struct {
		f     store.TurnFile
		hunks []string // nil: the whole file
	}
	var jobs []job
	lookup := func(abs string) (store.TurnFile, error) {
		p, err := h.fs.Resolve(abs)
		if err == nil {
			abs = p.Abs()
		}
		f, ok := byAbs[abs]
		if !ok {
			return f, fmt.Errorf("%w: %s (turn %s)", ErrUnknownFile, abs, turnID)
		}
		return f, nil
	}
	whole := map[string]bool{}
	for _, a := range files {
		f, err := lookup(a)
		if err != nil {
			return res, err
		}
		if !whole[f.Abs] {
			whole[f.Abs] = true
			jobs = append(jobs, job{f: f})
		}
	}
	keys := make([]string, 0, len(hunks))
	for k := range hunks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, a := range keys {
		f, err := lookup(a)
		if err != nil {
			return res, err
		}
		if whole[f.Abs] || len(hunks[a]) == 0 {
			continue
		}
		jobs = append(jobs, job{f: f, hunks: hunks[a]})
	}
	if len(files) == 0 && len(hunks) == 0 {
		for _, f := range all {
			if !f.Untouched() {
				jobs = append(jobs, job{f: f})
			}
		}
	}
	// Check every hunk ID before changing anything.
	type ready struct {
		job
		fc     FileChange
		target *fsafe.Target
		p      fsafe.Path
	}
	var todo []ready
	for _, j := range jobs {
		fc, target, p := h.fileChange(j.f)
		for _, id := range j.hunks {
			if !slices.ContainsFunc(fc.Diff.Hunks, func(hk preview.Hunk) bool { return hk.ID == id }) {
				return res, fmt.Errorf("%w %q in %s (turn %s): list the turn's changes again", ErrUnknownHunk, id, j.f.Rel, turnID)
			}
		}
		todo = append(todo, ready{job: j, fc: fc, target: target, p: p})
	}
	var notes []string
	for _, r := range todo {
		if r.target == nil {
			res.Skipped = append(res.Skipped, store.Skip{Path: r.f.Rel, Reason: r.fc.Reason})
			continue
		}
		if len(r.fc.Diff.Hunks) == 0 {
			continue // nothing left of the turn's change here
		}
		note, err := h.undoFile(ctx, turnID, r.f, r.fc, r.target, r.p, r.hunks)
		if err != nil {
			res.Skipped = append(res.Skipped, store.Skip{Path: r.f.Rel, Reason: err.Error()})
			continue
		}
		res.Undone = append(res.Undone, r.f.Rel)
		notes = append(notes, note)
	}
	if len(notes) > 0 {
		h.turnMu.Lock()
		h.undoNotes = append(h.undoNotes, notes...)
		h.turnMu.Unlock()
	}
	return res, nil
}

// undoFile undoes the whole change to one file (hunks nil) or the chosen hunks, and returns the
// line the model will read about it.
func (h *Harness) undoFile(ctx context.Context, turnID string, f store.TurnFile, fc FileChange, t *fsafe.Target, p fsafe.Path, hunks []string) (string, error) {
	d := fc.Diff
	var keep []string
	if hunks != nil {
		keep = []string{}
		for _, hk := range d.Hunks {
			if !slices.Contains(hunks, hk.ID) {
				keep = append(keep, hk.ID)
			}
		}
		if len(keep) == 0 {
			hunks = nil // every hunk: the whole file
		}
	}
	var note string
	if hunks == nil && !f.PreExists {
		if _, open := h.document(p); open {
			return "", errors.New("is open in the editor: close it there, then undo again (agentd does not delete an open document)")
		}
		if err := h.checkpoints.Remove(f.Abs); err != nil {
			return "", fmt.Errorf("cannot be deleted: %v", err)
		}
		note = fmt.Sprintf("%s: deleted (the turn %s created it)", f.Rel, turnID)
	} else {
		var data string
		if hunks == nil {
			data = string(f.Pre)
			note = fmt.Sprintf("%s: restored as it was before turn %s", f.Rel, turnID)
		} else {
			var err error
			if data, _, err = d.Apply(keep); err != nil {
				return "", fmt.Errorf("the hunks cannot be reversed: %v", err)
			}
			var parts []string
			for i, hk := range d.Hunks {
				if slices.Contains(hunks, hk.ID) {
					parts = append(parts, fmt.Sprintf("hunk %d of %d (%s)", i+1, len(d.Hunks), span(hk)))
				}
			}
			note = fmt.Sprintf("%s: reverted %s of turn %s", f.Rel, strings.Join(parts, ", "), turnID)
		}
		if _, err := h.fs.Commit(ctx, t, []byte(data)); err != nil {
			return "", errors.New(strings.TrimPrefix(err.Error(), "stale: "))
		}
		// The model has not seen the result: it reads the file again before changing it.
		h.fs.State().Forget(p)
	}
	if err := h.checkpoints.Settle(turnID, f.Abs, []string{f.Rel}); err != nil {
		return note, fmt.Errorf("undone, but the undo could not be recorded: %v", err)
	}
	return note, nil
}

// span names the lines a hunk changed in the turn's version ("lines 4–6", "line 4", "after line 3").
func span(hk preview.Hunk) string {
	switch {
	case hk.NewLines == 0:
		return fmt.Sprintf("the lines removed after line %d", hk.NewStart-1)
	case hk.NewLines == 1:
		return fmt.Sprintf("line %d", hk.NewStart)
	}
	return fmt.Sprintf("lines %d–%d", hk.NewStart, hk.NewStart+hk.NewLines-1)
}

func (h *Harness) document(p fsafe.Path) (fsafe.Document, bool) {
	if h.overlay == nil {
		return fsafe.Document{}, false
	}
	return h.overlay.Document(p.Abs())
}

// undoNotePrefix starts the note the model reads after an undo. Journals written before the note
// was a message of its own have it at the start of a turn's prompt (firstLine skips it).
const undoNotePrefix = "[agentd: since your last turn the user undid"

// turnNote is the session's agent.SessionConfig.TurnNote: the note about undone changes ("" when
// nothing was undone since the last turn), which it forgets. The loop calls it as a turn starts
// and puts the note in the history at once, before the turn's prompt, as a message of its own
// marked agent.Message.Note: the model reads it, the prompt stays the user's words, and the
// editors do not show it as the user's.
func (h *Harness) turnNote() string {
	h.turnMu.Lock()
	lines := h.undoNotes
	h.undoNotes = nil
	h.turnMu.Unlock()
	if len(lines) == 0 {
		return ""
	}
	return undoNotePrefix + " some of your changes; the files are now as follows, read them again before changing them: " +
		strings.Join(lines, "; ") + ".]"
}
