//go:build linux

package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Per-command cgroups.
//
// Every sandboxed command gets a cgroup of its own, created under this
// process's cgroup, so that (1) killing the command kills every process it
// started, whatever it did to its process group or session (cgroup.kill), and
// (2) memory and process limits hold for the command as a whole.
//
// Where the cgroup lives depends on the machine:
//
//   - cgroup v2 (the unified hierarchy, /sys/fs/cgroup or, on hybrid
//     machines, /sys/fs/cgroup/unified): the command's cgroup is
//     <own cgroup>/agentd-<pid>-<n>; the first process is cloned straight
//     into it (CLONE_INTO_CGROUP). Killing is cgroup.kill, then waiting until
//     cgroup.events says "populated 0". The memory and pids controllers are
//     used when they are enabled for the children of this process's cgroup
//     (cgroup.subtree_control), or can be: Detect enables them, and when
//     this process is alone in a cgroup with other (domain) controllers
//     pending, moves itself into a leaf <own cgroup>/agentd-<pid>-daemon
//     first (the "no internal processes" rule).
//   - Hybrid machines whose memory and pids controllers are mounted as cgroup
//     v1 hierarchies: the limits are set in a cgroup of the same name under
//     this process's cgroup in each v1 hierarchy. In bubblewrap mode the
//     daemon moves bubblewrap's child into them while the child waits on
//     --block-fd, before it forks anything (Cmd.Start, placeInCgroups); in
//     ModeLandlock the helper joins them first thing (helperConfig.Join).
//
// None of this needs root: it needs write access to this process's own
// cgroup (root, or a delegated subtree, e.g. a systemd user service with
// Delegate=yes). Where it is not available the subreaper in the helper is
// what kills leftovers, and the missing limits are reported in Cmd.Gaps.

var (
	cgroupOnce    sync.Once
	cgroupSupport CgroupSupport
	cgroupSeq     atomic.Uint64
)

// detectCgroups finds (once per process: it may move this process into a
// leaf cgroup) where per-command cgroups can be created.
func detectCgroups() CgroupSupport {
	cgroupOnce.Do(func() { cgroupSupport = setupCgroups() })
	return cgroupSupport
}

// cgroupMounts maps "unified" and each v1 controller name to its mount point.
func cgroupMounts() map[string]string {
	out := map[string]string{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fp, fs := strings.Fields(pre), strings.Fields(post)
		if len(fp) < 5 || len(fs) < 3 {
			continue
		}
		switch fs[0] {
		case "cgroup2":
			if _, ok := out["unified"]; !ok {
				out["unified"] = fp[4]
			}
		case "cgroup":
			for _, o := range strings.Split(fs[2], ",") {
				if o == "memory" || o == "pids" {
					if _, ok := out[o]; !ok {
						out[o] = fp[4]
					}
				}
			}
		}
	}
	return out
}

// ownCgroups maps "unified" and each v1 controller name to this process's
// cgroup path in that hierarchy (from /proc/self/cgroup).
func ownCgroups() map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			out["unified"] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			out[c] = f[2]
		}
	}
	return out
}

func setupCgroups() CgroupSupport {
	var cs CgroupSupport
	var why []string
	mounts, own := cgroupMounts(), ownCgroups()
	if mnt, ok := mounts["unified"]; ok {
		if rel, ok := own["unified"]; ok && !strings.Contains(rel, "..") {
			parent := filepath.Join(mnt, rel)
			if err := probeMkdir(parent); err != nil {
				why = append(why, fmt.Sprintf("cannot create cgroups in %s: %v", parent, err))
			} else {
				cs.V2Parent = parent
				cs.V2Memory, cs.V2Pids = enableControllers(parent)
			}
		}
	}
	for _, ctl := range []string{"memory", "pids"} {
		if (ctl == "memory" && cs.V2Memory) || (ctl == "pids" && cs.V2Pids) {
			continue
		}
		mnt, ok := mounts[ctl]
		rel, ok2 := own[ctl]
		if !ok || !ok2 || strings.Contains(rel, "..") {
			why = append(why, ctl+" controller unavailable in this process's cgroup")
			continue
		}
		dir := filepath.Join(mnt, rel)
		if err := probeMkdir(dir); err != nil {
			why = append(why, fmt.Sprintf("cannot create %s cgroups in %s: %v", ctl, dir, err))
			continue
		}
		if ctl == "memory" {
			cs.V1Memory = dir
		} else {
			cs.V1Pids = dir
		}
	}
	if !cs.Kill() || !cs.Memory() || !cs.Pids() {
		cs.Err = strings.Join(why, "; ")
	}
	for _, d := range []string{cs.V2Parent, cs.V1Memory, cs.V1Pids} {
		if d != "" {
			sweepStale(d)
		}
	}
	return cs
}

// probeMkdir checks that a child cgroup can be created in dir.
func probeMkdir(dir string) error {
	p := filepath.Join(dir, fmt.Sprintf("agentd-%d-probe", os.Getpid()))
	if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Remove(p)
}

// enableControllers makes memory and pids available to the children of
// parent (cgroup v2). When parent holds processes (the "no internal
// processes" rule forbids enabling domain controllers then) and they are all
// this process's, it moves this process into the leaf
// parent/agentd-<pid>-daemon first.
func enableControllers(parent string) (memory, pids bool) {
	has := func(file, c string) bool {
		b, err := os.ReadFile(filepath.Join(parent, file))
		return err == nil && slicesContains(strings.Fields(string(b)), c)
	}
	memory, pids = has("cgroup.subtree_control", "memory"), has("cgroup.subtree_control", "pids")
	var want []string
	for _, c := range []string{"memory", "pids"} {
		if !has("cgroup.subtree_control", c) && has("cgroup.controllers", c) {
			want = append(want, "+"+c)
		}
	}
	if len(want) == 0 {
		return memory, pids
	}
	ctl := filepath.Join(parent, "cgroup.subtree_control")
	err := os.WriteFile(ctl, []byte(strings.Join(want, " ")), 0)
	if errors.Is(err, unix.EBUSY) && onlyUs(parent) {
		leaf := filepath.Join(parent, fmt.Sprintf("agentd-%d-daemon", os.Getpid()))
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			slog.Debug("sandbox: cannot create a leaf cgroup for the daemon", "dir", leaf, "err", err)
			return memory, pids
		}
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte("0"), 0); err != nil {
			slog.Debug("sandbox: cannot move the daemon into a leaf cgroup", "dir", leaf, "err", err)
			os.Remove(leaf)
			return memory, pids
		}
		slog.Debug("sandbox: moved the daemon into a leaf cgroup", "dir", leaf)
		err = os.WriteFile(ctl, []byte(strings.Join(want, " ")), 0)
	}
	if err != nil {
		slog.Debug("sandbox: cannot enable cgroup controllers", "dir", parent, "want", want, "err", err)
	}
	return has("cgroup.subtree_control", "memory"), has("cgroup.subtree_control", "pids")
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// onlyUs reports whether every process in the v2 cgroup dir is this one.
func onlyUs(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	self := strconv.Itoa(os.Getpid())
	for _, f := range strings.Fields(string(b)) {
		if f != self {
			return false
		}
	}
	return true
}

// sweepStale removes the empty per-command cgroups that a dead agentd left
// behind in dir (agentd-<pid>-<n> whose pid is gone). It kills nothing: a pid
// that looks dead may belong to another PID namespace.
func sweepStale(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "agentd-")
		if !e.IsDir() || !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || unix.Kill(pid, 0) == nil || errors.Is(unix.Kill(pid, 0), unix.EPERM) {
			continue
		}
		d := filepath.Join(dir, e.Name())
		if err := syscall.Rmdir(d); err != nil {
			slog.Debug("sandbox: stale cgroup not removed", "dir", d, "err", err)
		}
	}
}

// commandCgroup is the cgroup of one command: one directory in cgroup v2
// (kill, and the limits when the controllers are there) and one per v1
// hierarchy that holds a limit.
type commandCgroup struct {
	v2 string   // "" when cgroup v2 is not used
	v1 []string // v1 directories the command must join
	fd *os.File // v2 directory, for CLONE_INTO_CGROUP

	mu       sync.Mutex
	events   ResourceEvents
	released bool
}

// newCommandCgroup creates the command's cgroup with limits l (a zero field:
// no limit) on the machine's support cs. It returns nil, nil when cs offers
// nothing.
func newCommandCgroup(cs CgroupSupport, l Limits) (cg *commandCgroup, err error) {
	if !cs.Kill() {
		return nil, nil
	}
	name := fmt.Sprintf("agentd-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	cg = &commandCgroup{}
	defer func() {
		if err != nil {
			cg.remove()
			cg = nil
		}
	}()
	mk := func(parent string) (string, error) {
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", fmt.Errorf("sandbox: creating the command's cgroup: %w", err)
		}
		return d, nil
	}
	set := func(dir, file, val string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0); err != nil {
			return fmt.Errorf("sandbox: setting %s of the command's cgroup: %w", file, err)
		}
		return nil
	}
	if cs.V2Parent != "" {
		if cg.v2, err = mk(cs.V2Parent); err != nil {
			return cg, err
		}
		if cs.V2Memory && l.MemoryBytes > 0 {
			if err := set(cg.v2, "memory.max", strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
				return cg, err
			}
			// The limit is on memory, not memory that may then be
			// swapped out.
			if _, err := os.Stat(filepath.Join(cg.v2, "memory.swap.max")); err == nil {
				if err := set(cg.v2, "memory.swap.max", "0"); err != nil {
					return cg, err
				}
			}
		}
		if cs.V2Pids && l.Pids > 0 {
			if err := set(cg.v2, "pids.max", strconv.Itoa(l.Pids)); err != nil {
				return cg, err
			}
		}
		if cg.fd, err = os.Open(cg.v2); err != nil {
			return cg, err
		}
	}
	// A v1 pids cgroup also serves to kill when there is no cgroup v2.
	if cs.V1Pids != "" && ((!cs.V2Pids && l.Pids > 0) || cs.V2Parent == "") {
		d, err := mk(cs.V1Pids)
		if err != nil {
			return cg, err
		}
		cg.v1 = append(cg.v1, d)
		if !cs.V2Pids && l.Pids > 0 {
			if err := set(d, "pids.max", strconv.Itoa(l.Pids)); err != nil {
				return cg, err
			}
		}
	}
	if cs.V1Memory != "" && !cs.V2Memory && l.MemoryBytes > 0 {
		d, err := mk(cs.V1Memory)
		if err != nil {
			return cg, err
		}
		cg.v1 = append(cg.v1, d)
		if err := set(d, "memory.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return cg, err
		}
		if _, err := os.Stat(filepath.Join(d, "memory.memsw.limit_in_bytes")); err == nil {
			if err := set(d, "memory.memsw.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
				return cg, err
			}
		}
	}
	return cg, nil
}

// joinFiles are the cgroup.procs files the command's first process must join
// itself (the v1 cgroups; the v2 one is joined by CLONE_INTO_CGROUP).
func (cg *commandCgroup) joinFiles() []string {
	var out []string
	for _, d := range cg.v1 {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// kill SIGKILLs every process in the command's cgroup. It does not wait.
func (cg *commandCgroup) kill() {
	if cg.v2 != "" {
		killCgroupDir(cg.v2)
		return
	}
	for _, d := range cg.v1 {
		killCgroupDir(d)
	}
}

// killCgroupDir kills every process in dir: cgroup.kill where the kernel has
// it (v2, Linux 5.14), else SIGKILL to each listed process.
func killCgroupDir(dir string) {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err == nil {
		return
	}
	for _, pid := range cgroupProcs(dir) {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

func cgroupProcs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// populated reports whether the cgroup still has a process (a live one; v1:
// listed in cgroup.procs).
func populated(dir string) bool {
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup.events")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "populated "); ok {
				return v != "0"
			}
		}
	}
	return len(cgroupProcs(dir)) > 0
}

// cgroupKillTimeout bounds how long Release waits for a killed cgroup to
// empty (SIGKILLed processes in uninterruptible sleep, e.g. on a hung NFS
// mount, can take a while).
const cgroupKillTimeout = 10 * time.Second

// release kills everything left in the command's cgroup, waits until it is
// empty, records what the limits did, and removes the cgroup. Idempotent.
func (cg *commandCgroup) release() {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if cg.released {
		return
	}
	cg.released = true
	deadline := time.Now().Add(cgroupKillTimeout)
	if cg.v2 != "" {
		// Every process of the command is in the v2 cgroup (cloned into
		// it): once it is empty, so are the v1 ones.
		killCgroupDir(cg.v2)
		if !waitEmpty(cg.v2, deadline) {
			slog.Warn("sandbox: processes of a finished command could not be killed", "cgroup", cg.v2, "pids", cgroupProcs(cg.v2))
		}
	}
	pause := time.Millisecond
	for _, d := range cg.v1 {
		for populated(d) && time.Now().Before(deadline) {
			killCgroupDir(d)
			time.Sleep(pause)
			pause = min(2*pause, 50*time.Millisecond)
		}
		if populated(d) {
			slog.Warn("sandbox: processes of a finished command could not be killed", "cgroup", d, "pids", cgroupProcs(d))
		}
	}
	cg.events = cg.readEvents()
	cg.remove()
}

// waitEmpty waits until the cgroup v2 dir is not populated (or the
// deadline), killing what is in it again whenever cgroup.events changes. It
// waits on cgroup.events itself (the kernel wakes poll(2) with POLLPRI when
// the file changes), so it returns as soon as the last process is gone.
func waitEmpty(dir string, deadline time.Time) bool {
	f, err := os.Open(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return !populated(dir)
	}
	defer f.Close()
	buf := make([]byte, 512)
	for {
		// Reading the file arms the next notification.
		n, err := f.ReadAt(buf, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return !populated(dir)
		}
		busy := true
		for _, line := range strings.Split(string(buf[:n]), "\n") {
			if v, ok := strings.CutPrefix(line, "populated "); ok {
				busy = v != "0"
			}
		}
		left := time.Until(deadline)
		if !busy || left <= 0 {
			return !busy
		}
		pfd := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLPRI}}
		if _, err := unix.Poll(pfd, int(min(left, 100*time.Millisecond)/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
			return !populated(dir)
		}
		killCgroupDir(dir)
	}
}

// readEvents reads the limit counters of the command's cgroups.
func (cg *commandCgroup) readEvents() ResourceEvents {
	var e ResourceEvents
	for _, d := range append([]string{cg.v2}, cg.v1...) {
		if d == "" {
			continue
		}
		e.OOMKills += counter(filepath.Join(d, "memory.events"), "oom_kill")
		e.OOMKills += counter(filepath.Join(d, "memory.oom_control"), "oom_kill")
		e.PidsLimited += counter(filepath.Join(d, "pids.events"), "max")
	}
	return e
}

// Events returns what the limits did (read live until release, then the
// values read at release).
func (cg *commandCgroup) Events() ResourceEvents {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if cg.released {
		return cg.events
	}
	return cg.readEvents()
}

// counter reads "key N" from a flat-keyed cgroup file (0 when absent).
func counter(file, key string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// remove deletes the command's (empty) cgroup directories, in parallel.
func (cg *commandCgroup) remove() {
	if cg.fd != nil {
		cg.fd.Close()
		cg.fd = nil
	}
	var wg sync.WaitGroup
	for _, d := range append(slices.Clone(cg.v1), cg.v2) {
		if d == "" {
			continue
		}
		wg.Go(func() {
			if err := removeCgroupDir(d); err != nil {
				slog.Warn("sandbox: cannot remove the command's cgroup", "dir", d, "err", err)
			}
		})
	}
	wg.Wait()
}

// removeCgroupDir removes a cgroup directory, retrying briefly on EBUSY (a
// v1 cgroup stays busy for a moment after its last process was reaped).
func removeCgroupDir(d string) error {
	var err error
	for i := 0; i < 50; i++ {
		err = syscall.Rmdir(d)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
		time.Sleep(time.Duration(i+1) * time.Millisecond)
	}
	return err
}

// limitsFor are the limits of a command under p.
func (s *Sandbox) limitsFor(p Policy) Limits { return p.Limits.or(s.limits) }

// Limits are the limits commands get by default (Options.Limits completed
// by DefaultLimits; a negative field: none).
func (s *Sandbox) Limits() Limits { return s.limits }

// attachCgroup gives c (not started) its cgroup: the first process is cloned
// into the v2 cgroup, is placed in the v1 ones (Cmd.Start or the helper),
// Cancel also kills the cgroup, and Release empties and removes it. It adds
// to c.Gaps the limits that cannot be enforced.
func (s *Sandbox) attachCgroup(c *Cmd, p Policy) error {
	cs, l := s.feat.Cgroup, s.limitsFor(p)
	if l.MemoryBytes > 0 && !cs.Memory() {
		c.Gaps = append(c.Gaps, "no memory limit: no per-command cgroup with the memory controller ("+orUnknown(cs.Err)+")")
	}
	if l.Pids > 0 && !cs.Pids() {
		c.Gaps = append(c.Gaps, "no process limit: no per-command cgroup with the pids controller ("+orUnknown(cs.Err)+")")
	}
	cg, err := newCommandCgroup(cs, l)
	if err != nil || cg == nil {
		return err
	}
	c.cg = cg
	if c.Mode == ModeLandlock {
		// The gap the mode lists does not apply: the cgroup catches
		// processes that called setsid.
		for i, g := range c.Gaps {
			if strings.HasPrefix(g, "no PID namespace:") {
				c.Gaps[i] = "no PID namespace: the command sees the host's processes; leftovers are killed through the command's cgroup"
			}
		}
	}
	if cg.fd != nil {
		c.SysProcAttr.UseCgroupFD = true
		c.SysProcAttr.CgroupFD = int(cg.fd.Fd())
	}
	if join := cg.joinFiles(); len(join) > 0 {
		switch c.Mode {
		case ModeBwrap:
			// bubblewrap writes its child's pid to --info-fd right after
			// cloning it, and the child waits on --block-fd before it forks
			// the command (and after its own setup): Cmd.Start places the
			// child in the v1 cgroups in between, so nothing of the command
			// runs outside them.
			if err := c.blockForCgroups(join); err != nil {
				return err
			}
		default:
			// The helper joins them first thing, before it starts the
			// command.
			if err := c.helperJoins(join); err != nil {
				return err
			}
		}
	}
	cancel := c.Cancel
	c.Cancel = func() error {
		err := cancel()
		cg.kill()
		return err
	}
	return nil
}

// Events reports what the command's limits did (out-of-memory kills, refused
// forks). Call it after Wait; after Release it returns what Release read.
func (c *Cmd) Events() ResourceEvents {
	if c.cg == nil {
		return ResourceEvents{}
	}
	return c.cg.Events()
}

// Kill SIGKILLs every process of the command now, through its cgroup (those
// that left its process group or session included), or its process group
// when it has no cgroup. It does not wait; Release waits.
func (c *Cmd) Kill() {
	if c.Process != nil {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	if c.cg != nil {
		c.cg.kill()
	}
}

// placement is the daemon's side of bubblewrap's --info-fd and --block-fd for
// a command whose cgroups include v1 hierarchies.
type placement struct {
	join   []string
	info   *os.File // read end: bubblewrap's JSON with the child's pid
	infoW  *os.File // write end, bubblewrap's copy (closed after Start)
	blockR *os.File // read end, bubblewrap's copy (closed after Start)
	block  *os.File // write end: one byte lets the child go on
}

// blockForCgroups adds --info-fd and --block-fd to c's bubblewrap arguments.
func (c *Cmd) blockForCgroups(join []string) error {
	ir, iw, err := os.Pipe()
	if err != nil {
		return err
	}
	br, bw, err := os.Pipe()
	if err != nil {
		ir.Close()
		iw.Close()
		return err
	}
	n := 3 + len(c.ExtraFiles)
	c.ExtraFiles = append(slices.Clone(c.ExtraFiles), iw, br)
	at := 1 // after bubblewrap's path: Args[0], or after the layer stage's "--"
	if len(c.Args) > 4 && c.Args[1] == LayerArg {
		at = 5
	}
	c.Args = slices.Insert(c.Args, at, "--info-fd", strconv.Itoa(n), "--block-fd", strconv.Itoa(n+1))
	c.place = &placement{join: join, info: ir, infoW: iw, blockR: br, block: bw}
	return nil
}

// helperJoins adds the v1 cgroups to the helper's configuration (ModeLandlock).
func (c *Cmd) helperJoins(join []string) error {
	// Args: helper, HelperArg, CONFIG, "--", argv...
	if len(c.Args) < 4 || c.Args[1] != HelperArg || c.Args[3] != "--" {
		return fmt.Errorf("sandbox: unexpected helper command line %q", c.Args)
	}
	var cfg helperConfig
	if err := json.Unmarshal([]byte(c.Args[2]), &cfg); err != nil {
		return err
	}
	cfg.Join = join
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	c.Args[2] = string(b)
	return nil
}

// closeAll closes the daemon's ends of the placement pipes.
func (pl *placement) closeAll() {
	for _, f := range []*os.File{pl.info, pl.infoW, pl.blockR, pl.block} {
		f.Close()
	}
}

// placeInCgroups runs right after bubblewrap started: it moves the outer
// bwrap into the v1 cgroups at once (while it starts up; a child it clones
// after that is born in them), reads the child's pid from --info-fd, moves the
// child too, and only then lets the child go on (--block-fd). On any failure
// it kills the command (the child is still blocked: it has run nothing of the
// command) before the block pipe is closed, and reaps it.
//
// The first move into a cgroup waits for an RCU grace period in the kernel
// (milliseconds); moving the outer bwrap first hides most of that wait behind
// bubblewrap's own start, and the child's move right after it is quick.
func (c *Cmd) placeInCgroups() error {
	pl := c.place
	c.place = nil
	pl.infoW.Close()
	pl.blockR.Close()
	defer pl.closeAll()
	join := func(pid int) error {
		errs := make([]error, len(pl.join))
		var wg sync.WaitGroup
		for i, f := range pl.join {
			wg.Go(func() { errs[i] = os.WriteFile(f, []byte(strconv.Itoa(pid)), 0) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	outer := make(chan error, 1)
	go func() { outer <- join(c.Process.Pid) }()
	err := func() error {
		b, err := io.ReadAll(io.LimitReader(pl.info, 64<<10))
		if err != nil {
			return err
		}
		var info struct {
			ChildPid int `json:"child-pid"`
		}
		if err := json.Unmarshal(b, &info); err != nil || info.ChildPid <= 0 {
			return fmt.Errorf("bubblewrap reported no child (%q)", b)
		}
		oerr := <-outer
		outer = nil
		if oerr != nil {
			return oerr
		}
		if err := join(info.ChildPid); err != nil {
			return err
		}
		_, err = pl.block.Write([]byte{1})
		return err
	}()
	if outer != nil {
		<-outer
	}
	if err != nil {
		c.Kill()
		_ = c.Cmd.Wait()
		return fmt.Errorf("sandbox: placing the command in its cgroups: %w", err)
	}
	return nil
}
