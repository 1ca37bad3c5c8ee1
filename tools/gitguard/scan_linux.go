//go:build linux

package gitguard

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// maxDepth bounds every recursion (the walk, hooks/, modules/, copies).
	maxDepth = 256
	// maxKeep is the largest control file whose content is kept for a restore; a larger one
	// is only hashed (a change to it is undone by quarantine, without a restore).
	maxKeep = 1 << 20
	// maxGitfile is the most of a .git file or link that is read.
	maxGitfile = 64 << 10
)

// controlFiles are the files in a git directory that git reads as configuration or that
// redirect it to other configuration (gitrepository-layout(5), git-config(1),
// git-worktree(1)): config can set core.fsmonitor, core.hooksPath, core.sshCommand,
// core.pager, filters, diff drivers, aliases…; config.worktree is read on top of it with
// extensions.worktreeConfig; commondir moves config and hooks elsewhere; gitdir (in a
// worktree's admin directory) points back at the worktree. info/attributes (below) chooses the
// filter, diff and merge drivers the configuration defines. The directories hooks/ (programs),
// modules/ (submodule repositories) and worktrees/ (worktree admin directories) are taken
// whole.
var controlFiles = []string{"config", "config.worktree", "commondir", "gitdir"}

// isGitName reports a name git treats as a repository marker (case-folded: case-insensitive
// file systems exist on Linux too).
func isGitName(name string) bool { return strings.EqualFold(name, ".git") }

// found is one entry the walk reports.
type found struct {
	rel  string
	kind kind
	ino  uint64
}

// walkResult is what one walk of a root saw.
type walkResult struct {
	git   []found // every entry named .git, at any depth (not descended into)
	bare  []found // directories that git would take for a repository (HEAD + objects/ + refs/, or HEAD + commondir)
	links []found // every symbolic link
	errs  []string
	dirs  int
}

// dirID identifies the state of a directory's entries: any change to them (create, remove,
// rename, a link or directory replaced by something else) updates the directory's ctime,
// which no system call can set back.
type dirID struct {
	ino          uint64
	mtime, ctime unix.Timespec
}

// dirSum is what the walk keeps of one directory: the entries that matter to the guard.
type dirSum struct {
	id      dirID
	trusted bool    // the listing may be reused while id is unchanged (see racyWindow)
	git     []found // entries named .git
	links   []found
	subs    []found // subdirectories to descend into
	bare    bool    // the directory looks like a bare repository
}

// listing is one walk's record of every directory it listed, for the next Begin.
type listing map[string]*dirSum

// racyWindow: a directory whose ctime was less than this before it was listed may change
// again within the same timestamp tick (coarse kernel clock, file systems with one- or
// two-second timestamps), so that listing is never reused.
const racyWindow = 2 * time.Second

// clock is time.Now (tests move it forward to make fresh directories count as old), and
// dirsRead counts the directories actually read (tests check that unchanged ones are not).
var (
	clock    = time.Now
	dirsRead atomic.Int64
)

// walk lists every directory of the root in parallel, by names and types only: no stat of
// regular files, no link followed, `.git` directories not entered. When prev is set (Begin,
// never End), a directory whose identity and ctime are those prev recorded, long enough after
// its last change, is not read again: prev's summary of it is used. It returns the listing of
// this walk too.
func walk(r *root, rootIno uint64, prev listing) (*walkResult, listing) {
	type item struct {
		rel string
		ino uint64
	}
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		stack   = []item{{"", rootIno}}
		pending = 1 // items queued or being processed
		res     = &walkResult{}
		rec     = listing{}
		wg      sync.WaitGroup
	)
	workers := min(runtime.GOMAXPROCS(0), 8)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			var local walkResult
			localRec := map[string]*dirSum{}
			var next []item
			for {
				mu.Lock()
				for len(stack) == 0 && pending > 0 {
					cond.Wait()
				}
				if pending == 0 {
					mu.Unlock()
					break
				}
				it := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				mu.Unlock()

				next = next[:0]
				local.dirs++
				sum, err := summarize(r, it.rel, buf, prev[it.rel])
				if err != nil {
					local.errs = append(local.errs, fmt.Sprintf("%s: %v", displayRel(it.rel), err))
				}
				if sum != nil {
					localRec[it.rel] = sum
					local.git = append(local.git, sum.git...)
					local.links = append(local.links, sum.links...)
					for _, d := range sum.subs {
						next = append(next, item{d.rel, d.ino})
					}
					if sum.bare {
						local.bare = append(local.bare, found{it.rel, kindDir, it.ino})
					}
				}

				mu.Lock()
				stack = append(stack, next...)
				pending += len(next) - 1
				if len(next) > 0 || pending == 0 {
					cond.Broadcast()
				}
				mu.Unlock()
			}
			mu.Lock()
			res.git = append(res.git, local.git...)
			res.bare = append(res.bare, local.bare...)
			res.links = append(res.links, local.links...)
			res.errs = append(res.errs, local.errs...)
			res.dirs += local.dirs
			for k, v := range localRec {
				rec[k] = v
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(res.errs)
	return res, rec
}

// summarize lists rel (or reuses prev when the directory did not change since prev was
// taken) and returns what the walk needs of it. A directory that could not be read completely
// has a nil summary, or one that is not trusted.
func summarize(r *root, rel string, buf []byte, prev *dirSum) (*dirSum, error) {
	fd, err := openListable(r, rel)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	now := clock()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	id := dirID{ino: st.Ino, mtime: st.Mtim, ctime: st.Ctim}
	if prev != nil && prev.trusted && prev.id == id {
		return prev, nil
	}
	dirsRead.Add(1)
	ents, err := readDir(fd, buf)
	sum := &dirSum{id: id, trusted: err == nil && now.Sub(time.Unix(st.Ctim.Unix())) > racyWindow}
	var head, objects, refs, commondir bool
	for _, e := range ents {
		p := joinRel(rel, e.name)
		if isGitName(e.name) {
			sum.git = append(sum.git, found{p, e.kind, e.ino})
			continue
		}
		switch e.kind {
		case kindDir:
			if strings.Count(p, "/") < maxDepth {
				sum.subs = append(sum.subs, found{p, kindDir, e.ino})
			}
			objects = objects || e.name == "objects"
			refs = refs || e.name == "refs"
		case kindLink:
			sum.links = append(sum.links, found{p, e.kind, e.ino})
			head = head || e.name == "HEAD"
		case kindFile:
			head = head || e.name == "HEAD"
			commondir = commondir || e.name == "commondir"
		}
	}
	sum.bare = head && (objects && refs || commondir)
	return sum, err
}

// openListable opens rel for listing. A directory the command made unreadable is made
// readable to its owner first (agentd and the sandboxed command run as the same user).
func openListable(r *root, rel string) (int, error) {
	fd, err := r.openDir(rel)
	if err == unix.EACCES && rel != "" {
		if pfd, base, perr := r.parent(rel); perr == nil {
			if st, serr := lstatAt(pfd, base); serr == nil && kindOfMode(st.Mode) == kindDir {
				_ = unix.Fchmodat(pfd, base, (st.Mode&0o7777)|0o700, 0)
			}
			unix.Close(pfd)
			fd, err = r.openDir(rel)
		}
	}
	return fd, err
}

func displayRel(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// ctl is the state of one control path: a control file, a directory of them, or a .git file
// or link.
type ctl struct {
	kind   kind
	mode   uint32
	ino    uint64 // directories: identity
	data   []byte // file content (nil when big) or link target
	sum    [32]byte
	big    bool
	gitdir string // the git directory it belongs to ("" for .git entries themselves)
}

func (c ctl) same(o ctl) bool {
	if c.kind != o.kind {
		return false
	}
	switch c.kind {
	case kindFile:
		return c.mode == o.mode && c.sum == o.sum
	case kindLink:
		return string(c.data) == string(o.data)
	}
	return true
}

// state is what the guard knows of one root at one moment.
type state struct {
	git     map[string]ctl    // entries named .git (dirs: kind and inode; files and links: content)
	gitdirs map[string]uint64 // every git directory examined → its inode
	ctl     map[string]ctl    // control paths inside those git directories
	links   map[string]uint64 // every symbolic link → its inode
	seen    map[string]bool   // git directories read
	errs    []string
	dirs    int
}

// capture walks the root and reads every control path of every git directory in it. prev
// (Begin only) is the listing of the previous walk of this root, whose unchanged directories
// are not read again; the listing of this walk is returned with the state.
func capture(r *root, prev listing) (*state, listing) {
	var st unix.Stat_t
	_ = unix.Fstat(r.fd, &st)
	w, rec := walk(r, st.Ino, prev)
	s := &state{git: map[string]ctl{}, gitdirs: map[string]uint64{}, ctl: map[string]ctl{},
		links: map[string]uint64{}, seen: map[string]bool{}, errs: w.errs, dirs: w.dirs}
	for _, l := range w.links {
		s.links[l.rel] = l.ino
	}
	var targets []string
	for _, g := range w.git {
		c := ctl{kind: g.kind, ino: g.ino}
		dir, base := splitRel(g.rel)
		switch g.kind {
		case kindDir:
			s.gitdirs[g.rel] = g.ino
		case kindFile, kindLink:
			fd, err := r.openDir(dir)
			if err != nil {
				s.errs = append(s.errs, fmt.Sprintf("%s: %v", g.rel, err))
				break
			}
			var target string
			if g.kind == kindFile {
				c.data, c.sum, c.mode, c.big, err = readFileAt(fd, base, maxGitfile)
				if line, ok := strings.CutPrefix(string(c.data), "gitdir:"); ok {
					target, _, _ = strings.Cut(line, "\n")
					target = strings.TrimSpace(target)
				}
			} else {
				target, err = readlinkAt(fd, base)
				c.data = []byte(target)
			}
			unix.Close(fd)
			if err != nil {
				s.errs = append(s.errs, fmt.Sprintf("%s: %v", g.rel, err))
			}
			if t, ok := r.relOf(dir, target); ok {
				targets = append(targets, t)
			}
		}
		s.git[g.rel] = c
	}
	for _, b := range w.bare {
		s.gitdirs[b.rel] = b.ino
	}
	// The git directories that .git files and links inside the root point at.
	for _, t := range targets {
		if _, ok := s.gitdirs[t]; ok {
			continue
		}
		fd, err := r.openDir(t)
		if err != nil {
			continue // missing, not a directory, or reached through a link: git needs no guard there
		}
		var dst unix.Stat_t
		if unix.Fstat(fd, &dst) == nil {
			s.gitdirs[t] = dst.Ino
		}
		unix.Close(fd)
	}
	for _, g := range slices.Sorted(mapsKeys(s.gitdirs)) {
		s.readGitdir(r, g, 0)
	}
	return s, rec
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// relOf resolves a gitdir target written in a .git file or link in dir to a path relative to
// the root, when it is inside it.
func (r *root) relOf(dir, target string) (string, bool) {
	if target == "" {
		return "", false
	}
	abs := target
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(r.abs, dir, target)
	}
	rel, err := filepath.Rel(r.abs, filepath.Clean(abs))
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// readGitdir records the control paths of the git directory g.
func (s *state) readGitdir(r *root, g string, depth int) {
	if depth > 16 {
		return
	}
	if s.seen[g] {
		return
	}
	s.seen[g] = true
	fd, err := r.openDir(g)
	if err != nil {
		s.errs = append(s.errs, fmt.Sprintf("%s: %v", g, err))
		return
	}
	defer unix.Close(fd)
	ents, err := readDir(fd, make([]byte, 8192))
	if err != nil {
		s.errs = append(s.errs, fmt.Sprintf("%s: %v", g, err))
	}
	for _, e := range ents {
		p := joinRel(g, e.name)
		switch {
		case slices.Contains(controlFiles, e.name):
			s.add(fd, p, e, g)
		case e.name == "info" && e.kind == kindDir:
			ifd, err := unix.Openat(fd, "info", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				s.errs = append(s.errs, fmt.Sprintf("%s: %v", p, err))
				continue
			}
			var st unix.Stat_t
			if err := unix.Fstatat(ifd, "attributes", &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
				s.add(ifd, p+"/attributes", dirent{name: "attributes", kind: kindOfMode(st.Mode), ino: st.Ino}, g)
			}
			unix.Close(ifd)
		case e.name == "hooks":
			s.add(fd, p, e, g)
			if e.kind == kindDir {
				s.tree(fd, p, g, func(string, dirent) bool { return false }, depth)
			}
		case e.name == "modules" || e.name == "worktrees":
			s.add(fd, p, e, g)
			if e.kind == kindDir {
				// Every directory below is recorded; those that are git directories (a
				// submodule's, a worktree's admin directory) are read as such.
				s.tree(fd, p, g, func(rel string, d dirent) bool {
					if d.kind != kindDir || !looksLikeGitdir(r, rel) {
						return false
					}
					s.gitdirs[rel] = d.ino
					s.readGitdir(r, rel, depth+1)
					return true
				}, depth)
			}
		}
	}
}

// looksLikeGitdir reports whether rel holds HEAD and (objects/ and refs/, or commondir), the
// shape git's repository discovery accepts.
func looksLikeGitdir(r *root, rel string) bool {
	fd, err := r.openDir(rel)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	ents, _ := readDir(fd, make([]byte, 8192))
	var head, objects, refs, commondir bool
	for _, e := range ents {
		switch e.name {
		case "HEAD":
			head = e.kind == kindFile || e.kind == kindLink
		case "objects":
			objects = e.kind == kindDir
		case "refs":
			refs = e.kind == kindDir
		case "commondir":
			commondir = e.kind == kindFile
		}
	}
	return head && (objects && refs || commondir)
}

// add records the entry e (named p, in the directory open at dirfd) as a control path of g.
func (s *state) add(dirfd int, p string, e dirent, g string) {
	c := ctl{kind: e.kind, ino: e.ino, gitdir: g}
	var err error
	switch e.kind {
	case kindFile:
		c.data, c.sum, c.mode, c.big, err = readFileAt(dirfd, e.name, maxKeep)
	case kindLink:
		var t string
		t, err = readlinkAt(dirfd, e.name)
		c.data = []byte(t)
	case kindDir:
		if st, serr := lstatAt(dirfd, e.name); serr == nil {
			c.mode = st.Mode & 0o7777
		}
	}
	if err != nil {
		s.errs = append(s.errs, fmt.Sprintf("%s: %v", p, err))
	}
	s.ctl[p] = c
}

// tree records every entry below the directory p (open in dirfd as its last element). stop
// says an entry was handled otherwise and is not descended into.
func (s *state) tree(dirfd int, p, g string, stop func(string, dirent) bool, depth int) {
	if depth > maxDepth {
		return
	}
	_, base := splitRel(p)
	fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		s.errs = append(s.errs, fmt.Sprintf("%s: %v", p, err))
		return
	}
	defer unix.Close(fd)
	ents, err := readDir(fd, make([]byte, 8192))
	if err != nil {
		s.errs = append(s.errs, fmt.Sprintf("%s: %v", p, err))
	}
	for _, e := range ents {
		q := joinRel(p, e.name)
		s.add(fd, q, e, g)
		if stop(q, e) {
			continue
		}
		if e.kind == kindDir {
			s.tree(fd, q, g, stop, depth+1)
		}
	}
}
