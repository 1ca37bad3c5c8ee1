//go:build unix

package search

import (
	"os"

	"golang.org/x/sys/unix"
)

// hardLinked reports whether the entry name of the open directory dir is a regular file with more
// than one link (not following a symbolic link).
func hardLinked(dir *os.File, name string) bool {
	var st unix.Stat_t
	if unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1
}

// hardLinkedPath is hardLinked for a path.
func hardLinkedPath(p string) bool {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1
}
