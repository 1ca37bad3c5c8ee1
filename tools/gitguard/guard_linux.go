//go:build linux

package gitguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Guard undoes the git metadata a command planted. See the package documentation.
type Guard struct {
	opts Options

	mu   sync.Mutex
	last map[string]listing // root → the directories its last walk listed
}

// listing returns the last walk's listing of root (nil: none).
func (g *Guard) listing(root string) listing {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last[root]
}

func (g *Guard) keep(root string, l listing) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		g.last = map[string]listing{}
	}
	g.last[root] = l
}

// New returns a guard for opts.
func New(opts Options) *Guard {
	roots := slices.Clone(opts.Roots)
	slices.Sort(roots)
	opts.Roots = slices.Compact(roots)
	return &Guard{opts: opts}
}

// rootLocks serialize guarded commands per workspace root, process-wide: two sessions on one
// workspace must not take a snapshot in the middle of each other's command (the second would
// take the first one's plant for the user's state, and restore it after the first undid it).
var rootLocks sync.Map // root → chan struct{} (capacity 1: full when held)

func lockFor(root string) chan struct{} {
	m, _ := rootLocks.LoadOrStore(root, make(chan struct{}, 1))
	return m.(chan struct{})
}

// Watch is one guarded command: the state before it, and End to check and undo after it.
type Watch struct {
	g      *Guard
	start  time.Time
	took   time.Duration
	roots  []*root
	before []*state
	locked []chan struct{}
	once   sync.Once
	report *Report
}

var seq atomic.Int64

// Begin locks the roots (waiting for another guarded command on them to end, or ctx) and
// records their git metadata. Call it right before the command starts, and End once it has
// ended (exited, timed out, been cancelled or killed) — always.
func (g *Guard) Begin(ctx context.Context) (*Watch, error) {
	w := &Watch{g: g, start: time.Now()}
	for _, rt := range g.opts.Roots {
		m := lockFor(rt)
		select {
		case m <- struct{}{}:
		case <-ctx.Done():
			w.release()
			return nil, fmt.Errorf("git guard: waiting for another command in %s: %w", rt, ctx.Err())
		}
		w.locked = append(w.locked, m)
		r, err := openRoot(rt)
		if err != nil {
			w.release()
			return nil, fmt.Errorf("git guard: %w", err)
		}
		w.roots = append(w.roots, r)
		// Directories unchanged since the last walk (by this guard: the previous
		// command's End, when nothing but this process and the user ran in between)
		// are not listed again.
		before, rec := capture(r, g.listing(rt))
		g.keep(rt, rec)
		w.before = append(w.before, before)
	}
	w.took = time.Since(w.start)
	return w, nil
}

func (w *Watch) release() {
	for _, r := range w.roots {
		r.close()
	}
	for i := len(w.locked) - 1; i >= 0; i-- {
		<-w.locked[i]
	}
	w.roots, w.locked = nil, nil
}

// End compares the roots with the state Begin recorded, undoes every change to git metadata,
// releases the roots and returns what it did. It is idempotent.
func (w *Watch) End() *Report {
	w.once.Do(func() {
		t := time.Now()
		rep := &Report{}
		var stamp string
		for i, r := range w.roots {
			// Everything is listed again: what the command did is never judged by
			// timestamps.
			after, rec := capture(r, nil)
			w.g.keep(r.abs, rec)
			rep.Dirs += after.dirs
			for _, e := range after.errs {
				rep.Unchecked = append(rep.Unchecked, w.show(i, e))
			}
			if stamp == "" {
				stamp = fmt.Sprintf("%s-%d", time.Now().Format("20060102-150405"), seq.Add(1))
			}
			u := &undoer{w: w, i: i, r: r, b: w.before[i], a: after, stamp: stamp}
			u.run()
			rep.Actions = append(rep.Actions, u.actions...)
		}
		w.release()
		rep.Elapsed = w.took + time.Since(t)
		if len(rep.Actions) > 0 {
			slog.Warn("git guard: undid git metadata planted by a command", "actions", rep.Actions)
		}
		w.report = rep
	})
	return w.report
}

// show is rel in root i as the report shows it.
func (w *Watch) show(i int, rel string) string {
	if i == 0 || w.roots == nil {
		return rel
	}
	return filepath.Join(w.roots[i].abs, rel)
}

// undoer undoes the changes in one root.
type undoer struct {
	w       *Watch
	i       int
	r       *root
	b, a    *state
	stamp   string
	done    []string // paths quarantined: everything below them is gone
	redone  []string // directories restored: what is restored below them is not reported again
	actions []Action
}

func (u *undoer) gone(p string) bool {
	for _, q := range u.done {
		if p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

func (u *undoer) act(rel, change, what, undo string, err error) {
	if err == nil && undo == "restored" {
		for _, d := range u.redone {
			if strings.HasPrefix(rel, d+"/") {
				return
			}
		}
		if c, ok := u.b.ctl[rel]; ok && c.kind == kindDir {
			u.redone = append(u.redone, rel)
		}
	}
	a := Action{Path: u.w.show(u.i, rel), Change: change, What: what, Undo: undo}
	if err != nil {
		a.Err = err.Error()
	}
	u.actions = append(u.actions, a)
}

func (u *undoer) run() {
	// 1. Entries named .git, at any depth.
	for _, rel := range slices.Sorted(mapsKeys(u.a.git)) {
		ac := u.a.git[rel]
		bc, existed := u.b.git[rel]
		what := gitEntryWhat(rel, ac.kind)
		switch {
		case !existed:
			u.quarantine(rel, "created", what)
		case bc.kind != ac.kind || ac.kind == kindDir && bc.ino != ac.ino:
			u.quarantine(rel, "replaced", what)
		case ac.kind != kindDir && !bc.same(ac):
			u.restore(rel, bc, ac, "changed", what)
		}
	}
	// 2. New links to directories outside the workspace that commands can write.
	for _, rel := range slices.Sorted(mapsKeys(u.a.links)) {
		if ino, ok := u.b.links[rel]; ok && ino == u.a.links[rel] || u.gone(rel) {
			continue
		}
		if dst := u.pointsOutside(rel); dst != "" {
			u.quarantine(rel, "created", "a link to "+dst+", outside the workspace, where commands can write")
		}
	}
	// 3. Control paths of every git directory.
	keys := slices.Sorted(mapsKeys(u.a.ctl))
	for k := range u.b.ctl {
		if _, ok := u.a.ctl[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if u.gone(k) {
			continue
		}
		bc, bok := u.b.ctl[k]
		ac, aok := u.a.ctl[k]
		g := ac.gitdir
		if !aok {
			g = bc.gitdir
		}
		bino, inB := u.b.gitdirs[g]
		aino, inA := u.a.gitdirs[g]
		kept := inB && inA && bino == aino
		what := controlWhat(g, k)
		switch {
		case aok && !bok:
			u.quarantine(k, "created", what)
		case !kept:
			// A git directory that is new or was replaced: nothing of its control paths is
			// the user's.
			if aok && !bc.same(ac) {
				u.quarantine(k, "changed", what)
			}
		case bok && !aok:
			u.restore(k, bc, ac, "removed", what)
		case !bc.same(ac):
			u.restore(k, bc, ac, "changed", what)
		}
	}
}

// quarantine moves rel out of the workspace (or deletes it when there is no quarantine
// directory), never following a link.
func (u *undoer) quarantine(rel, change, what string) {
	undo, err := u.moveOut(rel)
	u.done = append(u.done, rel)
	u.act(rel, change, what, undo, err)
}

func (u *undoer) moveOut(rel string) (string, error) {
	pfd, base, err := u.r.parent(rel)
	if err != nil {
		return "not undone", err
	}
	defer unix.Close(pfd)
	q := u.w.g.opts.QuarantineDir
	if q == "" {
		if err := removeAllAt(pfd, base, 0); err != nil {
			return "not deleted", err
		}
		return "deleted", nil
	}
	dst := filepath.Join(q, u.stamp, fmt.Sprintf("root%d", u.i), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "not undone", err
	}
	err = unix.Renameat(pfd, base, unix.AT_FDCWD, dst)
	if err == nil {
		return "moved to " + dst, nil
	}
	if !errors.Is(err, unix.EXDEV) {
		return "not undone", err
	}
	// Another file system: copy what fits, then delete.
	budget := int64(64 << 20)
	cerr := copyOutAt(pfd, base, dst, &budget, 0)
	if err := removeAllAt(pfd, base, 0); err != nil {
		return "not deleted", err
	}
	if cerr != nil {
		return "deleted; partly copied to " + dst + " (" + cerr.Error() + ")", nil
	}
	return "moved to " + dst, nil
}

// restore puts the recorded state bc back at rel, whose current state is ac.
func (u *undoer) restore(rel string, bc, ac ctl, change, what string) {
	// The version found goes to the quarantine first (a file changed in place too: it may hold
	// a change the user made meanwhile, outside the sandbox); without a quarantine directory
	// a file is simply overwritten.
	out := ac.kind != kindNone && (ac.kind != bc.kind || ac.kind != kindFile || u.w.g.opts.QuarantineDir != "")
	moved := ""
	if out {
		undo, err := u.moveOut(rel)
		if err != nil {
			u.act(rel, change, what, undo, err)
			return
		}
		if u.w.g.opts.QuarantineDir != "" {
			moved = "; the version found " + undo
		}
	}
	err := u.put(rel, bc)
	undo := "restored" + moved
	if err != nil {
		undo = "not restored" + moved
	}
	u.act(rel, change, what, undo, err)
}

func (u *undoer) put(rel string, c ctl) error {
	pfd, base, err := u.r.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	switch c.kind {
	case kindDir:
		return unix.Mkdirat(pfd, base, c.mode&0o7777)
	case kindLink:
		return unix.Symlinkat(string(c.data), pfd, base)
	case kindFile:
		if c.big {
			// Too large to have been kept: the command's version goes, the original is lost.
			if err := removeAllAt(pfd, base, 0); err != nil {
				return err
			}
			return errors.New("the original was too large to keep; the command's version was removed")
		}
		return writeFileAt(pfd, base, c.data, c.mode)
	}
	return nil
}

// pointsOutside returns where the link rel leads when that is inside a writable directory
// outside the roots ("" otherwise), judging both the link text and the resolved path.
func (u *undoer) pointsOutside(rel string) string {
	opts := u.w.g.opts
	if len(opts.Writable) == 0 {
		return ""
	}
	pfd, base, err := u.r.parent(rel)
	if err != nil {
		return ""
	}
	t, err := readlinkAt(pfd, base)
	unix.Close(pfd)
	if err != nil {
		return ""
	}
	dir, _ := splitRel(rel)
	lexical := t
	if !filepath.IsAbs(t) {
		lexical = filepath.Join(u.r.abs, dir, t)
	}
	cands := []string{filepath.Clean(lexical)}
	if ev, err := filepath.EvalSymlinks(filepath.Join(u.r.abs, rel)); err == nil {
		cands = append(cands, ev)
	}
	for _, c := range cands {
		if within(c, opts.Roots) {
			continue
		}
		if within(c, opts.Writable) {
			return c
		}
	}
	return ""
}

func within(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

func gitEntryWhat(rel string, k kind) string {
	switch k {
	case kindDir:
		if rel == ".git" || strings.EqualFold(rel, ".git") {
			return "the repository's .git directory"
		}
		return "a nested git repository"
	case kindFile:
		return "a .git file, which points git at another directory"
	case kindLink:
		return "a .git link"
	}
	return "a .git " + k.String()
}

// controlWhat says what the control path k of git directory g is.
func controlWhat(g, k string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(k, g), "/")
	first, _, _ := strings.Cut(rest, "/")
	switch first {
	case "config", "config.worktree":
		return "git configuration"
	case "commondir":
		return "a git commondir pointer, which moves configuration and hooks"
	case "gitdir":
		return "a worktree's gitdir pointer"
	case "hooks":
		return "a git hook"
	case "info":
		return "git attributes, which select filter and diff programs"
	case "modules":
		return "a submodule's git directory"
	case "worktrees":
		return "a worktree's git directory"
	}
	if g == "" {
		return "a git repository's control file"
	}
	return "a control file of the git directory " + g
}
