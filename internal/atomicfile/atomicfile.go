// Package atomicfile replaces small files: a reader sees the old content or the new, never a
// mix, and (unless Options.NoSync) after a crash the file holds one of the two.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// Options choose how a temporary file is named and how durable a write is.
type Options struct {
	// TempPrefix starts the temporary file's name (default "." + the file's name + ".tmp-"), for
	// a sweep that recognises the temporary files of writers that died.
	TempPrefix string
	// NoSync skips the fsyncs: only for a file that indexes durable data and is rebuilt when
	// stale or damaged, which after a power loss may be old, empty or missing.
	NoSync bool
	// StrictDirSync reports a failed fsync of the directory (the file is replaced then, but the
	// rename may not survive a power loss); by default the rename's success is the result.
	StrictDirSync bool
}

// Write replaces path with data, mode 0600: a temporary file in the same directory, fsync,
// rename over path, fsync of the directory. On an error the temporary file is removed and path
// is unchanged.
func Write(path string, data []byte) error { return WriteWith(path, data, Options{}) }

// WriteWith is Write with options.
func WriteWith(path string, data []byte, o Options) (err error) {
	dir := filepath.Dir(path)
	prefix := o.TempPrefix
	if prefix == "" {
		prefix = "." + filepath.Base(path) + ".tmp-"
	}
	tmp, err := os.CreateTemp(dir, prefix+"*") // mode 0600
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if !o.NoSync {
		if err := tmp.Sync(); err != nil {
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if o.NoSync {
		return nil
	}
	if err := SyncDir(dir); err != nil && o.StrictDirSync {
		return err
	}
	return nil
}

// SyncDir fsyncs a directory so that a new or renamed entry in it survives a power loss. A file
// system that cannot fsync a directory is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return nil
}
