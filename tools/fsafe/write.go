package fsafe

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/agentd/agentd/tools"
)

// TempPrefix starts the name of every temporary file WriteFile creates; SweepTemps removes
// leftovers. The full name is TempPrefix followed by 16 hex digits.
const TempPrefix = ".agentd-tmp-"

// WriteOptions tune WriteFile.
type WriteOptions struct {
	// Perm is the mode of a new file, before the umask; zero means 0o644. A file that is
	// replaced keeps its permission bits (setuid and setgid are dropped) and, where the process
	// may, its owner and group.
	Perm fs.FileMode
	// MkdirAll creates missing parent directories (0o755 before the umask), through the root.
	MkdirAll bool
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
	defer df.Close()
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

	name := TempPrefix + randomHex()
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
	_ = df.Sync()

	in := infoOf(fi)
	return Stamp{Source: SourceDisk, Size: int64(len(data)), Hash: sha256.Sum256(data),
		ModTime: in.ModTime, Dev: in.Dev, Inode: in.Inode, Links: in.Links, Taken: time.Now()}, nil
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails on Linux
	return hex.EncodeToString(b[:])
}

// isTempName reports whether name is one WriteFile could have created.
func isTempName(name string) bool {
	rest, ok := strings.CutPrefix(name, TempPrefix)
	if !ok || len(rest) != 16 {
		return false
	}
	for _, c := range rest {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// SweepTemps removes temporary files that WriteFile left behind when the process died, in every
// root of w: regular files named like TempPrefix+16 hex digits whose modification time is at
// least olderThan ago. Call it at start, with an age longer than any write takes (minutes). It
// walks the whole tree through the roots, never following symlinks, and stops when ctx is done.
// It returns the canonical absolute paths it removed.
func SweepTemps(ctx context.Context, w *Workspace, olderThan time.Duration) ([]string, error) {
	var removed []string
	var errs []error
	for _, rt := range w.roots {
		err := fs.WalkDir(rt.r.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if err != nil || !d.Type().IsRegular() || !isTempName(d.Name()) {
				return nil // unreadable directories are skipped
			}
			fi, err := d.Info()
			if err != nil || time.Since(fi.ModTime()) < olderThan {
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
