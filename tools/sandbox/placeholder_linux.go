//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A placeholder carries an extended attribute naming the process that made it (boot, pid, start
// time). A daemon killed while a command ran cannot remove its placeholders: read-only empty
// directories named .vscode, .nvim.lua, .envrc… left in the user's workspace, where the editor can
// no longer write its settings. The next session or command in that workspace removes those whose
// maker is gone (SweepPlaceholders, and protect before it plans a mount).
const placeholderXattr = "user.agentd.placeholder"

var ownerOnce = sync.OnceValue(func() string { return processTag(os.Getpid()) })

// processTag identifies a process across pid reuse and reboots: boot id, pid, start time. "" when
// the process does not exist.
func processTag(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// Field 22 (start time) counted after the command name, which may hold spaces: after ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return ""
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return fmt.Sprintf("%s:%d:%s", strings.TrimSpace(string(boot)), pid, f[19])
}

// makePlaceholder creates the placeholder p: an empty directory, mode 0555, tagged with this
// process. The tag needs write permission, so the directory is made beside p (mode 0700), tagged,
// made read-only, checked empty — a command running meanwhile as the same user could have put a
// file in it before it was read-only — and only then renamed to p, never over an entry that
// appeared meanwhile (fs.ErrExist). Where that cannot be done (no user extended attributes, no
// RENAME_NOREPLACE) p is made directly, untagged: it is never swept.
func makePlaceholder(p string) error {
	tag := ownerOnce()
	if tag == "" {
		return os.Mkdir(p, 0o555)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(p), ".agentd-placeholder-")
	if err != nil {
		return err
	}
	err = unix.Lsetxattr(tmp, placeholderXattr, []byte(tag), 0)
	if err == nil {
		err = os.Chmod(tmp, 0o555)
	}
	if err == nil {
		var names []string
		if names, err = readNames(tmp); err == nil && len(names) > 0 {
			err = fmt.Errorf("sandbox: %s was written to while it was being made", tmp)
		}
	}
	if err == nil {
		err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, p, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			os.Remove(tmp)
			return fs.ErrExist
		}
	}
	if err == nil {
		return nil
	}
	// Only an empty directory is removed: what a command put in it may be the user's files it
	// moved there.
	_ = os.Chmod(tmp, 0o700)
	if rerr := os.Remove(tmp); rerr != nil {
		slog.Warn("sandbox: a placeholder being made was written to; it is left as it is", "path", tmp, "err", rerr)
	}
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) {
		return os.Mkdir(p, 0o555)
	}
	return err
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// stalePlaceholder reports whether p is a placeholder whose maker is gone: an empty directory,
// mode 0555, tagged by a process that no longer runs.
func stalePlaceholder(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o555 {
		return false
	}
	buf := make([]byte, 128)
	n, err := unix.Lgetxattr(p, placeholderXattr, buf)
	if err != nil {
		return false
	}
	tag := string(buf[:n])
	parts := strings.Split(tag, ":")
	if len(parts) != 3 {
		return false
	}
	var pid int
	if _, err := fmt.Sscanf(parts[1], "%d", &pid); err != nil || pid <= 0 {
		return false
	}
	return processTag(pid) != tag
}

// removeStale removes p if it is a placeholder whose maker is gone and this process does not use
// it. It reports whether p is gone. Call with placeholders locked.
func removeStale(p string) bool {
	if placeholders.m[p] != nil || !stalePlaceholder(p) {
		return false
	}
	err := os.Remove(p) // an rmdir: fails if anything was put inside
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		slog.Info("sandbox: removed a placeholder left by an agentd that ended during a command", "path", p)
		return true
	}
	return false
}

// SweepPlaceholders removes, below each workspace root, the placeholders of protected paths
// (relative, slash separated; every leading directory too) left by an agentd process that
// ended while a command ran.
func SweepPlaceholders(roots, protected []string) {
	placeholders.Lock()
	defer placeholders.Unlock()
	for _, root := range roots {
		for _, rel := range protected {
			// The placeholder sits at the first missing component: try the deepest first.
			comps := strings.Split(filepath.Clean(rel), "/")
			for i := len(comps); i > 0; i-- {
				removeStale(filepath.Join(root, filepath.Join(comps[:i]...)))
			}
		}
	}
}
