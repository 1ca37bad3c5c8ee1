//go:build linux

package helper

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// landlockConfigs maps an ABI version to the go-landlock preset that handles
// every right of that version. We pick the preset for min(kernel ABI,
// MaxLandlockABI) explicitly instead of BestEffort: go-landlock's best-effort
// downgrade silently enforces nothing when a rule cannot be downgraded, and
// the helper must never run a command believing it is confined when it is not.
var landlockConfigs = []landlock.Config{
	1: landlock.V1, 2: landlock.V2, 3: landlock.V3, 4: landlock.V4,
	5: landlock.V5, 6: landlock.V6, 7: landlock.V7,
}

// applyLandlock confines the whole helper process (go-landlock applies the
// ruleset to every OS thread) and, through exec and fork, the command.
//
// Reads: everything except cfg.DenyRead. Landlock rights only add up along a
// path, so "everything except X" is granted as: list directories anywhere
// (READ_DIR on /), read and execute files in every directory or file that is
// not X and not an ancestor of X, descending into ancestors (see
// readComplement). Files later created directly inside such an ancestor (a new
// file in $HOME) are not readable; listing names inside X is possible, reading
// its files is not.
//
// Writes: only cfg.Writable (with REFER, so renames between directories of the
// workspace work), cfg.WritableFiles and cfg.DevFiles (ioctl allowed on those:
// ptys). Network (ABI ≥ 4): with the network off, TCP bind/connect are handled
// with no rule allowing any port. Scopes (ABI ≥ 6): signals and abstract unix
// sockets cannot reach processes outside the sandbox.
func applyLandlock(cfg *Config) (int, error) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return 0, fmt.Errorf("landlock unavailable (ABI %d): %v", abi, err)
	}
	use := min(abi, MaxLandlockABI)
	c := landlockConfigs[use]
	if cfg.Inet {
		c.HandledAccessNet = 0
	}

	dirs, files, err := readComplement(cfg.DenyRead)
	if err != nil {
		return 0, err
	}
	rules := []landlock.Rule{
		landlock.PathAccess(llsys.AccessFSReadDir, "/"),
		landlock.RODirs(dirs...).IgnoreIfMissing(),
		landlock.ROFiles(files...).IgnoreIfMissing(),
		landlock.ROFiles(cfg.ReadFiles...).IgnoreIfMissing(),
		landlock.RWFiles(cfg.WritableFiles...).IgnoreIfMissing(),
	}
	rw := landlock.RWDirs(cfg.Writable...)
	if use >= 2 {
		rw = rw.WithRefer()
	}
	rules = append(rules, rw)
	dev := landlock.RWFiles(cfg.DevFiles...).IgnoreIfMissing()
	if use >= 5 {
		dev = dev.WithIoctlDev()
	}
	rules = append(rules, dev)
	if err := c.Restrict(rules...); err != nil {
		return 0, fmt.Errorf("landlock: %w", err)
	}
	return use, nil
}

// readComplement returns the directories and non-directory files to grant read
// access to so that everything outside deny (and only that) is readable. Deny
// entries that do not exist are ignored (nothing to read; they cannot be
// created either, being outside the writable roots); symlinked ones are
// denied at their target too.
func readComplement(deny []string) (dirs, files []string, err error) {
	denied := map[string]bool{}
	ancestors := map[string]bool{}
	add := func(p string) {
		if denied[p] {
			return
		}
		denied[p] = true
		for a := filepath.Dir(p); ; a = filepath.Dir(a) {
			ancestors[a] = true
			if a == "/" {
				break
			}
		}
	}
	for _, d := range deny {
		if !filepath.IsAbs(d) {
			return nil, nil, fmt.Errorf("deny path %q is not absolute", d)
		}
		d = filepath.Clean(d)
		if d == "/" {
			return nil, nil, errors.New("cannot deny reading /")
		}
		if _, err := os.Lstat(d); err != nil {
			continue
		}
		add(d)
		if r, err := filepath.EvalSymlinks(d); err == nil && r != "/" {
			add(r)
		}
	}
	if len(denied) == 0 {
		return []string{"/"}, nil, nil
	}
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			// Unreadable: grant nothing below (fail closed).
			return
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case denied[p]:
			case e.Type()&fs.ModeSymlink != 0:
				// A rule on a symlink would follow it (maybe into a
				// denied tree); its target is reachable by its own path.
			case ancestors[p] && e.IsDir():
				walk(p)
			case e.IsDir():
				dirs = append(dirs, p)
			default:
				files = append(files, p)
			}
		}
	}
	walk("/")
	sort.Strings(dirs)
	sort.Strings(files)
	return dirs, files, nil
}
