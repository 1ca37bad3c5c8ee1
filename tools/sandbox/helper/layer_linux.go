//go:build linux

package helper

import (
	"encoding/json"

	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Layer is one workspace root's copy-on-write layer: Root (absolute, canonical) is mounted over
// by an overlay whose lower layer is Root itself, upper layer Upper and work directory Work (both
// on one file system, outside every workspace root).
type Layer struct {
	Root  string `json:"root"`
	Upper string `json:"upper"`
	Work  string `json:"work"`
}

// layerRun is the first stage of a bubblewrap command: args are LAYERS_JSON -- BWRAP ARGV... It
// runs in a user and mount namespace of its own (the daemon's clone flags), where it is root
// over the daemon's own ids: it makes the mount tree private, mounts each layer (shallower roots
// first, so a root inside another one is layered over the outer root's view) and executes
// bubblewrap, which binds the layered roots into the sandbox like any other directory. Nothing
// mounted here is visible outside: the daemon, the user's editor and other commands see the
// workspace as it is, and what the command writes lands in the upper directories.
func layerRun(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		return helperFail("usage: %s LAYERS_JSON -- BWRAP ARGV...", LayerArg)
	}
	var layers []Layer
	if err := json.Unmarshal([]byte(args[0]), &layers); err != nil {
		return helperFail("bad layers: %v", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return helperFail("making the mount tree private: %v", err)
	}
	for _, l := range layers {
		for _, p := range []string{l.Root, l.Upper, l.Work} {
			if !filepath.IsAbs(p) || strings.ContainsAny(p, ",:\\") {
				// overlayfs options are comma-separated and lowerdir colon-separated:
				// such a path cannot be passed (the daemon runs such roots in the weaker mode).
				return helperFail("bad layer path %q", p)
			}
		}
		opts := "userxattr,lowerdir=" + l.Root + ",upperdir=" + l.Upper + ",workdir=" + l.Work
		if err := unix.Mount("overlay", l.Root, "overlay", 0, opts); err != nil {
			return helperFail("mounting the copy-on-write layer over %s: %v", l.Root, err)
		}
	}
	argv := args[2:]
	err := syscall.Exec(argv[0], argv, os.Environ())
	return helperFail("exec %s: %v", argv[0], err)
}

// LayerPathOK reports whether p can name a layer's directory (see layerRun).
func LayerPathOK(p string) bool { return filepath.IsAbs(p) && !strings.ContainsAny(p, ",:\\") }
