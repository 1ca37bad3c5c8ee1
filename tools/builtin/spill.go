package builtin

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// createSpill creates a new spill file in dir and returns it with its path. The spill directory
// usually lies in the session's tmp dir, which sandboxed commands may write (it is their
// TMPDIR), while agentd writes the spill unsandboxed: so nothing here follows a symbolic link a
// command could have planted. dir's parent is opened as an os.Root (it must be a directory no
// command can replace, such as the session's tmp dir inside agentd's state directory), dir is
// created in it when missing, a dir that is not a real directory is refused, and the file is
// created with O_EXCL under a fresh random name, through a root opened on dir (so a swap of dir
// for a link pointing outside, even after the check, fails instead of writing there).
func createSpill(dir string) (*os.File, string, error) {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	root, err := os.OpenRoot(parent)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	if err := root.Mkdir(base, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, "", err
	}
	fi, err := root.Lstat(base)
	if err != nil {
		return nil, "", err
	}
	if !fi.IsDir() {
		return nil, "", fmt.Errorf("%s is not a directory (a %s, perhaps made by a command); agentd does not write through it", dir, fi.Mode().Type())
	}
	sub, err := root.OpenRoot(base)
	if err != nil {
		return nil, "", err
	}
	defer sub.Close()
	for range 16 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name := "bash-" + hex.EncodeToString(b[:]) + ".log"
		f, err := sub.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		return f, filepath.Join(dir, name), nil
	}
	return nil, "", fmt.Errorf("cannot find a free file name in %s", dir)
}
