//go:build !unix

package search

import (
	"io"
	"os"
)

// readFileInto reads the whole file at path into buf[:0] (growing it). ok is false when the
// file cannot be read or is larger than maxSize (> 0).
func readFileInto(path string, buf []byte, maxSize int64) (data []byte, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return buf[:0], false
	}
	defer f.Close()
	if maxSize > 0 {
		fi, err := f.Stat()
		if err != nil || fi.Size() > maxSize {
			return buf[:0], false
		}
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, true
		}
		if err != nil {
			return buf[:0], false
		}
	}
}
