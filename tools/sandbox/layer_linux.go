//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/tools/sandbox/helper"
)

// LayerArg is the argv[1] of the first stage of a bubblewrap command (see layers).
const LayerArg = helper.LayerArg

// layerSet is the copy-on-write layers of one command: a directory <LayerDir>/<pid>-<n> holding
// an owner lock and, per workspace root i, i/upper and i/work. The owner lock (flock) is held
// from Command to Release: a directory whose lock can be taken belongs to a process that is gone
// (agentd killed during a command), and SweepLayers discards it; nothing in it is ever applied.
type layerSet struct {
	dir    string
	owner  *os.File
	layers []helper.Layer
	// start is the change time of the owner lock file, taken right before the command starts
	// (the kernel's clock for file times): a workspace entry whose change time is not older
	// changed while the command ran.
	start unix.Timespec
}

// newLayers makes the layer directories for roots under dir.
func newLayers(dir string, roots []string) (*layerSet, error) {
	if !helper.LayerPathOK(dir) {
		return nil, fmt.Errorf("%w: layer directory %q must be absolute, without ',', ':' or '\\'", ErrPolicy, dir)
	}
	for _, r := range roots {
		if !helper.LayerPathOK(r) {
			return nil, fmt.Errorf("%w: workspace root %q holds ',', ':' or '\\', which an overlay mount cannot name", ErrPolicy, r)
		}
		if under(dir, []string{r}) {
			return nil, fmt.Errorf("%w: the layer directory %s is inside the workspace root %s", ErrPolicy, dir, r)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: layer directory: %w", err)
	}
	d, err := os.MkdirTemp(dir, strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: layer directory: %w", err)
	}
	ls := &layerSet{dir: d}
	fail := func(err error) (*layerSet, error) {
		ls.remove()
		return nil, fmt.Errorf("sandbox: layer directory: %w", err)
	}
	if ls.owner, err = os.OpenFile(filepath.Join(d, "owner"), os.O_CREATE|os.O_RDWR, 0o600); err != nil {
		return fail(err)
	}
	if err := unix.Flock(int(ls.owner.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail(err)
	}
	// Shallower roots first (see helper.layerRun).
	sorted := slices.Clone(roots)
	sort.SliceStable(sorted, func(i, j int) bool { return depth(sorted[i]) < depth(sorted[j]) })
	for i, r := range sorted {
		l := helper.Layer{Root: r, Upper: filepath.Join(d, strconv.Itoa(i), "upper"), Work: filepath.Join(d, strconv.Itoa(i), "work")}
		for _, p := range []string{l.Upper, l.Work} {
			if err := os.MkdirAll(p, 0o700); err != nil {
				return fail(err)
			}
		}
		ls.layers = append(ls.layers, l)
	}
	return ls, nil
}

// markStart records the start time on the owner file (see layerSet.start).
func (ls *layerSet) markStart() error {
	if _, err := ls.owner.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(ls.owner.Fd()), &st); err != nil {
		return err
	}
	ls.start = st.Ctim
	return nil
}

// wrap returns the command line that mounts the layers and then runs bwrapArgv, and sets the
// namespaces it needs on attr: a user namespace mapping the daemon's own ids (all of them for
// root), so that the overlay (userxattr) can be mounted by an unprivileged daemon, and a mount
// namespace of its own.
func (ls *layerSet) wrap(helperPath string, bwrapArgv []string, attr *syscall.SysProcAttr) ([]string, error) {
	j, err := json.Marshal(ls.layers)
	if err != nil {
		return nil, err
	}
	attr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		// Root maps every id, so that files of any owner in the workspace can be copied up.
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
	} else {
		// An unprivileged daemon can map only its own ids: files of another owner or group
		// cannot be changed by the command (EOVERFLOW on copy-up), as they could not be anyway.
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	return append([]string{helperPath, LayerArg, string(j), "--"}, bwrapArgv...), nil
}

// remove deletes the layer directory (the overlay's work directories are left without
// permissions by the kernel: they are opened up first).
func (ls *layerSet) remove() {
	if ls == nil {
		return
	}
	forceRemove(ls.dir)
	if ls.owner != nil {
		ls.owner.Close()
	}
}

func forceRemove(dir string) {
	if err := os.RemoveAll(dir); err == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// SweepLayers discards the copy-on-write layers under dir whose command's daemon is gone (their
// owner lock is free): a command that was running when agentd died is never applied. It returns
// the layers it removed that held changes.
func SweepLayers(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var dropped []string
	for _, e := range ents {
		if !e.IsDir() {
			continue // the apply locks (LockApplyRoots) live beside the layers
		}
		p := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(filepath.Join(p, "owner"), os.O_RDWR, 0)
		if err == nil {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
			if err != nil {
				f.Close()
				continue // a running command's
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if layerHasChanges(p) {
			dropped = append(dropped, p)
		}
		forceRemove(p)
		if f != nil {
			f.Close()
		}
	}
	return dropped
}

func layerHasChanges(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			if up, _ := os.ReadDir(filepath.Join(dir, e.Name(), "upper")); len(up) > 0 {
				return true
			}
		}
	}
	return false
}

// Changes reads what the command changed from its copy-on-write layers: one entry per created,
// modified, deleted, renamed or re-moded path (a deleted directory also lists every file it
// held). It walks the upper layers only (what changed), never the workspace. Call it after
// Wait and before Release; a command without layers (ModeLandlock, unsandboxed) has none.
func (c *Cmd) Changes() ([]Change, error) {
	if c.layers == nil {
		return nil, nil
	}
	var out []Change
	for _, l := range c.layers.layers {
		r := &layerReader{root: l.Root, upper: l.Upper, start: c.layers.start}
		if err := r.dir(""); err != nil {
			return nil, fmt.Errorf("sandbox: reading the command's changes: %w", err)
		}
		out = append(out, r.pairRenames()...)
	}
	return out, nil
}

// Layered reports whether the command writes to copy-on-write layers (Changes says what it
// wrote) rather than to the workspace.
func (c *Cmd) Layered() bool { return c.layers != nil }

type layerReader struct {
	root, upper string
	start       unix.Timespec
	out         []Change
}

func (r *layerReader) add(ch Change) {
	ch.Root = r.root
	if !ch.Conflict {
		ch.Conflict = r.changedSince(ch.Path)
	}
	r.out = append(r.out, ch)
}

// changedSince reports whether the workspace entry rel changed while the command ran.
func (r *layerReader) changedSince(rel string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(r.root, rel), &st); err != nil {
		return false
	}
	return st.Ctim.Sec > r.start.Sec || (st.Ctim.Sec == r.start.Sec && st.Ctim.Nsec >= r.start.Nsec)
}

func isWhiteout(fi fs.FileInfo) bool {
	if fi.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

func opaque(p string) bool {
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(p, "user.overlay.opaque", buf)
	return err == nil && n > 0 && (buf[0] == 'y' || buf[0] == 'x')
}

func typeOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return TypeFile
	case m.IsDir():
		return TypeDir
	case m&fs.ModeSymlink != 0:
		return TypeSymlink
	}
	return TypeOther
}

// dir reads the upper directory rel (relative to the root; "" the root).
func (r *layerReader) dir(rel string) error {
	up := filepath.Join(r.upper, rel)
	ents, err := os.ReadDir(up)
	if err != nil {
		return err
	}
	if rel != "" && opaque(up) {
		// The command replaced the directory: whatever the workspace holds there and the
		// layer does not is deleted.
		if err := r.deletedBelow(rel, ents); err != nil {
			return err
		}
	}
	for _, e := range ents {
		name := path.Join(rel, e.Name())
		fi, err := e.Info()
		if err != nil {
			return err
		}
		lower, lerr := os.Lstat(filepath.Join(r.root, name))
		if lerr != nil && !errors.Is(lerr, fs.ErrNotExist) && !errors.Is(lerr, syscall.ENOTDIR) {
			return lerr
		}
		hasLower := lerr == nil
		if isWhiteout(fi) {
			if hasLower {
				r.deleted(name, lower)
			}
			continue
		}
		if hasLower && typeOf(lower.Mode()) != typeOf(fi.Mode()) {
			// Replaced by another kind of entry: the old one is deleted first.
			r.deleted(name, lower)
			hasLower = false
		}
		src := filepath.Join(r.upper, name)
		ch := Change{Path: name, Type: typeOf(fi.Mode()), Mode: fi.Mode().Perm() | fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), Source: src}
		switch ch.Type {
		case TypeDir:
			if !hasLower {
				ch.Kind = Created
				r.add(ch)
			} else if lower.Mode().Perm() != fi.Mode().Perm() {
				ch.Kind = ModeChanged
				r.add(ch)
			}
			if err := r.dir(name); err != nil {
				return err
			}
			continue
		case TypeSymlink:
			t, err := os.Readlink(src)
			if err != nil {
				return err
			}
			ch.Target = t
			if hasLower {
				if old, _ := os.Readlink(filepath.Join(r.root, name)); old == t {
					continue
				}
				ch.Kind = Modified
			} else {
				ch.Kind = Created
			}
		case TypeFile:
			ch.Size = fi.Size()
			if !hasLower {
				ch.Kind = Created
				break
			}
			same, err := sameContent(src, filepath.Join(r.root, name), fi.Size(), lower.Size())
			if err != nil {
				return err
			}
			switch {
			case !same:
				ch.Kind = Modified
			case lower.Mode() != fi.Mode():
				ch.Kind = ModeChanged
			default:
				continue // copied up, not changed (opened for writing, touched)
			}
		default:
			ch.Kind = Created
			if hasLower {
				ch.Kind = Modified
			}
		}
		r.add(ch)
	}
	return nil
}

// deleted records the deletion of the workspace entry rel, and of every entry below it.
func (r *layerReader) deleted(rel string, fi fs.FileInfo) {
	typ := typeOf(fi.Mode())
	if typ == TypeDir {
		_ = r.deletedBelow(rel, nil)
	}
	r.add(Change{Path: rel, Kind: Deleted, Type: typ, Size: fi.Size()})
}

// deletedBelow records as deleted the workspace entries in directory rel that keep is not
// listing (the layer's entries of an opaque directory).
func (r *layerReader) deletedBelow(rel string, keep []fs.DirEntry) error {
	ents, err := os.ReadDir(filepath.Join(r.root, rel))
	if err != nil {
		return nil // nothing there (or it went away): nothing to delete
	}
	for _, e := range ents {
		if slices.ContainsFunc(keep, func(k fs.DirEntry) bool { return k.Name() == e.Name() }) {
			continue
		}
		if fi, err := e.Info(); err == nil {
			r.deleted(path.Join(rel, e.Name()), fi)
		}
	}
	return nil
}

// pairRenames turns a deleted file and a created file of the same content into a rename.
func (r *layerReader) pairRenames() []Change {
	bySize := map[int64][]int{}
	for i, c := range r.out {
		if c.Kind == Deleted && c.Type == TypeFile {
			bySize[c.Size] = append(bySize[c.Size], i)
		}
	}
	if len(bySize) == 0 {
		return r.out
	}
	drop := map[int]bool{}
	for i := range r.out {
		c := &r.out[i]
		if c.Kind != Created || c.Type != TypeFile {
			continue
		}
		for _, j := range bySize[c.Size] {
			if drop[j] {
				continue
			}
			old := r.out[j]
			if same, err := sameContent(c.Source, filepath.Join(r.root, old.Path), c.Size, old.Size); err == nil && same {
				c.Kind, c.From, c.Conflict = Renamed, old.Path, c.Conflict || old.Conflict
				drop[j] = true
				break
			}
		}
	}
	out := r.out[:0]
	for i, c := range r.out {
		if !drop[i] {
			out = append(out, c)
		}
	}
	return out
}

// sameContent compares two regular files.
func sameContent(a, b string, sa, sb int64) (bool, error) {
	if sa != sb {
		return false, nil
	}
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if ea != nil || eb != nil {
			return (ea == io.EOF || ea == io.ErrUnexpectedEOF) && (eb == io.EOF || eb == io.ErrUnexpectedEOF), nil
		}
	}
}

// LockApply takes the apply lock of each of the command's workspace roots (LockApplyRoots)
// and returns its release. Read Changes after taking it: conflicts are judged under the lock.
// A command without layers has nothing to apply and takes none.
func (c *Cmd) LockApply(ctx context.Context) (unlock func(), err error) {
	if c.layers == nil {
		return func() {}, nil
	}
	roots := make([]string, len(c.layers.layers))
	for i, l := range c.layers.layers {
		roots[i] = l.Root
	}
	return LockApplyRoots(ctx, c.ApplyLockDir(), roots)
}

// ApplyLockDir is the directory of the apply locks of the command's workspace roots (the layer
// directory, Policy.Layers, its own layer is in): what LockApplyRoots needs after Release, to
// apply a change of the command's that the user accepted later. "" for a command without
// layers.
func (c *Cmd) ApplyLockDir() string {
	if c.layers == nil {
		return ""
	}
	return filepath.Dir(c.layers.dir)
}

// testHookApplyLockWait, set by a test, is called when LockApplyRoots finds a lock held and is
// about to wait for it.
var testHookApplyLockWait func(lockPath string)

// LockApplyRoots takes the apply lock of each workspace root under the layer directory dir
// (Policy.Layers, Cmd.ApplyLockDir) and returns its release. Each is a file lock (flock) in dir,
// "apply-<hash of the root>.lock", which every agentd process with this layer directory shares:
// two processes (a terminal `agentd run` and the daemon) never apply changes to one workspace
// root at once — a command's change set (Cmd.LockApply) or a change of it the user accepted
// later. Every call opens its own lock files, so it excludes the other goroutines of this
// process too: never call it while holding it. The locks are taken in one order (by file name)
// whatever the order of roots, so holders of overlapping sets do not deadlock. It waits while
// another holder has a lock, until ctx ends (it still tries once when ctx has ended); the
// kernel drops a lock when its process dies. Every failure wraps ErrApplyLock.
func LockApplyRoots(ctx context.Context, dir string, roots []string) (unlock func(), err error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: no layer directory holds it", ErrApplyLock)
	}
	paths := make([]string, 0, len(roots))
	for _, r := range roots {
		paths = append(paths, applyLockPath(dir, r))
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	var held []*os.File
	unlock = func() {
		for _, f := range held {
			f.Close()
		}
	}
	for _, p := range paths {
		f, err := lockFile(ctx, p)
		if err != nil {
			unlock()
			return nil, fmt.Errorf("%w: %s: %w", ErrApplyLock, p, err)
		}
		held = append(held, f)
	}
	return unlock, nil
}

// applyLockPath is the apply lock file of root under dir.
func applyLockPath(dir, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dir, "apply-"+hex.EncodeToString(sum[:8])+".lock")
}

// lockFile opens the lock file p and takes its flock, waiting until ctx ends. A wait given up
// leaves a goroutine that closes the file once the kernel grants the lock (a blocked flock
// cannot be interrupted), which releases it at once.
func lockFile(ctx context.Context, p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	err = flockRetry(fd, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, err
	}
	if testHookApplyLockWait != nil {
		testHookApplyLockWait(p)
	}
	got := make(chan error, 1)
	go func() { got <- flockRetry(fd, unix.LOCK_EX) }()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	case <-ctx.Done():
		go func() {
			<-got
			f.Close()
		}()
		return nil, fmt.Errorf("it is held (another agentd process, or another call, is applying changes to this workspace root) and the wait ended: %w", context.Cause(ctx))
	}
}

func flockRetry(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// Layers is the directory of the commands' copy-on-write layers under p (LayerDir, or "layers"
// in the state directory), "" when none is known.
func (p Policy) Layers() string {
	if p.LayerDir != "" {
		return p.LayerDir
	}
	if sd := p.stateDir(); sd != "" {
		return filepath.Join(sd, "layers")
	}
	return ""
}

// MarkApplied starts a new period for conflict detection: a server that keeps running (an MCP
// server) has its change set applied after each call, and what was applied then is the
// workspace's new state, not a change of the user's.
func (c *Cmd) MarkApplied() {
	if c.layers != nil {
		_ = c.layers.markStart()
	}
}
