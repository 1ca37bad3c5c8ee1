package store

import (
	"os"
	"path/filepath"
)

// replaceFile replaces path with data like writeFileAtomic (temporary file, rename: a reader
// sees the old content or the new) but without fsyncs. Only for files that are an index of
// durable data and are checked and rebuilt when stale or damaged (the session meta index): after
// a power loss such a file may be old, empty or missing, never wrong.
func replaceFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), tmpPrefix+"*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
