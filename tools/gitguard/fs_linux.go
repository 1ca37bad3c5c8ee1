//go:build linux

package gitguard

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// kind is the type of a directory entry, as the directory listing says (never followed).
type kind uint8

const (
	kindNone kind = iota
	kindDir
	kindFile
	kindLink
	kindOther
)

func (k kind) String() string {
	switch k {
	case kindDir:
		return "directory"
	case kindFile:
		return "file"
	case kindLink:
		return "symbolic link"
	case kindOther:
		return "special file"
	}
	return "nothing"
}

func kindOfDT(t uint8) kind {
	switch t {
	case unix.DT_DIR:
		return kindDir
	case unix.DT_REG:
		return kindFile
	case unix.DT_LNK:
		return kindLink
	case unix.DT_UNKNOWN:
		return kindNone
	}
	return kindOther
}

func kindOfMode(m uint32) kind {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return kindDir
	case unix.S_IFREG:
		return kindFile
	case unix.S_IFLNK:
		return kindLink
	}
	return kindOther
}

// dirent is one entry of a directory listing.
type dirent struct {
	name string
	kind kind
	ino  uint64
}

// root is a workspace root opened for access that never follows a symbolic link: every path
// is resolved by openat2 with RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH (or component by component
// with O_NOFOLLOW where openat2 is missing). agentd runs unsandboxed, and the tree it reads was
// just written by an untrusted command.
type root struct {
	abs string
	fd  int
}

func openRoot(abs string) (*root, error) {
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: abs, Err: err}
	}
	return &root{abs: abs, fd: fd}, nil
}

func (r *root) close() { unix.Close(r.fd) }

var noOpenat2 bool // set once openat2 answered ENOSYS

// open opens rel (slash separated, relative to the root; "" is the root) without following
// any symbolic link on the way or at the end.
func (r *root) open(rel string, flags int) (int, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	if rel == "" || rel == "." {
		return unix.Openat(r.fd, ".", flags, 0)
	}
	if !noOpenat2 {
		how := unix.OpenHow{Flags: uint64(flags),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		for range 8 {
			fd, err := unix.Openat2(r.fd, rel, &how)
			switch err {
			case unix.EINTR, unix.EAGAIN:
				continue
			case unix.ENOSYS:
				noOpenat2 = true
			default:
				return fd, err
			}
			break
		}
		if !noOpenat2 {
			return -1, unix.EAGAIN
		}
	}
	// Component by component, each with O_NOFOLLOW.
	parts := strings.Split(rel, "/")
	dir, err := unix.Dup(r.fd)
	if err != nil {
		return -1, err
	}
	for i, p := range parts {
		if p == "" || p == "." || p == ".." {
			unix.Close(dir)
			return -1, unix.EINVAL
		}
		f := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW
		if i == len(parts)-1 {
			f = flags
		}
		fd, err := unix.Openat(dir, p, f, 0)
		unix.Close(dir)
		if err != nil {
			return -1, err
		}
		dir = fd
	}
	return dir, nil
}

// openDir opens the directory rel.
func (r *root) openDir(rel string) (int, error) {
	return r.open(rel, unix.O_RDONLY|unix.O_DIRECTORY)
}

// parent opens the directory holding rel and returns it with rel's last element.
func (r *root) parent(rel string) (int, string, error) {
	dir, base := splitRel(rel)
	fd, err := r.openDir(dir)
	return fd, base, err
}

func splitRel(rel string) (dir, base string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// lstatAt is fstatat without following the final link.
func lstatAt(dirfd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// readDir lists the directory open at fd: names, types (from getdents; an lstat only on
// file systems that do not report types) and inode numbers.
func readDir(fd int, buf []byte) ([]dirent, error) {
	var out []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return out, err
		}
		if n <= 0 {
			return out, nil
		}
		for off := 0; off+19 <= n; {
			b := buf[off:n]
			ino := binary.NativeEndian.Uint64(b[0:8])
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen <= 19 || reclen > len(b) {
				return out, errors.New("malformed directory entry")
			}
			typ := b[18]
			name := b[19:reclen]
			if i := indexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			if s := string(name); s != "." && s != ".." && ino != 0 {
				k := kindOfDT(typ)
				if k == kindNone {
					if st, err := lstatAt(fd, s); err == nil {
						k = kindOfMode(st.Mode)
					} else {
						continue // gone
					}
				}
				out = append(out, dirent{name: s, kind: k, ino: ino})
			}
		}
	}
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// readFileAt reads the regular file name in dirfd, keeping at most max bytes; big reports a
// longer file (whose data is then nil). sum hashes the whole content; mode is its permission
// bits.
func readFileAt(dirfd int, name string, max int64) (data []byte, sum [32]byte, mode uint32, big bool, err error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, sum, 0, false, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, sum, 0, false, err
	}
	if kindOfMode(st.Mode) != kindFile {
		return nil, sum, 0, false, unix.EINVAL
	}
	h := sha256.New()
	data, err = io.ReadAll(io.TeeReader(io.LimitReader(f, max+1), h))
	if err == nil && int64(len(data)) > max {
		data, big = nil, true
		_, err = io.Copy(h, f)
	}
	if err != nil {
		return nil, sum, 0, false, err
	}
	h.Sum(sum[:0])
	return data, sum, st.Mode & 0o7777, big, nil
}

func readlinkAt(dirfd int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// writeFileAt replaces name in dirfd by a regular file with data and mode, atomically (a
// temporary file in the same directory, fsync, rename over).
func writeFileAt(dirfd int, name string, data []byte, mode uint32) error {
	tmp := ".agentd-gitguard-" + name
	_ = unix.Unlinkat(dirfd, tmp, 0)
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(os.FileMode(mode & 0o777))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
	}
	return err
}

// removeAllAt removes name in dirfd and everything below it, never following a link.
func removeAllAt(dirfd int, name string, depth int) error {
	st, err := lstatAt(dirfd, name)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return err
	}
	if kindOfMode(st.Mode) != kindDir {
		return unix.Unlinkat(dirfd, name, 0)
	}
	if depth > maxDepth {
		return unix.ELOOP
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.EACCES {
		_ = unix.Fchmodat(dirfd, name, 0o700, 0)
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return err
	}
	ents, err := readDir(fd, make([]byte, 8192))
	if err == nil {
		for _, e := range ents {
			if err = removeAllAt(fd, e.name, depth+1); err != nil {
				break
			}
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// copyOutAt copies name in dirfd to the absolute path dst (in agentd's own state directory):
// directories, regular files and links (as links), never following one; at most *budget bytes
// of file content, the rest is left out and reported by the returned error.
func copyOutAt(dirfd int, name, dst string, budget *int64, depth int) error {
	st, err := lstatAt(dirfd, name)
	if err != nil {
		return err
	}
	switch kindOfMode(st.Mode) {
	case kindLink:
		t, err := readlinkAt(dirfd, name)
		if err != nil {
			return err
		}
		return os.Symlink(t, dst)
	case kindFile:
		if st.Size > *budget {
			return errors.New("too large to keep")
		}
		data, _, _, big, err := readFileAt(dirfd, name, *budget)
		if err != nil {
			return err
		}
		if big {
			return errors.New("too large to keep")
		}
		*budget -= int64(len(data))
		return os.WriteFile(dst, data, 0o600)
	case kindDir:
		if depth > maxDepth {
			return unix.ELOOP
		}
		if err := os.Mkdir(dst, 0o700); err != nil {
			return err
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		ents, err := readDir(fd, make([]byte, 8192))
		if err != nil {
			return err
		}
		var first error
		for _, e := range ents {
			if err := copyOutAt(fd, e.name, filepath.Join(dst, e.name), budget, depth+1); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	return nil // special files are not kept
}
