package fsafe

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentd/agentd/tools"
)

// TempPrefix starts the name of every temporary file WriteFile creates; SweepTemps removes
// leftovers. The full name is TempPrefix, the writing process's ID and start time (in clock
// ticks since boot, as in /proc/<pid>/stat; 0 where unknown), then 16 hex digits:
// ".agentd-tmp-<pid>-<start>-<hex>". Older versions wrote TempPrefix and 16 hex digits only.
const TempPrefix = ".agentd-tmp-"

// WriteOptions tune WriteFile.
type WriteOptions struct {
	// Perm is the mode of a new file, before the umask; zero means 0o644. A file that is
	// replaced keeps its permission bits (setuid and setgid are dropped) and, where the process
	// may, its owner and group.
	Perm fs.FileMode
	// MkdirAll creates missing parent directories (0o755 before the umask), through the root.
	MkdirAll bool
	// deferDirSync leaves the directory's fsync after the rename to SyncDirs (FS.Commit).
	deferDirSync bool
}

// WriteFile replaces the file at p with data atomically: a reader, a crash or a SIGKILL at any
// moment sees either the old content or the new, never a mix. It writes a temporary file in the
// same directory, fsyncs it, gives it the old file's mode (and owner), renames it over p and
// fsyncs the directory. Everything goes through p's root, on a directory handle checked to be
// p's canonical parent, so the write can never land outside the workspace: the rename replaces
// the name and never follows it, so a hard link is broken, not written through. A symlink at p
// (the tree changed since Resolve), a directory and any non-regular file are refused.
//
// It returns the stamp of the new content. It does not lock: FS.Commit serializes writes.
func WriteFile(p Path, data []byte, opt WriteOptions) (Stamp, error) {
	return writeFile(p, data, opt, nil)
}

// writeHooked is WriteFile under the context's write hook (WithWriteHook): the hook runs while the
// temporary file is written and fsynced, and the rename waits for it, so what the hook makes
// durable (a checkpoint's intent record) is durable before the file is replaced, and its fsync
// overlaps the file's own. A hook error stops the write: the temporary file is removed and the
// file is untouched.
func writeHooked(ctx context.Context, p Path, data []byte, opt WriteOptions) (Stamp, error) {
	if _, ok := ctx.Value(writeHookKey{}).(func(Path, []byte) error); !ok {
		return writeFile(p, data, opt, nil)
	}
	hookDone := make(chan error, 1)
	started := false // writeFile failed before its temporary file: the hook never runs
	start := func() {
		started = true
		go func() { hookDone <- beforeDiskWrite(ctx, p, data) }()
	}
	return writeFile(p, data, opt, func(phase writePhase) error {
		if phase == phaseTemp {
			start()
			return nil
		}
		if !started {
			return nil
		}
		return <-hookDone
	})
}

// writePhase is where writeFile is when it calls its hook.
type writePhase int

const (
	phaseTemp   writePhase = iota // the temporary file is open, nothing written
	phaseRename                   // the temporary file is durable; the rename is next
)

func writeFile(p Path, data []byte, opt WriteOptions, hook func(writePhase) error) (Stamp, error) {
	if p.root == nil {
		return Stamp{}, tools.Errorf(tools.InvalidArgs, "the path was not resolved")
	}
	if p.rel == "." {
		return Stamp{}, tools.Errorf(tools.InvalidArgs, "%s is the workspace root, a directory", p.abs)
	}
	dirRel, base := path.Split(p.rel)
	dirRel = strings.TrimSuffix(dirRel, "/")
	if dirRel == "" {
		dirRel = "."
	}
	dirPath := Path{root: p.root, rel: dirRel, abs: path.Dir(p.abs)}

	if opt.MkdirAll && dirRel != "." {
		if err := p.root.r.MkdirAll(dirRel, 0o755); err != nil {
			return Stamp{}, mapErr(dirPath, err)
		}
	}
	dir, err := p.root.r.OpenRoot(dirRel)
	if errors.Is(err, fs.ErrNotExist) {
		return Stamp{}, tools.Errorf(tools.NotFound, "the directory %s does not exist", dirRel)
	}
	if err != nil {
		return Stamp{}, mapErr(dirPath, err)
	}
	defer dir.Close()
	df, err := dir.Open(".")
	if err != nil {
		return Stamp{}, mapErr(dirPath, err)
	}
	defer func() {
		if df != nil {
			df.Close()
		}
	}()
	if err := verifyOpened(df, dirPath.abs, dirRel); err != nil {
		return Stamp{}, err
	}

	perm := opt.Perm.Perm()
	if perm == 0 {
		perm = 0o644
	}
	replacing := false
	uid, gid := -1, -1
	switch fi, err := dir.Lstat(base); {
	case err == nil:
		if err := checkRegular(p, fi); err != nil {
			return Stamp{}, err
		}
		replacing = true
		perm = fi.Mode().Perm()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(st.Uid), int(st.Gid)
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return Stamp{}, mapErr(p, err)
	}

	name := tempName()
	tf, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return Stamp{}, mapErr(p, err)
	}
	done := false
	defer func() {
		if !done {
			tf.Close()
			dir.Remove(name)
		}
	}()
	// The lock says "in use" to a sweeper that cannot tell whether the PID in the name is alive
	// (another PID namespace); it goes away with the process, whatever kills it.
	_ = syscall.Flock(int(tf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	waitHook := func() error { return nil }
	if hook != nil {
		_ = hook(phaseTemp)
		waited, herr := false, error(nil)
		waitHook = func() error {
			if !waited {
				waited, herr = true, hook(phaseRename)
			}
			return herr
		}
		defer waitHook() // the hook never outlives the call, even when the write fails
	}
	if _, err := tf.Write(data); err != nil {
		return Stamp{}, mapErr(p, err)
	}
	if replacing {
		if err := tf.Chmod(perm); err != nil {
			return Stamp{}, mapErr(p, err)
		}
		if uid != os.Geteuid() || gid != os.Getegid() {
			_ = tf.Chown(uid, gid) // best effort: only root may give a file away
		}
	}
	if err := tf.Sync(); err != nil {
		return Stamp{}, mapErr(p, err)
	}
	if err := waitHook(); err != nil {
		return Stamp{}, err
	}
	if testHookBeforeRename != nil {
		testHookBeforeRename(path.Join(dirRel, name))
	}
	fi, err := tf.Stat()
	if err != nil {
		return Stamp{}, mapErr(p, err)
	}
	if err := tf.Close(); err != nil {
		return Stamp{}, mapErr(p, err)
	}
	if err := dir.Rename(name, base); err != nil {
		return Stamp{}, mapErr(p, err)
	}
	done = true
	// The rename is in place; a failed directory fsync (some file systems refuse it) only
	// weakens durability across a power loss, so it is not reported as a failed write.
	if opt.deferDirSync {
		deferDirSync(df) // SyncDirs fsyncs and closes it
	} else {
		syncDirNow(df, false)
	}
	df = nil

	in := infoOf(fi)
	return Stamp{Source: SourceDisk, Size: int64(len(data)), Hash: sha256.Sum256(data),
		ModTime: in.ModTime, Dev: in.Dev, Inode: in.Inode, Links: in.Links, Taken: time.Now()}, nil
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails on Linux
	return hex.EncodeToString(b[:])
}

// testHookBeforeRename, when set (by tests only), runs when the temporary file (named relative
// to the root) is written and synced, right before the rename.
var testHookBeforeRename func(tempRel string)

// self is this process's identity in temp names.
var self = sync.OnceValue(func() string {
	pid := os.Getpid()
	start, _ := processStart(pid)
	return strconv.Itoa(pid) + "-" + strconv.FormatUint(start, 10)
})

func tempName() string { return TempPrefix + self() + "-" + randomHex() }

// processStart returns the start time of process pid (clock ticks since boot, field 22 of
// /proc/<pid>/stat) and whether the process exists. Without /proc it can only say whether the
// process exists (start 0).
func processStart(pid int) (uint64, bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if runtime.GOOS == "linux" {
			return 0, false
		}
		err := syscall.Kill(pid, 0)
		return 0, err == nil || errors.Is(err, syscall.EPERM)
	}
	// The command name (field 2) is in parentheses and may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, true
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0, true
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, true
	}
	return start, true
}

// tempOwner parses a name WriteFile could have created: ok is false for any other name; legacy
// is set for the old form (no owner in the name).
func tempOwner(name string) (pid int, start uint64, legacy, ok bool) {
	rest, found := strings.CutPrefix(name, TempPrefix)
	if !found {
		return 0, 0, false, false
	}
	if isHex16(rest) {
		return 0, 0, true, true
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 3 || !isHex16(parts[2]) {
		return 0, 0, false, false
	}
	pid, err1 := strconv.Atoi(parts[0])
	start, err2 := strconv.ParseUint(parts[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 || parts[0] != strconv.Itoa(pid) || parts[1] != strconv.FormatUint(start, 10) {
		return 0, 0, false, false
	}
	return pid, start, false, true
}

func isHex16(s string) bool {
	if len(s) != 16 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ownerGone reports whether the writer of the temp file rel (in root r) is gone: the process
// named in the file's name no longer runs (or is another process under a reused PID), and no
// process holds the file's lock.
func ownerGone(r *os.Root, rel string, pid int, start uint64) bool {
	if st, alive := processStart(pid); alive && (st == start || st == 0 || start == 0) {
		return false
	}
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist) // unreadable (mode 0): the name decides
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// SweepTemps removes temporary files that WriteFile left behind when its process died, in every
// root of w, and nothing else: regular files named like WriteFile's temps whose writer is gone —
// the process named in the name no longer runs (or its PID was reused) and nobody holds the
// file's lock —, whatever their age. A temp of a live writer (this process, or another agentd
// on the same workspace) is left alone. Temps of the older form, which name no writer, are
// removed when their modification time is at least olderThan ago (call it with an age longer
// than any write takes, minutes). It walks the whole tree through the roots, never following
// symlinks, and stops when ctx is done. It returns the canonical absolute paths it removed.
func SweepTemps(ctx context.Context, w *Workspace, olderThan time.Duration) ([]string, error) {
	var removed []string
	var errs []error
	for _, rt := range w.roots {
		err := fs.WalkDir(rt.r.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if err != nil || !d.Type().IsRegular() {
				return nil // unreadable directories are skipped
			}
			pid, start, legacy, ok := tempOwner(d.Name())
			switch {
			case !ok:
				return nil
			case legacy:
				fi, err := d.Info()
				if err != nil || time.Since(fi.ModTime()) < olderThan {
					return nil
				}
			case !ownerGone(rt.r, rel, pid, start):
				return nil
			}
			if err := rt.r.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
				return nil
			}
			removed = append(removed, rt.abs+"/"+rel)
			return nil
		})
		if err != nil {
			errs = append(errs, err)
			break
		}
	}
	return removed, errors.Join(errs...)
}

type writeHookKey struct{}

// WithWriteHook returns a context under which FS.Commit calls hook with the path and the exact
// content before it replaces the file on disk (not for documents written through the editor): the
// hook runs while the temporary file is written and fsynced, and the rename waits for it to
// return. An error from hook stops the write: the file is not replaced. Checkpoints use it to record what a
// write is about to put on disk, so that a turn killed between the write and its bookkeeping
// can still be reverted. Hooks nest: the outer one runs first.
func WithWriteHook(ctx context.Context, hook func(p Path, data []byte) error) context.Context {
	if prev, ok := ctx.Value(writeHookKey{}).(func(Path, []byte) error); ok {
		inner := hook
		hook = func(p Path, data []byte) error {
			if err := prev(p, data); err != nil {
				return err
			}
			return inner(p, data)
		}
	}
	return context.WithValue(ctx, writeHookKey{}, hook)
}

// beforeDiskWrite runs the context's write hook, if any.
func beforeDiskWrite(ctx context.Context, p Path, data []byte) error {
	hook, ok := ctx.Value(writeHookKey{}).(func(Path, []byte) error)
	if !ok {
		return nil
	}
	if err := hook(p, data); err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return err
		}
		return tools.Errorf(tools.IOError, "%s was not written: %v", p.rel, err)
	}
	return nil
}
