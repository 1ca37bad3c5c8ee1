package fsafe

import (
	"os"
	"strconv"
)

// openedPath returns the path the kernel reports for the open file f (/proc/self/fd/N), and
// whether it could tell.
func openedPath(f *os.File) (string, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", false
	}
	var target string
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		target, rerr = os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	}); err != nil || rerr != nil {
		return "", false
	}
	return target, true
}
