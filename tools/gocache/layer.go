package gocache

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Agentd's writable layer is one per workspace. Every sandboxed command can write the layer its
// builds use, in place (same size, so nothing but a hash tells), and the go command reads a
// cache output by its path after the cache program answered, so no check of the program's can
// hold against a command rewriting the file after it (the program runs inside the same sandbox
// as the command, and writes nowhere the command cannot). A layer per workspace confines what a
// command writes to builds in its own workspace, whose files it can change anyway; the user's
// read-only layer still gives a new workspace its first build warm (docs/security.md,
// docs/benchmarks.md).

// layersDir is the directory of the per-workspace layers inside agentd's cache directory.
const layersDir = "ws"

// stampFile is touched in a layer each time a session opens it; layers whose stamp is older
// than trimLimit are removed by the next session of any workspace.
const stampFile = "last-used"

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Layer is the writable layer of workspace ws (canonical, absolute) in agentd's Go cache
// directory dir: dir/ws/<name>-<hash of ws>.
func Layer(dir, ws string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(ws)))
	name := unsafeName.ReplaceAllString(filepath.Base(ws), "_")
	if len(name) > 32 {
		name = name[:32]
	}
	return filepath.Join(dir, layersDir, fmt.Sprintf("%s-%x", strings.Trim(name, "."), sum[:8]))
}

// legacyEntry matches what the shared layer of earlier versions left directly in dir: its 256
// object directories and the trim stamp.
var legacyEntry = regexp.MustCompile(`^([0-9a-f]{2}|trim\.txt|README)$`)

// OpenLayer creates (or reuses) workspace ws's layer in dir and returns it. It also removes,
// best effort, the layers of other workspaces unused for five days and what the shared layer of
// earlier versions left in dir (written by commands of every workspace, read by none now).
func OpenLayer(dir, ws string, now time.Time) (string, error) {
	layer := Layer(dir, ws)
	if err := os.MkdirAll(layer, 0o700); err != nil {
		return "", err
	}
	stamp := filepath.Join(layer, stampFile)
	// Commands can write the layer: never follow a link a command put in the stamp's place.
	if f, err := os.OpenFile(stamp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	}
	ts := unix.NsecToTimespec(now.UnixNano())
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, stamp, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", err
	}
	ents, _ := os.ReadDir(filepath.Join(dir, layersDir))
	for _, e := range ents {
		p := filepath.Join(dir, layersDir, e.Name())
		if p == layer || !e.IsDir() {
			continue
		}
		if st, err := os.Lstat(filepath.Join(p, stampFile)); err == nil && now.Sub(st.ModTime()) > trimLimit+mtimeInterval {
			os.RemoveAll(p)
		}
	}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if legacyEntry.MatchString(e.Name()) {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}
	return layer, nil
}
