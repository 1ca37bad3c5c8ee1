//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// detectTimeout bounds each probe process Detect starts.
const detectTimeout = 10 * time.Second

// Detect measures what this machine offers. It starts two short processes (a
// user-namespace probe and bubblewrap with the flags Command uses), so call it
// once and keep the result (New does). The first call in a process also
// prepares per-command cgroups (see CgroupSupport): it may enable the memory
// and pids controllers for the children of this process's cgroup, moving
// this process into a leaf cgroup of its own when the kernel requires it,
// and removes empty per-command cgroups left by agentd processes that died.
func Detect() Features {
	f := Features{Arch: archName}
	f.UserNamespaces, f.UserNamespacesErr = probeUserNS()
	f.BwrapPath, f.BwrapVersion, f.Bwrap, f.BwrapErr = probeBwrap()

	if abi, err := llsys.LandlockGetABIVersion(); err != nil {
		f.LandlockErr = "landlock_create_ruleset: " + err.Error()
	} else if abi < 1 {
		f.LandlockErr = fmt.Sprintf("ABI %d", abi)
	} else {
		f.LandlockABI = abi
	}

	f.Seccomp, f.SeccompErr = probeSeccomp()
	f.CgroupV2, f.CgroupKill = probeCgroup()
	f.Cgroup = detectCgroups()
	return f
}

// trueBinary finds a harmless program to start in probes.
func trueBinary() (string, error) {
	for _, p := range []string{"/usr/bin/true", "/bin/true"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return exec.LookPath("true")
}

// probeUserNS tries to start a process in a new user namespace (sysctls and
// AppArmor policies make reading configuration unreliable).
func probeUserNS() (bool, string) {
	t, err := trueBinary()
	if err != nil {
		return false, "no `true` binary to probe with"
	}
	ctx, cancel := context.WithTimeout(context.Background(), detectTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, t)
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
	if err := cmd.Run(); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// probeBwrap runs bubblewrap with the namespace and mount flags Command uses.
func probeBwrap() (path, version string, ok bool, errStr string) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return "", "", false, "bwrap not installed (apt-get install bubblewrap)"
	}
	ctx, cancel := context.WithTimeout(context.Background(), detectTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, path, "--version").Output(); err == nil {
		version = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "bubblewrap"))
	}
	t, err := trueBinary()
	if err != nil {
		return path, version, false, "no `true` binary to probe with"
	}
	args := append(bwrapBaseArgs(false), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--tmpfs", "/tmp", "--", t)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return path, version, false, "bwrap does not work here: " + msg
	}
	return path, version, true, ""
}

// bwrapBaseArgs are the process and namespace flags of every bwrap run.
func bwrapBaseArgs(network bool) []string {
	args := []string{"--die-with-parent", "--new-session", "--unshare-all"}
	if network {
		args = append(args, "--share-net")
	}
	if os.Geteuid() == 0 {
		// As real root bubblewrap keeps every capability unless told
		// otherwise (and creates no user namespace).
		args = append(args, "--cap-drop", "ALL")
	}
	return args
}

// probeSeccomp checks that filters with the actions we use can be installed,
// without installing one in this process.
func probeSeccomp() (bool, string) {
	if !seccompArchSupported {
		return false, "no filter for architecture " + archName
	}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return false, "prctl(PR_GET_SECCOMP): " + err.Error()
	}
	b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	if err != nil {
		return false, "reading seccomp actions: " + err.Error()
	}
	acts := strings.Fields(string(b))
	for _, need := range []string{"kill_process", "errno", "allow"} {
		found := false
		for _, a := range acts {
			found = found || a == need
		}
		if !found {
			return false, "seccomp action " + need + " unavailable"
		}
	}
	return true, ""
}

// probeCgroup reports a cgroup2 mount and whether this process's cgroup has
// cgroup.kill.
func probeCgroup() (v2, kill bool) {
	mounts, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, false
	}
	defer mounts.Close()
	var mnt string
	sc := bufio.NewScanner(mounts)
	for sc.Scan() {
		// ... mountpoint ... - fstype source opts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) > 0 && fs[0] == "cgroup2" {
			if f := strings.Fields(pre); len(f) >= 5 {
				mnt = f[4]
				break
			}
		}
	}
	if mnt == "" {
		return false, false
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return true, false
	}
	for _, line := range strings.Split(string(cg), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			_, err := os.Stat(filepath.Join(mnt, rest, "cgroup.kill"))
			return true, err == nil
		}
	}
	return true, false
}
