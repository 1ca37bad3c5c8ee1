package fsafe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentd/agentd/tools"
)

// Limits on names, as Linux enforces them (NAME_MAX, PATH_MAX-1), and on symlink hops (as the
// kernel's ELOOP limit).
const (
	maxNameBytes   = 255
	maxPathBytes   = 4095
	maxSymlinkHops = 40
)

// Workspace is the set of directories file tools may touch. It keeps one os.Root open per root
// for its whole life; every file operation goes through those roots.
//
// A Workspace is safe for concurrent use. It is shared by every session on the same roots.
type Workspace struct {
	roots []*root
}

// root is one workspace root: its canonical absolute path and the os.Root opened on it.
type root struct {
	abs string
	r   *os.Root
}

// NewWorkspace opens the given root directories. Each must be an absolute path to an existing
// directory; it is canonicalized (symlinks resolved) once, here. "/" is refused: a workspace that
// is the whole machine confines nothing. Relative paths given to Resolve are relative to the
// first root.
func NewWorkspace(dirs ...string) (*Workspace, error) {
	if len(dirs) == 0 {
		return nil, errors.New("fsafe: a workspace needs at least one root")
	}
	w := &Workspace{}
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			w.Close()
			return nil, fmt.Errorf("fsafe: workspace root %q is not absolute", d)
		}
		canon, err := filepath.EvalSymlinks(d)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("fsafe: workspace root: %w", err)
		}
		if canon == "/" {
			w.Close()
			return nil, fmt.Errorf("fsafe: workspace root %q is the file system root", d)
		}
		if w.rootOf(canon) != nil && w.rootOf(canon).abs == canon {
			continue // listed twice
		}
		r, err := os.OpenRoot(canon)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("fsafe: workspace root: %w", err)
		}
		w.roots = append(w.roots, &root{abs: canon, r: r})
	}
	return w, nil
}

// Close closes the roots. Paths resolved from the workspace stop working.
func (w *Workspace) Close() error {
	var errs []error
	for _, rt := range w.roots {
		errs = append(errs, rt.r.Close())
	}
	return errors.Join(errs...)
}

// Roots returns the canonical absolute root directories, the first one first.
func (w *Workspace) Roots() []string {
	out := make([]string, len(w.roots))
	for i, rt := range w.roots {
		out[i] = rt.abs
	}
	return out
}

// rootOf returns the most specific root containing the canonical absolute path abs, or nil.
func (w *Workspace) rootOf(abs string) *root {
	var best *root
	for _, rt := range w.roots {
		if abs == rt.abs || strings.HasPrefix(abs, rt.abs+"/") {
			if best == nil || len(rt.abs) > len(best.abs) {
				best = rt
			}
		}
	}
	return best
}

// Path is a canonical location inside a workspace root, produced only by Resolve. Its relative
// form has no symlinks and no "..": it is what every operation hands to the root's os.Root.
// The zero Path is invalid.
type Path struct {
	root *root
	rel  string // canonical, slash-separated, relative to root.abs; "." for the root itself
	abs  string // canonical absolute
	// As observed through the root during Resolve; see Exists and Info.
	exists bool
	info   Info
}

// Rel is the canonical path relative to its root, slash-separated ("." for the root). It is the
// path to show the user and the model.
func (p Path) Rel() string { return p.rel }

// Abs is the canonical absolute path: the key of read stamps, mutation locks and overlays.
func (p Path) Abs() string { return p.abs }

// Root is the canonical absolute path of the workspace root that holds p.
func (p Path) Root() string {
	if p.root == nil {
		return ""
	}
	return p.root.abs
}

// String is the display form: Rel.
func (p Path) String() string { return p.rel }

// IsZero reports whether p is the zero Path (not produced by Resolve).
func (p Path) IsZero() bool { return p.root == nil }

// Exists reports whether something existed at p when it was resolved.
func (p Path) Exists() bool { return p.exists }

// Info is what was at p when it was resolved (zero when nothing was). It is a snapshot for policy
// and display; operations re-check what they touch.
func (p Path) Info() Info { return p.info }

// Info describes a file, as seen through a workspace root (lstat/fstat).
type Info struct {
	Size    int64
	Mode    fs.FileMode
	ModTime time.Time
	Dev     uint64
	Inode   uint64
	// Links is the hard-link count. A regular file with more than one link may also exist outside
	// the workspace: see HardLinked.
	Links uint64
}

// HardLinked reports a regular file with more than one name. Its content may be reachable from
// outside the workspace under another name, so reading it may disclose an outside file; writing
// it is safe (the atomic rename gives this name new content and leaves the other names alone).
func (i Info) HardLinked() bool { return HardLinked(i.Mode.IsRegular(), i.Links) }

// HardLinked is the rule for a file with links: a regular file with more than one name. The
// file tools withhold or ask for such a file; the sandbox masks one that is a sensitive file's.
func HardLinked(regular bool, links uint64) bool { return regular && links > 1 }

func infoOf(fi fs.FileInfo) Info {
	in := Info{Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		in.Dev = uint64(st.Dev)
		in.Inode = uint64(st.Ino)
		in.Links = uint64(st.Nlink)
	}
	return in
}

// Resolve validates name and returns its canonical Path. name is absolute, or relative to the
// first root. Every refusal is a *tools.Error:
//
//   - permission_denied: a NUL byte, a name or path longer than Linux allows, a path that is (or
//     resolves through symlinks and ".." to) a place outside every root, a symlink loop, any path
//     through /proc;
//   - invalid_args: an empty path;
//   - io_error: the file system failed while resolving.
//
// ".." is applied to the physical parent (after symlinks), as the kernel does: with link → /x/y,
// "link/.." is /x. A dangling symlink is followed to where it points, so one pointing outside is
// outside. Nothing need exist at the resolved path.
func (w *Workspace) Resolve(name string) (Path, error) {
	if name == "" {
		return Path{}, tools.Errorf(tools.InvalidArgs, "the path is empty")
	}
	if strings.IndexByte(name, 0) >= 0 {
		return Path{}, tools.Errorf(tools.PermissionDenied, "the path %q contains a NUL byte", name)
	}
	if len(name) > maxPathBytes {
		return Path{}, tools.Errorf(tools.PermissionDenied, "the path is too long (%d bytes; at most %d)", len(name), maxPathBytes)
	}
	for c := range strings.SplitSeq(name, "/") {
		if len(c) > maxNameBytes {
			return Path{}, tools.Errorf(tools.PermissionDenied, "a name in the path is too long (%d bytes; at most %d)", len(c), maxNameBytes)
		}
	}
	abs := name
	if !filepath.IsAbs(name) {
		abs = w.roots[0].abs + "/" + name
	}
	canon, err := w.canonicalize(abs)
	if err != nil {
		return Path{}, withPath(err, name)
	}
	rt := w.rootOf(canon)
	if rt == nil {
		return Path{}, tools.Errorf(tools.PermissionDenied,
			"%q is outside the workspace: it resolves to %s, and file tools only work under %s",
			name, canon, strings.Join(w.Roots(), ", "))
	}
	rel := "."
	if canon != rt.abs {
		rel = canon[len(rt.abs)+1:]
	}
	p := Path{root: rt, rel: rel, abs: canon}
	switch fi, err := rt.r.Lstat(rel); {
	case err == nil:
		p.exists, p.info = true, infoOf(fi)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		if err := strayWhiteSpace(name, abs); err != nil {
			return Path{}, err
		}
	default:
		return Path{}, mapErr(p, err)
	}
	return p, nil
}

// strayWhiteSpace refuses a path to nothing (yet) with a name in it that starts or ends with
// white space: a model's formatting slip (a value that kept the space after a tag) would
// otherwise create " test.txt". A file or directory that exists under such a name is found as
// usual.
func strayWhiteSpace(name, abs string) error {
	comps := strings.Split(name, "/")
	absComps := strings.Split(abs, "/") // name's components are its last ones
	for i, c := range comps {
		trimmed := strings.TrimSpace(c)
		if trimmed == c {
			continue
		}
		if i < len(comps)-1 {
			prefix := strings.Join(absComps[:len(absComps)-len(comps)+i+1], "/")
			if _, err := os.Lstat(prefix); err == nil {
				continue // an existing directory has that name
			}
		}
		where := "starts"
		if strings.HasPrefix(c, trimmed) {
			where = "ends"
		}
		fixed := make([]string, len(comps))
		for j, d := range comps {
			fixed[j] = strings.TrimSpace(d)
		}
		return tools.Errorf(tools.InvalidArgs,
			"the path %q does not exist, and the name %q in it %s with white space, which file names almost never do: nothing was done. If you meant %q, call again with exactly that path",
			name, c, where, strings.Join(fixed, "/"))
	}
	return nil
}

// resolveError is a refusal from canonicalize, completed with the path the caller gave.
type resolveError struct {
	typ tools.ResultType
	msg string // with one %q for the path
}

func (e *resolveError) Error() string { return fmt.Sprintf(e.msg, "path") }

func withPath(err error, name string) error {
	var re *resolveError
	if errors.As(err, &re) {
		return tools.Errorf(re.typ, re.msg, name)
	}
	return tools.Errorf(tools.IOError, "resolving %q: %v", name, err)
}

// canonicalize is canonicalizeFrom for a path the model gave: a path that starts with a root's
// canonical path (most do: relative paths are joined to the first root) is walked from that
// root, whose components were resolved when the workspace was opened, instead of from "/". That
// saves an lstat per component above the root on every call; confinement does not rest on it
// (every operation goes through the root's os.Root, which refuses to leave it).
func (w *Workspace) canonicalize(abs string) (string, error) {
	var best *root
	for _, rt := range w.roots {
		if (abs == rt.abs || strings.HasPrefix(abs, rt.abs+"/")) && (best == nil || len(rt.abs) > len(best.abs)) {
			best = rt
		}
	}
	if best == nil || best.abs == "/proc" || strings.HasPrefix(best.abs, "/proc/") {
		return canonicalizeFrom("/", abs)
	}
	return canonicalizeFrom(best.abs, abs[len(best.abs):])
}

// canonicalizeFrom resolves symlinks and ".." in the path rest relative to the canonical
// absolute directory start, component by component, the way the kernel walks a path.
// Components that do not exist are kept as written (and a ".." after one of them removes it). It
// only inspects metadata (lstat, readlink), never content.
func canonicalizeFrom(start, rest string) (string, error) {
	pending := strings.Split(rest, "/")
	resolved := start
	missing := 0 // how many trailing components of resolved do not exist
	hops := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if missing > 0 {
				missing--
			}
			resolved = path.Dir(resolved)
			continue
		}
		next := path.Join(resolved, c)
		if missing > 0 {
			resolved = next
			missing++
			continue
		}
		if next == "/proc" || strings.HasPrefix(next, "/proc/") {
			// /proc holds magic links (/proc/self/root, /proc/<pid>/cwd, fd links) whose
			// readlink text is not a path the kernel walks. Never a workspace path.
			return "", &resolveError{tools.PermissionDenied, "%q goes through /proc, which file tools never touch"}
		}
		fi, err := os.Lstat(next)
		if err != nil {
			switch {
			case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
				resolved = next
				missing = 1
				continue
			case errors.Is(err, syscall.ENAMETOOLONG):
				return "", &resolveError{tools.PermissionDenied, "%q resolves to a name that is too long"}
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if hops++; hops > maxSymlinkHops {
			return "", &resolveError{tools.PermissionDenied, "%q goes through too many symbolic links (a loop?)"}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if target == "" { // cannot be followed; the kernel says ENOENT
			resolved = next
			missing = 1
			continue
		}
		if strings.HasPrefix(target, "/") {
			resolved = "/"
		}
		pending = append(strings.Split(target, "/"), pending...) // bounded by maxSymlinkHops
	}
	if len(resolved) > maxPathBytes {
		return "", &resolveError{tools.PermissionDenied, "%q resolves to a path that is too long"}
	}
	return resolved, nil
}

// mapErr turns an error from an operation on p into a *tools.Error the model can read.
func mapErr(p Path, err error) error {
	var te *tools.Error
	if errors.As(err, &te) {
		return err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return tools.Errorf(tools.NotFound, "%s does not exist", p.rel)
	case errors.Is(err, syscall.ENOTDIR):
		return tools.Errorf(tools.NotFound, "%s does not exist (a parent is not a directory)", p.rel)
	case errors.Is(err, syscall.EISDIR):
		return tools.Errorf(tools.InvalidArgs, "%s is a directory", p.rel)
	case errors.Is(err, fs.ErrPermission):
		return tools.Errorf(tools.PermissionDenied, "%s: the operating system denied access", p.rel)
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENAMETOOLONG),
		strings.Contains(err.Error(), "escapes from parent"):
		// os.Root refuses a symlink leading outside the root: the tree changed since Resolve.
		return tools.Errorf(tools.PermissionDenied, "%s: a directory on the path now leads outside the workspace", p.rel)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return tools.Errorf(tools.IOError, "%s: no space left on the device", p.rel)
	}
	return tools.Errorf(tools.IOError, "%s: %v", p.rel, err)
}

// checkRegular refuses anything at p that is not a regular file. It never opens the file, so a
// FIFO cannot block and a device cannot react to being opened.
func checkRegular(p Path, fi fs.FileInfo) error {
	m := fi.Mode()
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		return tools.Errorf(tools.InvalidArgs, "%s is a directory, not a file", p.rel)
	case m&fs.ModeSymlink != 0:
		return tools.Errorf(tools.IOError, "%s was replaced by a symbolic link while it was being used; try again", p.rel)
	}
	return tools.Errorf(tools.PermissionDenied, "%s is a %s, not a regular file; file tools only read and write regular files", p.rel, kindName(m))
}

func kindName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeIrregular != 0:
		return "special file"
	}
	return "special file"
}

// openRegular opens the regular file at p read-only through its root. The type is checked before
// opening (so a FIFO never blocks), the open is non-blocking anyway (a file swapped for a FIFO in
// between), the type is checked again on the descriptor, and the descriptor's real path must be
// p's canonical path (a directory on the way swapped for an in-root symlink is caught).
func (p Path) openRegular() (*os.File, Info, error) {
	if p.root == nil {
		return nil, Info{}, tools.Errorf(tools.InvalidArgs, "the path was not resolved")
	}
	fi, err := p.root.r.Lstat(p.rel)
	if err != nil {
		return nil, Info{}, mapErr(p, err)
	}
	if err := checkRegular(p, fi); err != nil {
		return nil, Info{}, err
	}
	f, err := p.root.r.OpenFile(p.rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, Info{}, mapErr(p, err)
	}
	st, err := f.Stat()
	if err == nil {
		err = checkRegular(p, st)
	}
	if err == nil {
		err = verifyOpened(f, p.abs, p.rel)
	}
	if err != nil {
		f.Close()
		return nil, Info{}, mapErr(p, err)
	}
	return f, infoOf(st), nil
}

// verifyOpened checks that f is really the file at the canonical path want. Where the kernel
// cannot say (no /proc), it trusts os.Root's confinement alone.
func verifyOpened(f *os.File, want, display string) error {
	got, ok := openedPath(f)
	if !ok || got == want {
		return nil
	}
	return tools.Errorf(tools.IOError, "%s changed while it was being opened (a directory on its path was replaced); try again", display)
}

// Stat describes the file or directory at p, through its root, without following a final
// symlink (a canonical path has none unless the tree changed).
func Stat(p Path) (Info, error) {
	if p.root == nil {
		return Info{}, tools.Errorf(tools.InvalidArgs, "the path was not resolved")
	}
	fi, err := p.root.r.Lstat(p.rel)
	if err != nil {
		return Info{}, mapErr(p, err)
	}
	return infoOf(fi), nil
}

// ReadDir lists the directory at p through its root. Entries are sorted by name; symlinks are
// reported as symlinks, never followed.
func ReadDir(p Path) ([]fs.DirEntry, error) {
	if p.root == nil {
		return nil, tools.Errorf(tools.InvalidArgs, "the path was not resolved")
	}
	f, err := p.root.r.Open(p.rel)
	if err != nil {
		return nil, mapErr(p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, mapErr(p, err)
	}
	if !st.IsDir() {
		return nil, tools.Errorf(tools.InvalidArgs, "%s is not a directory", p.rel)
	}
	if err := verifyOpened(f, p.abs, p.rel); err != nil {
		return nil, err
	}
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, mapErr(p, err)
	}
	sortEntries(ents)
	return ents, nil
}

// WalkDir walks the tree under the directory p through its root, in lexical order, calling fn
// with each entry's path relative to p's root (slash-separated; p.Rel() first). Symlinks are
// reported, never followed. To read a file found by the walk, resolve p.Root()+"/"+rel.
func WalkDir(p Path, fn fs.WalkDirFunc) error {
	if p.root == nil {
		return tools.Errorf(tools.InvalidArgs, "the path was not resolved")
	}
	return fs.WalkDir(p.root.r.FS(), p.rel, fn)
}

func sortEntries(ents []fs.DirEntry) {
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}
