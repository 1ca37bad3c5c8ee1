// Package changeset applies what a command or an MCP server changed — its change set, read from
// its copy-on-write layer (sandbox.Cmd.Changes) — to the workspace: the allowlisted part
// (fsafe.Ordinary, one list with the file tools) now, recorded for the turn's checkpoint first
// (tools.ChangeRecorder); everything else needs the user's review: what can be shown as a file
// change is proposed (ChangeSet.FollowUps, which the kernel gates like an edit), the rest is
// held, with the reason.
package changeset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentd/agentd/preview"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/sandbox"
)

// CommandChange is one entry of a command's change set (read from its copy-on-write layer) as
// agentd handled it.
type CommandChange struct {
	// Path is shown like the tools show paths: relative to the first root, else absolute.
	Path string `json:"path"`
	// Kind is created, modified, deleted, renamed or mode; Type file, dir, symlink or other.
	Kind string `json:"kind"`
	Type string `json:"type"`
	From string `json:"from,omitzero"`
	// Reason says why a held change was not applied.
	Reason string `json:"reason,omitzero"`
	// Conflict: the workspace's entry changed while the command ran.
	Conflict bool `json:"conflict,omitzero"`
}

// ChangeSet is what became of a command's changes: Applied reached the workspace (checkpointed
// like edits, so the turn reverts them); Proposed need the user's review and are offered as
// file changes (FollowUps: the kernel puts them to the gate, and the call's result says what
// became of each); Held did not reach the workspace and cannot be reviewed as a file change.
type ChangeSet struct {
	Applied  []CommandChange `json:"applied,omitzero"`
	Proposed []CommandChange `json:"proposed,omitzero"`
	Held     []CommandChange `json:"held,omitzero"`

	proposals []proposal
	// lockDir is where the apply locks of the command's workspace roots are
	// (sandbox.Cmd.ApplyLockDir): an accepted proposal is written under its root's lock, after
	// the command's layer was released.
	lockDir string
}

// proposal is a held change of a regular file offered for review: the diff from the
// workspace's file (the editor's buffer when it is open) to the command's version, read from
// the layer before it is released.
type proposal struct {
	change CommandChange
	root   string // the workspace root it is in (sandbox.Change.Root)
	target *fsafe.Target
	diff   *preview.Diff
}

// MaxProposals is the most changes of one change set offered for review, and MaxProposalBytes
// the most content they hold together (in memory until they are decided); the rest are held.
const (
	MaxProposals     = 16
	MaxProposalBytes = 16 << 20
)

// changeApplier decides and applies one change set. Everything it looks at on disk is the
// workspace as it is (the layer's lower layer): nothing of the change set is applied before
// every change was judged.
type changeApplier struct {
	fs *fsafe.FS
	// heads are directories (root-relative, "." the root) that hold a HEAD file, in the
	// workspace or in the change set; headChecked caches the workspace look-ups.
	heads       map[string]bool
	headChecked map[string]bool
	// heldDirs are created directories that were held: what is below them is held too.
	heldDirs []string
}

// Apply applies the allowlisted part of a command's change set under the workspace's apply lock
// and returns what it did. A change set that cannot be read applies nothing. Call it after the
// command ended (or, for a server that keeps running, after each call) and before Release.
func Apply(ctx context.Context, fsys *fsafe.FS, cmd *sandbox.Cmd) (ChangeSet, error) {
	e := &env{fs: fsys}
	if !cmd.Layered() {
		return ChangeSet{}, nil
	}
	unlock, err := cmd.LockApply(ctx)
	if err != nil {
		return ChangeSet{}, err
	}
	defer unlock()
	chs, err := cmd.Changes()
	if err != nil || len(chs) == 0 {
		return ChangeSet{}, err
	}
	defer cmd.MarkApplied()
	a := &changeApplier{fs: fsys, heads: map[string]bool{}, headChecked: map[string]bool{}}
	for _, ch := range chs {
		if ch.Kind != sandbox.Deleted && strings.EqualFold(path.Base(ch.Path), "HEAD") {
			a.heads[ch.Root+"\x00"+path.Dir(ch.Path)] = true
		}
	}
	out := ChangeSet{lockDir: cmd.ApplyLockDir()}
	var apply []sandbox.Change
	held := func(ch sandbox.Change, reason string) {
		if ch.Type == sandbox.TypeDir && ch.Kind == sandbox.Created {
			a.heldDirs = append(a.heldDirs, ch.Root+"\x00"+ch.Path)
		}
		out.Held = append(out.Held, e.commandChange(ch, reason))
	}
	for _, ch := range chs {
		if reason := a.verdict(ch); reason != "" {
			if a.propose(ctx, e, &out, ch, reason) {
				continue
			}
			held(ch, reason)
			continue
		}
		apply = append(apply, ch)
	}
	// A held created directory with a proposed file below it is made by accepting that file:
	// the file's proposal speaks for it.
	out.Held = slices.DeleteFunc(out.Held, func(h CommandChange) bool {
		return h.Type == sandbox.TypeDir && h.Kind == string(sandbox.Created) &&
			slices.ContainsFunc(out.Proposed, func(p CommandChange) bool { return strings.HasPrefix(p.Path, h.Path+"/") })
	})
	// A directory is deleted only when everything below it was.
	for i := len(apply) - 1; i >= 0; i-- {
		ch := apply[i]
		if ch.Kind != sandbox.Deleted || ch.Type != sandbox.TypeDir {
			continue
		}
		if slices.ContainsFunc(out.Held, func(h CommandChange) bool {
			return strings.HasPrefix(h.Path, e.showRel(ch.Root, ch.Path)+"/")
		}) {
			held(ch, "not everything in it could be deleted (see the other changes)")
			apply = slices.Delete(apply, i, i+1)
		}
	}
	if len(apply) == 0 {
		return out, nil
	}
	var files []string
	for _, ch := range apply {
		if ch.Type == sandbox.TypeDir {
			continue
		}
		files = append(files, filepath.Join(ch.Root, filepath.FromSlash(ch.Path)))
		if ch.From != "" {
			files = append(files, filepath.Join(ch.Root, filepath.FromSlash(ch.From)))
		}
	}
	rec := tools.ChangeRecorderFrom(ctx)
	if rec != nil {
		if err := rec.BeforeChange(files); err != nil {
			for _, ch := range apply {
				held(ch, fmt.Sprintf("agentd could not keep a copy to make it revertible (%v)", err))
			}
			return out, nil
		}
		defer rec.AfterChange(files)
	}
	for _, ch := range apply {
		if err := e.applyOne(ctx, ch); err != nil {
			held(ch, fmt.Sprintf("applying it failed: %v", err))
			continue
		}
		out.Applied = append(out.Applied, e.commandChange(ch, ""))
	}
	return out, nil
}

// propose offers a held change for review when it can be shown as a file change: a regular
// file created or modified (a conflict included) whose new content is text within the write
// limit, in a workspace file that is absent or a regular file. It reports whether it did.
func (a *changeApplier) propose(ctx context.Context, e *env, out *ChangeSet, ch sandbox.Change, reason string) bool {
	if ch.Type != sandbox.TypeFile || (ch.Kind != sandbox.Created && ch.Kind != sandbox.Modified) ||
		ch.Mode&(fs.ModeSetuid|fs.ModeSetgid) != 0 || ch.Source == "" || len(out.proposals) >= MaxProposals ||
		ch.Size > e.fs.Limits().WriteBytes {
		return false
	}
	held := 0
	for _, p := range out.proposals {
		held += len(p.diff.Old) + len(p.diff.New)
	}
	if int64(held)+2*ch.Size > MaxProposalBytes {
		return false
	}
	data, err := os.ReadFile(ch.Source)
	if err != nil || int64(len(data)) > e.fs.Limits().WriteBytes || !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return false
	}
	if a.repositoryShape(ch.Root, ch.Path) {
		// A repository is many files that only work together: it is not offered file by file.
		return false
	}
	t, err := e.fs.PrepareReview(ctx, filepath.Join(ch.Root, filepath.FromSlash(ch.Path)), ch.Mode)
	if err != nil {
		return false
	}
	if strings.HasPrefix(reason, "it is inside ") {
		// The directory it is in was held for its own reason: say that one.
		if r := a.pathVerdict(ch, ch.Path, false); r != "" {
			reason = r
		}
	}
	// The diff does not show permission bits: the reason does.
	switch {
	case !t.Exists && ch.Mode.Perm()&0o111 != 0:
		reason += fmt.Sprintf("; it is created executable (%v)", ch.Mode.Perm())
	case t.Exists:
		if fi, err := os.Lstat(t.Path.Abs()); err == nil && ch.Mode.Perm() != 0 && fi.Mode().Perm() != ch.Mode.Perm() {
			reason += fmt.Sprintf("; the command also changed its permissions to %v, which accepting does not apply", ch.Mode.Perm())
		}
	}
	c := e.commandChange(ch, reason)
	d := preview.ComputeFile(c.Path, string(t.Content), t.Exists, string(data))
	if len(d.Hunks) == 0 {
		return true // the workspace already has exactly this
	}
	out.Proposed = append(out.Proposed, c)
	out.proposals = append(out.proposals, proposal{change: c, root: ch.Root, target: t, diff: d})
	return true
}

// Once keeps a server that keeps running (its layer keeps what was not applied, and each call
// reads it again) from offering the same change twice: a proposal whose path and content were
// offered before (keys in offered, which it updates) is held instead. Call it before Text.
func (s *ChangeSet) Once(offered map[string]bool) {
	var keep []proposal
	s.Proposed = s.Proposed[:0]
	for _, p := range s.proposals {
		sum := sha256.Sum256([]byte(p.diff.New))
		key := p.target.Path.Abs() + "\x00" + hex.EncodeToString(sum[:])
		if offered[key] {
			c := p.change
			c.Reason = "it was offered for review after an earlier call and not accepted (" + c.Reason + ")"
			s.Held = append(s.Held, c)
			continue
		}
		offered[key] = true
		keep = append(keep, p)
		s.Proposed = append(s.Proposed, p.change)
	}
	s.proposals = keep
}

// FollowUps are the proposed changes as the kernel gates them (tools.FollowUp): each a file
// change that asks in every approval mode (Permission.Protected), named as coming from origin
// ("the command `npm install`"). Accepted, it is written (the accepted hunks, or the user's
// own version) through fsafe, atomically, after the turn's checkpoint kept the file's
// pre-image, and only if the workspace's file is still what the diff was computed from: that
// check and the write are made under the apply lock of the file's workspace root (the one
// Apply takes, shared with other agentd processes), taken only then — never while the user
// decides.
func (s ChangeSet) FollowUps(fsys *fsafe.FS, origin string) []tools.FollowUp {
	var out []tools.FollowUp
	for _, p := range s.proposals {
		perm := p.target.Path.Permission(tools.AccessWrite)
		perm.Protected = true
		perm.Reason = fmt.Sprintf("%s changed %s, and it needs your review: %s", origin, p.change.Path, p.change.Reason)
		sum := sha256.Sum256([]byte(p.diff.New))
		base := "absent"
		if p.target.Exists {
			base = p.target.Base.HashHex()
		}
		out = append(out, tools.FollowUp{
			Subject: "Review of the " + p.change.describe(),
			// The path first: an editor's lens line is cut at its end (Accept/Reject follow it).
			Label: fmt.Sprintf("%s, from %s", p.change.Path, origin),
			Preview: &tools.Preview{Summary: p.diff.Summary(), Diff: p.diff,
				Binding: "file:" + p.target.Path.Abs() + ":" + base + ":" + hex.EncodeToString(sum[:])},
			Permission: perm,
			Apply: func(ctx context.Context, a *tools.Approval) (string, error) {
				return p.apply(ctx, fsys, s.lockDir, a)
			},
		})
	}
	return out
}

// apply writes an accepted proposal, under the apply lock of its workspace root in lockDir.
func (p proposal) apply(ctx context.Context, fsys *fsafe.FS, lockDir string, a *tools.Approval) (string, error) {
	content, what := p.diff.New, "accepted by the user and written"
	switch {
	case a != nil && a.Content != nil && *a.Content != p.diff.New:
		content, what = *a.Content, "accepted by the user, who edited it first: the user's version was written, not the command's"
	case a != nil && a.Hunks != nil:
		c, outcome, err := p.diff.Apply(a.Hunks)
		if err != nil {
			return "", err
		}
		if len(outcome.Applied) == 0 {
			return "", tools.Errorf(tools.RejectedByUser, "the user accepted none of its hunks")
		}
		content = c
		if len(outcome.Rejected) > 0 {
			what = "accepted in part by the user and written: " + outcome.Describe(p.diff)
		}
	}
	if a != nil {
		if r := strings.TrimSpace(tools.HunkReasonLines(p.diff, a.HunkReasons)); r != "" {
			what += "\n" + r
		}
		if a.Note != "" {
			what += "\nThe user's note: " + a.Note
		}
	}
	// Another process's change set (or another call's) applies to this root either before the
	// base check or after the write, never between them.
	unlock, err := sandbox.LockApplyRoots(ctx, lockDir, []string{p.root})
	if err != nil {
		return "", err
	}
	defer unlock()
	abs := p.target.Path.Abs()
	if rec := tools.ChangeRecorderFrom(ctx); rec != nil {
		if err := rec.BeforeChange([]string{abs}); err != nil {
			return "", fmt.Errorf("agentd could not keep a copy to make it revertible (%v)", err)
		}
		defer rec.AfterChange([]string{abs})
	}
	if _, err := fsys.Commit(ctx, p.target, []byte(content)); err != nil {
		return "", err
	}
	return what, nil
}

func (e *env) applyOne(ctx context.Context, ch sandbox.Change) error {
	op := fsafe.ApplyOp{Root: ch.Root, Rel: ch.Path, Src: ch.Source, Target: ch.Target, Mode: ch.Mode}
	switch {
	case ch.Kind == sandbox.Deleted:
		op.Kind = fsafe.ApplyRemove
	case ch.Kind == sandbox.ModeChanged:
		op.Kind = fsafe.ApplyChmod
	case ch.Type == sandbox.TypeDir:
		op.Kind = fsafe.ApplyMkdir
	case ch.Type == sandbox.TypeSymlink:
		op.Kind = fsafe.ApplySymlink
	default:
		op.Kind = fsafe.ApplyFile
	}
	if err := e.fs.Apply(ctx, op); err != nil {
		return err
	}
	if ch.Kind == sandbox.Renamed {
		return e.fs.Apply(ctx, fsafe.ApplyOp{Kind: fsafe.ApplyRemove, Root: ch.Root, Rel: ch.From})
	}
	return nil
}

// verdict is "" when the change applies without review, else why not. It is the allowlist of
// fsafe.Ordinary (one list with the file tools), plus what only a change set can do: git data
// below an existing .git directory is ordinary, a new repository shape is not.
func (a *changeApplier) verdict(ch sandbox.Change) string {
	switch {
	case ch.Conflict:
		return "the file also changed in the workspace while the command ran (you, an editor or another program): the command's version was not written over it"
	case ch.Type == sandbox.TypeOther:
		return "a FIFO, socket or device file: agentd applies only files, directories and symbolic links"
	case ch.Mode&(fs.ModeSetuid|fs.ModeSetgid) != 0:
		return "set-user-ID or set-group-ID permission bits"
	case ch.Type == sandbox.TypeSymlink && !linkStaysInside(ch.Path, ch.Target):
		return "a symbolic link to " + ch.Target + ", which is outside the workspace root"
	}
	for _, p := range []string{ch.Path, ch.From} {
		if p == "" {
			continue
		}
		if r := a.pathVerdict(ch, p, true); r != "" {
			return r
		}
	}
	if ch.Kind != sandbox.Deleted && ch.Type == sandbox.TypeFile && a.fs.Unsaved(filepath.Join(ch.Root, filepath.FromSlash(ch.Path))) {
		return "the file is open in the editor with unsaved changes"
	}
	return ""
}

// pathVerdict is verdict's judgement of one path of the change; inHeld also holds what is
// inside a created directory that was held.
func (a *changeApplier) pathVerdict(ch sandbox.Change, p string, inHeld bool) string {
	key := ch.Root + "\x00" + p
	for _, d := range a.heldDirs {
		if inHeld && strings.HasPrefix(key, d+"/") {
			return "it is inside " + strings.TrimPrefix(d, ch.Root+"\x00") + ", which was not applied"
		}
	}
	if gitAt := gitComponent(p); gitAt >= 0 {
		comps := strings.Split(p, "/")
		gitDir := strings.Join(comps[:gitAt+1], "/")
		if fi, err := os.Lstat(filepath.Join(ch.Root, filepath.FromSlash(gitDir))); err != nil || !fi.IsDir() {
			return gitDir + " is a new git repository: git would obey its configuration, which can run programs"
		}
		if ch.Type == sandbox.TypeSymlink {
			return "a symbolic link inside " + gitDir + ": git data is files and directories"
		}
		if ok, why := fsafe.OrdinaryGitData(p); !ok {
			return why
		}
		return ""
	}
	if ok, why := fsafe.Ordinary(p); !ok {
		return why
	}
	for d := path.Dir(p); ; d = path.Dir(d) {
		if a.holdsHead(ch.Root, d) {
			return fmt.Sprintf("it is inside %s, which holds a HEAD file: git treats such a directory as a repository, whose configuration can run programs", d)
		}
		if d == "." {
			break
		}
	}
	return ""
}

// repositoryShape reports whether p belongs to a git repository the change set creates: below a
// .git that is not in the workspace, a HEAD file, or below a directory that holds one.
func (a *changeApplier) repositoryShape(root, p string) bool {
	if gitAt := gitComponent(p); gitAt >= 0 {
		gitDir := strings.Join(strings.Split(p, "/")[:gitAt+1], "/")
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(gitDir)))
		return err != nil || !fi.IsDir()
	}
	if strings.EqualFold(path.Base(p), "HEAD") {
		return true
	}
	for d := path.Dir(p); ; d = path.Dir(d) {
		if a.holdsHead(root, d) {
			return true
		}
		if d == "." {
			return false
		}
	}
}

// holdsHead reports whether the directory dir of root holds a HEAD file (git's test for a
// repository directory), in the workspace or in the change set.
func (a *changeApplier) holdsHead(root, dir string) bool {
	key := root + "\x00" + dir
	if a.heads[key] {
		return true
	}
	if !a.headChecked[key] {
		a.headChecked[key] = true
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(dir), "HEAD")); err == nil {
			a.heads[key] = true
		}
	}
	return a.heads[key]
}

// gitComponent is the index of the first ".git" component of p (case-folded), or -1.
func gitComponent(p string) int {
	for i, c := range strings.Split(p, "/") {
		if strings.EqualFold(c, ".git") {
			return i
		}
	}
	return -1
}

// linkStaysInside reports whether a symbolic link at rel with this target points inside the root.
func linkStaysInside(rel, target string) bool {
	if target == "" || path.IsAbs(target) {
		return false
	}
	t := path.Clean(path.Join(path.Dir(rel), target))
	return t != ".." && !strings.HasPrefix(t, "../")
}

// env is the workspace a change set applies to.
type env struct{ fs *fsafe.FS }

func (e *env) showRel(root, rel string) string {
	if roots := e.fs.Workspace().Roots(); len(roots) > 0 && root == roots[0] {
		return rel
	}
	return filepath.Join(root, filepath.FromSlash(rel))
}

func (e *env) commandChange(ch sandbox.Change, reason string) CommandChange {
	c := CommandChange{Path: e.showRel(ch.Root, ch.Path), Kind: string(ch.Kind), Type: ch.Type, Reason: reason, Conflict: ch.Conflict}
	if ch.From != "" {
		c.From = e.showRel(ch.Root, ch.From)
	}
	return c
}

// Text renders the change set for the model.
func (s ChangeSet) Text() string {
	var b strings.Builder
	if len(s.Applied) > 0 {
		b.WriteString("[Changes applied to the workspace:")
		for i, c := range s.Applied {
			if i == 40 {
				fmt.Fprintf(&b, " … and %d more", len(s.Applied)-i)
				break
			}
			b.WriteString(" " + c.describe())
			if i < len(s.Applied)-1 {
				b.WriteByte(',')
			}
		}
		b.WriteString("]\n")
	}
	if len(s.Proposed) > 0 {
		b.WriteString("[Offered to the user for review — agentd applies these only once the user accepts them (what became of each follows):\n")
		for _, c := range s.Proposed {
			fmt.Fprintf(&b, "  %s: %s\n", c.describe(), c.Reason)
		}
		b.WriteString("]\n")
	}
	if len(s.Held) > 0 {
		b.WriteString("[NOT applied — these changes need the user's review, which agentd cannot offer as a file change; the workspace does not have them:\n")
		for i, c := range s.Held {
			if i == 40 {
				fmt.Fprintf(&b, "  … and %d more\n", len(s.Held)-i)
				break
			}
			fmt.Fprintf(&b, "  %s: %s\n", c.describe(), c.Reason)
		}
		b.WriteString("Do not try to make these changes another way; if they are needed, tell the user what and why.]\n")
	}
	return b.String()
}

func (c CommandChange) describe() string {
	kind := c.Kind
	if c.Type == sandbox.TypeDir {
		kind += " directory"
	}
	if c.From != "" {
		return fmt.Sprintf("%s %s → %s", kind, c.From, c.Path)
	}
	return kind + " " + c.Path
}
