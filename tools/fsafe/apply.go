package fsafe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentd/agentd/tools"
)

// ApplyKind is what Apply does.
type ApplyKind int

// Apply kinds.
const (
	// ApplyFile puts the content of Src (a file outside the workspace) at the path, with Mode,
	// atomically (temporary file, fsync, rename).
	ApplyFile ApplyKind = iota
	// ApplySymlink makes the path a symbolic link to Target (atomically).
	ApplySymlink
	// ApplyMkdir makes the directory (and its parents) with Mode.
	ApplyMkdir
	// ApplyRemove removes the path (a file, a link or an empty directory); a missing one is fine.
	ApplyRemove
	// ApplyChmod sets Mode.
	ApplyChmod
)

// ApplyOp is one change of a command's or MCP server's change set, applied by Apply.
type ApplyOp struct {
	Kind ApplyKind
	// Root is the workspace root (canonical absolute); Rel is relative to it, slash-separated.
	Root, Rel string
	Src       string
	Target    string
	Mode      fs.FileMode
}

// Apply makes one change of a change set in the workspace, through the root's os.Root (no
// component of Rel can lead outside it) and under the file's mutation lock, like a tool's write.
func (f *FS) Apply(ctx context.Context, op ApplyOp) error {
	if err := ctx.Err(); err != nil {
		return tools.Errorf(tools.Cancelled, "cancelled")
	}
	r := f.ws.rootOf(op.Root)
	rel := path.Clean(op.Rel)
	if r == nil || r.abs != op.Root || rel == "." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return fmt.Errorf("fsafe: %s is not a path in the workspace root %s", op.Rel, op.Root)
	}
	abs := filepath.Join(r.abs, filepath.FromSlash(rel))
	unlock := f.queue.Lock(abs)
	defer unlock()
	dirRel, base := path.Split(rel)
	dirRel = strings.TrimSuffix(dirRel, "/")
	if dirRel == "" {
		dirRel = "."
	}
	switch op.Kind {
	case ApplyMkdir:
		if err := r.r.MkdirAll(rel, op.Mode.Perm()); err != nil {
			return err
		}
		return r.r.Chmod(rel, op.Mode.Perm())
	case ApplyChmod:
		return r.r.Chmod(rel, op.Mode.Perm())
	case ApplyRemove:
		err := r.r.Remove(rel)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if dirRel != "." {
		if err := r.r.MkdirAll(dirRel, 0o755); err != nil {
			return err
		}
	}
	dir, err := r.r.OpenRoot(dirRel)
	if err != nil {
		return err
	}
	defer dir.Close()
	name := tempName()
	switch op.Kind {
	case ApplySymlink:
		if err := dir.Symlink(op.Target, name); err != nil {
			return err
		}
	case ApplyFile:
		if err := copyInto(dir, name, op.Src, op.Mode.Perm()); err != nil {
			dir.Remove(name)
			return err
		}
	default:
		return fmt.Errorf("fsafe: unknown apply kind %d", op.Kind)
	}
	if fi, err := dir.Lstat(base); err == nil && fi.IsDir() {
		// A directory the command replaced by a file: its entries were removed before.
		if err := dir.Remove(base); err != nil {
			dir.Remove(name)
			return err
		}
	}
	if err := dir.Rename(name, base); err != nil {
		dir.Remove(name)
		return err
	}
	if df, err := dir.Open("."); err == nil {
		deferDirSync(df)
	}
	return nil
}

func copyInto(dir *os.Root, name, src string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_ = syscall.Flock(int(out.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) // in use (see writeFile)
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(perm); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Unsaved reports whether the file at abs is open in the editor with content that differs from
// the disk: a change set must not replace it (the user's unsaved work).
func (f *FS) Unsaved(abs string) bool {
	if f.overlay == nil {
		return false
	}
	doc, ok := f.overlay.Document(abs)
	if !ok {
		return false
	}
	disk, err := os.ReadFile(abs)
	return err != nil || !bytes.Equal(disk, doc.Content)
}
