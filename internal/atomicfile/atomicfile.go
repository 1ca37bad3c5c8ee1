// Package atomicfile replaces small files durably: a reader sees the old content or the new,
// never a mix, and after a crash the file holds one of the two.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data, mode 0600: a temporary file in the same directory (named after
// path, starting with a dot), fsync, rename over path, fsync of the directory. On an error the
// temporary file is removed and path is unchanged.
func Write(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
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
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil // the rename is done; only its durability is unconfirmed
	}
	defer d.Close()
	_ = d.Sync()
	return nil
}
