//go:build unix

package search

import (
	"errors"
	"syscall"
)

// readFileInto reads the whole file at path into buf[:0] (growing it) with plain system
// calls: os.Open costs extra fcntl and epoll calls per file, which dominate a grep.
// ok is false when the file cannot be read or is larger than maxSize (> 0).
func readFileInto(path string, buf []byte, maxSize int64) (data []byte, ok bool) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return buf[:0], false
	}
	defer syscall.Close(fd)
	if maxSize > 0 {
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) != nil || st.Size > maxSize {
			return buf[:0], false
		}
	}
	buf = buf[:0]
	sized := false
	for {
		if len(buf) == cap(buf) {
			// The file is larger than the buffer: grow once to its size (plus one byte so
			// that the final read can report the end of the file).
			var st syscall.Stat_t
			if !sized && syscall.Fstat(fd, &st) == nil && st.Size >= int64(len(buf)) {
				sized = true
				nb := make([]byte, len(buf), st.Size+1)
				copy(nb, buf)
				buf = nb
			} else {
				buf = append(buf, 0)[:len(buf)]
			}
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return buf[:0], false
		}
		if n <= 0 {
			return buf, true
		}
		buf = buf[:len(buf)+n]
	}
}
