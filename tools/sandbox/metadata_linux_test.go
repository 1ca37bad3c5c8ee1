//go:build linux

package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// metaProbeArg makes the test binary, run as a command in the sandbox, take pairs of arguments
// (a probe name and a path), make each probe's one syscall on its path and print a line
// "<n> result=ok" or "<n> result=<errno>" for the n-th pair. It is dispatched from init, before
// TestMain (whose probe table belongs to main_linux_test.go).
const metaProbeArg = "__metadata-probe"

func init() {
	if len(os.Args) < 4 || os.Args[1] != metaProbeArg || len(os.Args)%2 != 0 {
		return
	}
	for i := 2; i < len(os.Args); i += 2 {
		err := metaProbe(os.Args[i], os.Args[i+1])
		var errno syscall.Errno
		switch {
		case err == nil:
			fmt.Printf("%d result=ok\n", i/2-1)
		case errors.As(err, &errno):
			fmt.Printf("%d result=%s\n", i/2-1, unix.ErrnoName(errno))
		default:
			fmt.Printf("%d result=%v\n", i/2-1, err)
		}
	}
	os.Exit(0)
}

// probeTime is the time the utimes probe sets: far from any time a test file has.
var probeTime = time.Date(2001, 9, 9, 1, 46, 40, 0, time.UTC)

// aclXattr is a POSIX access ACL (the system.posix_acl_access value) that adds read and write
// for user 65534 to the owner's rw, group r, other r.
func aclXattr() []byte {
	const (
		userObj, user, groupObj, mask, other = 0x01, 0x02, 0x04, 0x10, 0x20
		undefinedID                          = 0xffffffff
	)
	b := binary.LittleEndian.AppendUint32(nil, 2) // version
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{userObj, 6, undefinedID}, {user, 6, 65534}, {groupObj, 4, undefinedID}, {mask, 6, undefinedID}, {other, 4, undefinedID}} {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// Inode flags (linux/fs.h), for FS_IOC_SETFLAGS.
const (
	fsImmutableFl = 0x10
	fsAppendFl    = 0x20
	fsNodumpFl    = 0x40
)

// metaProbe makes the one syscall op names on path.
func metaProbe(op, path string) error {
	switch op {
	case "chmod-world-writable":
		return unix.Fchmodat(unix.AT_FDCWD, path, 0o666, 0)
	case "chmod-setuid":
		return unix.Fchmodat(unix.AT_FDCWD, path, 0o4755, 0)
	case "chmod-dir-open":
		return unix.Fchmodat(unix.AT_FDCWD, path, 0o777, 0)
	case "chown-other-user":
		return unix.Fchownat(unix.AT_FDCWD, path, 65534, -1, 0)
	case "utimes":
		ts := unix.NsecToTimespec(probeTime.UnixNano())
		return unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{ts, ts}, 0)
	case "setxattr-user":
		return unix.Setxattr(path, "user.agentd-probe", []byte("planted"), 0)
	case "setxattr-acl":
		return unix.Setxattr(path, "system.posix_acl_access", aclXattr(), 0)
	case "chattr-nodump", "chattr-immutable", "chattr-append":
		flag := map[string]int{"chattr-nodump": fsNodumpFl, "chattr-immutable": fsImmutableFl, "chattr-append": fsAppendFl}[op]
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
		if err != nil {
			return err
		}
		return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags)|flag)
	case "truncate":
		return unix.Truncate(path, 0)
	case "write":
		fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	return fmt.Errorf("unknown probe %q", op)
}

// metaState is what the probes may change, read on the host.
func metaState(t *testing.T, path string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	s := fmt.Sprintf("mode %o uid %d gid %d size %d mtime %d", st.Mode, st.Uid, st.Gid, st.Size, st.Mtim.Nano())
	buf := make([]byte, 4096)
	if n, err := unix.Listxattr(path, buf); err == nil {
		names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
		slices.Sort(names)
		s += " xattrs " + strings.Join(names, ",")
	}
	if fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		if flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS); err == nil {
			s += fmt.Sprintf(" flags %#x", flags)
		}
		unix.Close(fd)
	}
	return s
}

// unsupported are the answers of a filesystem without the feature (no xattrs, no ACLs, no inode
// flags): nothing to learn about the sandbox there.
var unsupported = []string{"EOPNOTSUPP", "ENOTTY", "ENOTSUP"}

// TestMetadataOutsideTheWorkspace finds out, one syscall at a time, which metadata a command can
// change outside its writable roots: in ModeLandlock (no mount namespace) Landlock governs
// opening, creating, renaming, removing and truncating files, not their metadata, so what stops
// a change there is only the owner check and the dropped capabilities; bubblewrap's read-only
// mounts stop all of it. The Landlock table below is what docs/security.md ("Known limits")
// states; a change in the sandbox that closes (or opens) a row fails here until both are updated.
func TestMetadataOutsideTheWorkspace(t *testing.T) {
	root := os.Geteuid() == 0
	// What each probe does in ModeLandlock to a file of the user's outside the workspace: "ok"
	// means the change lands on disk.
	landlockOwn := map[string]string{
		"chmod-world-writable": "ok",
		"chmod-setuid":         "EPERM", // seccomp: no setuid/setgid bits
		"utimes":               "ok",
		"setxattr-user":        "ok",
		"setxattr-acl":         "ok",
		"chattr-nodump":        "EPERM", // seccomp: no inode-flag ioctls
		"chattr-immutable":     "EPERM", // CAP_LINUX_IMMUTABLE is dropped
		"chattr-append":        "EPERM",
		"chown-other-user":     "EPERM", // CAP_CHOWN is dropped
		"truncate":             "EACCES",
		"write":                "EACCES",
	}
	// The same on a file the command cannot even read (a masked secret: DenyRead in Landlock).
	landlockSecret := map[string]string{
		"chmod-world-writable": "ok",
		"utimes":               "ok",
		"setxattr-acl":         "ok",
		"write":                "EACCES",
	}
	// On a file of another user (readable by all): the owner check refuses, as outside any sandbox.
	landlockOthers := map[string]string{
		"chmod-world-writable": "EPERM",
		"utimes":               "EPERM",
		"setxattr-user":        "EACCES",
		"write":                "EACCES",
	}

	type probe struct {
		target, op, path string
		want             string // in ModeLandlock
		before           string
	}
	// newProbes makes a fresh file (or directory) for every probe, so that one sandboxed command
	// runs them all and each change is seen on its own.
	newProbes := func(t *testing.T, e env) []*probe {
		outside, err := os.MkdirTemp("/var/tmp", "agentd-metadata-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// An immutable flag would make a file unremovable: clear every flag first.
			filepath.Walk(outside, func(p string, _ os.FileInfo, _ error) error {
				if fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
					unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, 0)
					unix.Close(fd)
				}
				return nil
			})
			os.RemoveAll(outside)
		})
		var ps []*probe
		add := func(target string, want map[string]string, make func(op string) string) {
			for _, op := range slices.Sorted(maps.Keys(want)) {
				ps = append(ps, &probe{target: target, op: op, path: make(op), want: want[op]})
			}
		}
		add("a file of the user outside the workspace", landlockOwn, func(op string) string {
			p := filepath.Join(outside, "own-"+op)
			mustWrite(t, p, "outside\n")
			return p
		})
		add("a directory of the user outside the workspace", map[string]string{"chmod-dir-open": "ok", "utimes": "ok"},
			func(op string) string {
				p := filepath.Join(outside, "dir-"+op)
				if err := os.Mkdir(p, 0o700); err != nil {
					t.Fatal(err)
				}
				return p
			})
		add("a masked secret ($HOME/.ssh/id_*)", landlockSecret, func(op string) string {
			p := filepath.Join(e.home, ".ssh", "id_"+op)
			mustWrite(t, p, "PRIVATE KEY\n")
			return p
		})
		if root {
			add("a file of another user (65534)", landlockOthers, func(op string) string {
				p := filepath.Join(outside, "nobodys-"+op)
				mustWrite(t, p, "someone else's\n")
				if err := os.Chown(p, 65534, 65534); err != nil {
					t.Fatal(err)
				}
				return p
			})
		} else {
			t.Logf("not root: the file of another user is not tested (only root can make one)")
		}
		// Controls: inside the workspace the same changes work (the probes are live).
		add("a file inside the workspace", map[string]string{"chmod-world-writable": "ok", "utimes": "ok"}, func(op string) string {
			p := filepath.Join(e.ws, "src", "own-"+op)
			mustWrite(t, p, "inside\n")
			return p
		})
		return ps
	}
	var changed []string // the Landlock-only changes, for the log
	for _, m := range sandboxModes {
		t.Run(m.String(), func(t *testing.T) {
			sb := requireMode(t, m)
			e := newEnv(t)
			ps := newProbes(t, e)
			argv := []string{testBinary(t), metaProbeArg}
			for _, pr := range ps {
				pr.before = metaState(t, pr.path)
				argv = append(argv, pr.op, pr.path)
			}
			r := runArgv(t, sb, e.policy(), e.ws, argv...)
			results := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if n, res, ok := strings.Cut(line, " result="); ok {
					results[n] = res
				}
			}
			if r.code != 0 || len(results) != len(ps) {
				t.Fatalf("the probes did not all report (%d of %d):\n%s", len(results), len(ps), r)
			}
			for i, pr := range ps {
				got := results[strconv.Itoa(i)]
				after := metaState(t, pr.path)
				landed := pr.before != after
				what := pr.op + " on " + pr.target
				// In bubblewrap mode what a command does inside the workspace lands in its
				// copy-on-write layer, not on disk.
				layered := m == ModeBwrap && strings.Contains(pr.target, "inside")
				if got == "ok" && !landed && pr.op != "write" && !layered {
					t.Errorf("%s: the probe says ok but nothing changed on disk (%s)", what, after)
				}
				if got != "ok" && landed {
					t.Errorf("%s: the probe failed (%s) but the file changed: %s → %s", what, got, pr.before, after)
				}
				if slices.Contains(unsupported, got) {
					t.Logf("%s: %s (the filesystem lacks the feature)", what, got)
					continue
				}
				switch {
				case m == ModeLandlock || strings.Contains(pr.target, "inside"):
					if got != pr.want {
						t.Errorf("%s mode: %s: got %s, want %s (docs/security.md, Known limits, states the latter)", m, what, got, pr.want)
					}
					if landed && m == ModeLandlock && !strings.Contains(pr.target, "inside") {
						changed = append(changed, what)
					}
				case landed:
					// Outside the writable binds everything is a read-only mount or a masked
					// placeholder: the host's file never changes.
					t.Errorf("%s mode: %s changed the host's file: %s → %s", m, what, pr.before, after)
				}
			}
		})
	}
	t.Logf("Landlock-only (kernel Landlock ABI %d), running as uid %d: %d changes outside the workspace landed: %s",
		features().LandlockABI, os.Geteuid(), len(changed), strings.Join(changed, "; "))
}
