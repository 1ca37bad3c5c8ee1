//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Options configure New.
type Options struct {
	// Mode forces a mode (ModeBwrap or ModeLandlock); ModeAuto picks the
	// strongest available. Forcing an unavailable mode is an error, never a
	// silent fallback. ModeNone cannot be forced: use Policy.Unsandboxed.
	Mode Mode
	// Features, if set, are used instead of running Detect.
	Features *Features
	// HelperPath is the binary whose main calls HelperMain; default
	// os.Executable().
	HelperPath string
	// Limits are every command's resource limits (Policy.Limits overrides
	// them per command); zero fields take DefaultLimits.
	Limits Limits
}

// Sandbox wraps commands for one daemon. It is safe for concurrent use.
type Sandbox struct {
	mode   Mode // ModeNone: nothing available (Command fails unless Unsandboxed)
	feat   Features
	helper string
	limits Limits
}

// New detects (or takes) the machine's features and chooses the mode.
func New(opts Options) (*Sandbox, error) {
	var f Features
	if opts.Features != nil {
		f = *opts.Features
	} else {
		f = Detect()
	}
	helper := opts.HelperPath
	if helper == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: locating the helper binary: %w", err)
		}
		helper = exe
	}
	if r, err := filepath.EvalSymlinks(helper); err == nil {
		helper = r
	}
	if !filepath.IsAbs(helper) {
		return nil, fmt.Errorf("sandbox: helper path %q is not absolute", helper)
	}
	s := &Sandbox{feat: f, helper: helper, limits: opts.Limits.or(DefaultLimits())}
	switch opts.Mode {
	case ModeAuto:
		s.mode = f.BestMode()
	case ModeBwrap, ModeLandlock:
		if !f.Usable(opts.Mode) {
			return nil, fmt.Errorf("%w: mode %s forced but not available: %s", ErrUnavailable, opts.Mode, strings.Join(f.Missing(), "; "))
		}
		s.mode = opts.Mode
	default:
		return nil, fmt.Errorf("sandbox: mode %s cannot be forced (use Policy.Unsandboxed per command)", opts.Mode)
	}
	return s, nil
}

// Mode is the mode commands run in (ModeNone: no sandbox is available).
func (s *Sandbox) Mode() Mode { return s.mode }

// HelperPath is the helper binary (absolute, symlinks resolved). Every sandbox makes it visible
// and read-only, so it also serves as the go command's cache program (tools/gocache).
func (s *Sandbox) HelperPath() string { return s.helper }

// Features are the measured features this Sandbox decided on.
func (s *Sandbox) Features() Features { return s.feat }

// Describe is the approval-prompt line for a command under p. It names the
// unix sockets the command opted in to and, in ModeLandlock, the sensitive
// workspace files the command can read because that mode cannot mask single
// files (after SensitiveUnmasked): the approval binds to that list.
func (s *Sandbox) Describe(p Policy) string {
	if p.Unsandboxed {
		return s.feat.Summary(ModeNone, p.Network)
	}
	sum := s.feat.Summary(s.mode, p.Network)
	if len(p.UnixSockets) > 0 {
		sum += "; unix sockets ON (" + strings.Join(p.UnixSockets, ", ") + ")"
	}
	sum += "; " + s.feat.LimitsSummary(s.limitsFor(p))
	if s.mode == ModeLandlock {
		sum += "; " + NoLayer + " (no bubblewrap): the command writes your files directly, unreviewed"
		if w, err := resolveWritable(p); err == nil {
			found, err := findSensitive(w.roots, p.ReadableSensitive, p.secretPaths())
			if err != nil {
				return sum + "; " + SensitiveUnmasked + " (no bubblewrap): " + err.Error()
			}
			if ents := slices.Concat(found, p.credentialEntries(w.roots)); len(ents) > 0 {
				sum += "; " + SensitiveUnmasked + " (no bubblewrap): " + sensitiveNames(ents, 5)
			}
		}
	}
	return sum
}

// Cmd is a wrapped command, not yet started.
type Cmd struct {
	*exec.Cmd
	// Mode the command runs in.
	Mode Mode
	// Summary is the approval-prompt line ("bubblewrap + Landlock ABI 7 +
	// seccomp; network off").
	Summary string
	// Gaps lists the protections NOT in force for this command, for the
	// approval policy and the UI. Empty means everything this package can
	// do is in force.
	Gaps []string

	once    sync.Once
	release func()
	// lifeline is the daemon's copies of the lifeline pipe (bwrap mode):
	// the write end is closed right after Start, the read end (which
	// absorbs bwrap's status JSON, so bwrap never hits a closed pipe) at
	// Release.
	lifeline []*os.File
	// cg is the command's cgroup (nil: none); see cgroup_linux.go.
	cg *commandCgroup
	// place (bwrap mode with v1 cgroups) is how Start places bubblewrap's
	// child in them; nil once done.
	place *placement
	// layers (bwrap mode) are the command's copy-on-write layers; see
	// layer_linux.go.
	layers *layerSet
	// argsFile holds bubblewrap's options (--args); the daemon's copy is closed once
	// bubblewrap started.
	argsFile *os.File
}

// Start starts the command and then closes the daemon's copy of the
// lifeline pipe's write end, so that only the outer bwrap holds it (see
// helperConfig.Lifeline). Use it (or Run, Output, CombinedOutput) rather than
// c.Cmd.Start: with the latter, a bwrap killed during its setup is noticed
// only at Release.
//
// Where the command's cgroups include cgroup v1 hierarchies, Start also
// moves bubblewrap's child into them before that child starts anything (see
// placeInCgroups); if that fails, the command is killed and reaped, and Start
// returns the error.
func (c *Cmd) Start() error {
	if c.layers != nil {
		if err := c.layers.markStart(); err != nil {
			return fmt.Errorf("sandbox: layer: %w", err)
		}
	}
	err := c.Cmd.Start()
	if c.argsFile != nil {
		c.argsFile.Close()
		c.argsFile = nil
	}
	if len(c.lifeline) > 0 {
		c.lifeline[0].Close() // write end
		c.lifeline = c.lifeline[1:]
	}
	if c.place != nil {
		if err != nil {
			c.place.closeAll()
			c.place = nil
		} else {
			err = c.placeInCgroups()
		}
	}
	if err != nil {
		c.closeLifeline()
	}
	return err
}

// Wait waits for the command (exec.Cmd.Wait).
func (c *Cmd) Wait() error { return c.Cmd.Wait() }

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Output runs the command and returns its standard output.
func (c *Cmd) Output() ([]byte, error) {
	if c.Stdout != nil {
		return nil, errors.New("sandbox: Stdout already set")
	}
	var b bytes.Buffer
	c.Stdout = &b
	err := c.Run()
	return b.Bytes(), err
}

// CombinedOutput runs the command and returns its standard output and error.
func (c *Cmd) CombinedOutput() ([]byte, error) {
	if c.Stdout != nil || c.Stderr != nil {
		return nil, errors.New("sandbox: Stdout or Stderr already set")
	}
	var b bytes.Buffer
	c.Stdout, c.Stderr = &b, &b
	err := c.Run()
	return b.Bytes(), err
}

func (c *Cmd) closeLifeline() {
	for _, f := range c.lifeline {
		f.Close()
	}
	c.lifeline = nil
}

// Release cleans up after the command: it SIGKILLs whatever is left in the
// command's process group (bubblewrap can leave a half-set-up process there
// when it is killed early; an unsandboxed command can leave background jobs),
// and discards the command's copy-on-write layers (read Changes and apply
// what you keep before). Call it after Wait (or if the command is never
// started). It is idempotent.
//
// The sweep signals the process group id = the command's pid; that number
// cannot be reused as a group id while any member is alive, and pids are not
// recycled within the moment between Wait and Release in practice.
func (c *Cmd) Release() {
	c.once.Do(func() {
		if c.Process != nil {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
		if c.cg != nil {
			c.cg.release()
		}
		c.closeLifeline()
		if c.place != nil { // never started
			c.place.closeAll()
			c.place = nil
		}
		if c.release != nil {
			c.release()
		}
		c.layers.remove()
		if c.argsFile != nil {
			c.argsFile.Close()
		}
	})
}

// Command wraps argv (e.g. {"bash", "-c", script}) to run in dir under p.
// The returned command is not started; see the package documentation for
// what the caller sets. The caller must call Release after Wait.
func (s *Sandbox) Command(ctx context.Context, p Policy, argv []string, dir string) (*Cmd, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, fmt.Errorf("%w: empty argv", ErrPolicy)
	}
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%w: working directory %q is not absolute", ErrPolicy, dir)
	}
	env := p.env()

	if p.Unsandboxed {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		finish(cmd, env, dir, syscall.SIGKILL)
		return &Cmd{Cmd: cmd, Mode: ModeNone, Summary: s.Describe(p),
			Gaps: []string{"UNSANDBOXED: the command can read, write and connect to anything this user can"}}, nil
	}
	if s.mode == ModeNone {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(s.feat.Missing(), "; "))
	}

	w, err := resolveWritable(p)
	if err != nil {
		return nil, err
	}
	socks, gaps, err := p.unixSockets()
	if err != nil {
		return nil, err
	}
	cfg := helperConfig{
		Landlock: s.feat.LandlockABI >= 1,
		Seccomp:  s.feat.Seccomp,
		Writable: w.all,
		// Host unix sockets cannot be told apart from the command's own
		// by seccomp (connect's address is a pointer), and neither
		// bubblewrap's read-only mounts nor Landlock below ABI 9 stop a
		// connect: socket(AF_UNIX) is denied unless the command opted in.
		DenyUnix: len(p.UnixSockets) == 0,
	}
	for _, sp := range p.maskPaths() {
		if _, err := os.Lstat(sp); err == nil {
			cfg.DenyRead = append(cfg.DenyRead, sp)
		}
	}
	sensitive, err := findSensitive(w.roots, p.ReadableSensitive, p.secretPaths())
	if err != nil {
		return nil, fmt.Errorf("%w (the command was not run: it could see what the mask would hide)", err)
	}
	if s.mode == ModeBwrap && len(sensitive) > MaxMasked {
		return nil, fmt.Errorf("%w: the workspace holds %d sensitive files to mask (%s), more than the %d one command's sandbox can mask "+
			"(one mount each); the command was not run. Keep such files in a directory masked whole (.ssh, .aws, .gnupg) or outside the workspace",
			ErrPolicy, len(sensitive), sensitiveNames(sensitive, 3), MaxMasked)
	}
	if !cfg.Landlock {
		gaps = append(gaps, "no Landlock: "+orUnknown(s.feat.LandlockErr))
	}
	if !cfg.Seccomp {
		gaps = append(gaps, "no seccomp: ptrace, io_uring, mount and socket syscalls are not filtered ("+orUnknown(s.feat.SeccompErr)+")")
	}

	var cmd *exec.Cmd
	var lifeline []*os.File
	var layers *layerSet
	var argsFile *os.File
	release := func() {}
	switch s.mode {
	case ModeBwrap:
		cfg.Inet = p.Network || p.PrivateLoopback
		cfg.Writable = append(cfg.Writable, "/tmp", "/dev/shm")
		cfg.WritableFiles = []string{"/dev/null", "/dev/zero", "/dev/full"}
		cfg.DevFiles = []string{"/dev/tty", "/dev/pts", "/dev/ptmx"}
		plan, err := s.planBwrap(p, w, dir, socks, sensitive)
		if err != nil {
			return nil, err
		}
		release = plan.release
		ldir := p.Layers()
		if ldir == "" {
			release()
			return nil, fmt.Errorf("%w: no directory for the commands' copy-on-write layers (set LayerDir or StateDir)", ErrPolicy)
		}
		if layers, err = newLayers(ldir, w.roots); err != nil {
			release()
			return nil, err
		}
		release = func() { plan.release() }
		if !s.feat.Cgroup.Kill() {
			// Without a cgroup of its own, nothing would stop a command
			// whose outer bwrap was killed before bubblewrap armed
			// --die-with-parent: the helper stays as a supervisor with a
			// lifeline. ExtraFiles become fds 3 (write end, bwrap's
			// --json-status-fd, held by the outer bwrap only) and 4 (read
			// end, passed through to the helper). With a cgroup, Release
			// kills the cgroup and waits until it is empty, and the PID
			// namespace ends with the command: the helper execs it.
			lr, lw, err := os.Pipe()
			if err != nil {
				release()
				return nil, err
			}
			lifeline = []*os.File{lw, lr}
			cfg.Supervise = true
			cfg.Lifeline = 4
			plan.args = append(plan.args, "--json-status-fd", "3")
		}
		gaps = append(gaps, plan.gaps...)
		if p.Network {
			gaps = append(gaps, "network ON: the host network namespace is shared, including services listening on 127.0.0.1")
		}
		if len(p.UnixSockets) > 0 {
			gaps = append(gaps, "unix sockets ON: besides the named ones, every host unix socket outside the masked directories (/run, /tmp, $XDG_RUNTIME_DIR, $HOME secrets) is reachable")
		}
		cj, err := json.Marshal(cfg)
		if err != nil {
			release()
			layers.remove()
			for _, f := range lifeline {
				f.Close()
			}
			return nil, err
		}
		// bubblewrap's options (one mount per masked file: thousands in a workspace of
		// keys) are passed in a memory file (--args), not on the command line, whose size
		// the kernel limits ("argument list too long").
		if argsFile, err = argsMemfd(plan.args); err != nil {
			release()
			layers.remove()
			for _, f := range lifeline {
				f.Close()
			}
			return nil, err
		}
		args := []string{"--args", strconv.Itoa(3 + len(lifeline)), "--", s.helper, HelperArg, string(cj), "--"}
		cmd = exec.CommandContext(ctx, s.feat.BwrapPath, append(args, argv...)...)
		cmd.ExtraFiles = append(lifeline, argsFile)
	case ModeLandlock:
		cfg.Inet = p.Network
		cfg.Supervise = true
		cfg.WritableFiles = []string{"/dev/null", "/dev/zero", "/dev/full"}
		cfg.DevFiles = []string{"/dev/tty"}
		cfg.ReadFiles = []string{"/dev/random", "/dev/urandom"}
		// Host ptys (other terminals of this user), /dev/shm and the rest.
		cfg.DenyRead = append(cfg.DenyRead, "/dev")
		if under(s.helper, w.all) {
			return nil, fmt.Errorf("%w: the helper binary %s is inside a writable directory; the command could replace it", ErrPolicy, s.helper)
		}
		gaps = append(gaps,
			NoLayer+" (no user namespaces for bubblewrap): the command writes the workspace directly; what it changes is not reviewed, held or checkpointed",
			"no PID namespace: leftover processes are killed by the helper when the command ends; processes that called setsid survive a SIGKILL sent straight to the helper",
			"no private /tmp: TMPDIR points to the session tmp dir, the host /tmp is read-only",
			"other processes' command lines in /proc are readable")
		if len(p.UnixSockets) > 0 {
			gaps = append(gaps, "unix sockets ON and no mount namespace: every host unix socket this user can connect to is reachable, not only "+strings.Join(p.UnixSockets, ", "))
		}
		if ents := slices.Concat(sensitive, p.credentialEntries(w.roots)); len(ents) > 0 {
			gaps = append(gaps, fmt.Sprintf("no mount namespace: sensitive workspace files are readable (%s)", sensitiveNames(ents, 20)))
		}
		for _, sp := range p.maskPaths() {
			if under(sp, w.all) {
				gaps = append(gaps, fmt.Sprintf("secret %s is inside a writable directory: readable", sp))
			}
		}
		if p.Network {
			gaps = append(gaps, "network ON: no network namespace, every host and local service is reachable")
		}
		cj, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		cmd = exec.CommandContext(ctx, s.helper, append([]string{HelperArg, string(cj), "--"}, argv...)...)
	default:
		return nil, fmt.Errorf("%w: unknown mode %s", ErrUnavailable, s.mode)
	}
	deathSig := syscall.SIGKILL
	if s.mode == ModeLandlock {
		deathSig = syscall.SIGTERM
	}
	finish(cmd, env, dir, deathSig)
	if layers != nil {
		// The first stage mounts the layers in a namespace of its own, then executes
		// bubblewrap with the same arguments.
		if cmd.Args, err = layers.wrap(s.helper, cmd.Args, cmd.SysProcAttr); err != nil {
			release()
			layers.remove()
			return nil, err
		}
		cmd.Path = s.helper
	}
	c := &Cmd{Cmd: cmd, Mode: s.mode, Summary: s.Describe(p), Gaps: gaps, release: release, lifeline: lifeline, layers: layers, argsFile: argsFile}
	if err := s.attachCgroup(c, p); err != nil {
		c.Release()
		return nil, err
	}
	return c, nil
}

// finish sets the parts of the command every mode shares. deathSig is what
// the command's first process gets when the daemon dies: SIGKILL for bwrap
// (its --die-with-parent takes the namespace down) and unsandboxed commands,
// SIGTERM for the ModeLandlock helper, which then kills every descendant
// before exiting (a SIGKILLed helper could not).
func finish(cmd *exec.Cmd, env []string, dir string, deathSig syscall.Signal) {
	cmd.Env = env
	cmd.Dir = dir
	// A new session: a new process group whose id is the pid (kill it with
	// syscall.Kill(-pid, sig)) and no controlling terminal (no /dev/tty,
	// no TIOCSTI into the user's terminal).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: deathSig}
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		return nil
	}
}

// writableSet are the canonical writable directories.
type writableSet struct {
	roots []string // workspace roots
	all   []string // roots, WritableDirs, TmpDir
}

func resolveWritable(p Policy) (writableSet, error) {
	var w writableSet
	canon := func(what, d string) (string, error) {
		if !filepath.IsAbs(d) {
			return "", fmt.Errorf("%w: %s %q is not absolute", ErrPolicy, what, d)
		}
		r, err := filepath.EvalSymlinks(d)
		if err != nil {
			return "", fmt.Errorf("%w: %s %q: %v", ErrPolicy, what, d, err)
		}
		st, err := os.Stat(r)
		if err != nil || !st.IsDir() {
			return "", fmt.Errorf("%w: %s %q is not a directory", ErrPolicy, what, d)
		}
		if r == "/" {
			return "", fmt.Errorf("%w: %s cannot be /", ErrPolicy, what)
		}
		return r, nil
	}
	if len(p.WorkspaceRoots) == 0 {
		return w, fmt.Errorf("%w: no workspace root", ErrPolicy)
	}
	for _, d := range p.WorkspaceRoots {
		r, err := canon("workspace root", d)
		if err != nil {
			return w, err
		}
		w.roots = append(w.roots, r)
	}
	w.all = slices.Clone(w.roots)
	extra := slices.Clone(p.WritableDirs)
	if p.TmpDir != "" {
		extra = append(extra, p.TmpDir)
	}
	for _, d := range extra {
		r, err := canon("writable dir", d)
		if err != nil {
			return w, err
		}
		if !slices.Contains(w.all, r) {
			w.all = append(w.all, r)
		}
	}
	return w, nil
}

// under reports whether p is one of dirs or below one.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") || d == "/" {
			return true
		}
	}
	return false
}

// depth is the number of components of a clean absolute path.
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// mountOp is one bubblewrap mount argument group.
type mountOp struct {
	args []string
	dst  string
}

// bwrapPlan is the argument list and host-side state of one command.
type bwrapPlan struct {
	args    []string
	gaps    []string
	release func()
}

// planBwrap builds the bubblewrap arguments. Mounts are applied in order of
// destination depth (stable), so a mount always lands on top of the mounts of
// its ancestors: tmpfs /tmp, then the workspace below it, then .git pinned,
// then .git/hooks read-only.
func (s *Sandbox) planBwrap(p Policy, w writableSet, dir string, socks []string, sensitive []sensitiveEntry) (*bwrapPlan, error) {
	var ops []mountOp
	add := func(dst string, args ...string) { ops = append(ops, mountOp{args: args, dst: dst}) }
	add("/", "--ro-bind", "/", "/")
	add("/dev", "--dev", "/dev")
	add("/proc", "--proc", "/proc")
	masked := []string{"/dev", "/proc", "/tmp", "/run"}
	add("/tmp", "--tmpfs", "/tmp")
	// /run holds the system D-Bus socket, docker.sock, systemd's private
	// socket and $XDG_RUNTIME_DIR (/run/user/UID).
	add("/run", "--tmpfs", "/run")

	plan := &bwrapPlan{release: func() {}}
	for _, sp := range p.maskPaths() {
		if _, err := os.Lstat(sp); err != nil {
			continue
		}
		real, err := filepath.EvalSymlinks(sp)
		if err != nil {
			continue
		}
		st, err := os.Stat(real)
		if err != nil || real == "/" {
			continue
		}
		if under(real, w.all) {
			plan.gaps = append(plan.gaps, fmt.Sprintf("secret %s is inside a writable directory: not masked", sp))
			continue
		}
		if under(real, masked) {
			continue
		}
		if st.IsDir() {
			add(real, "--tmpfs", real)
		} else {
			add(real, "--ro-bind", "/dev/null", real)
		}
		masked = append(masked, real)
	}
	if p.Network {
		// /etc/resolv.conf often points into /run (systemd-resolved).
		if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && r != "/etc/resolv.conf" && under(r, masked) {
			add(r, "--ro-bind", r, r)
		}
	}
	for _, d := range w.all {
		add(d, "--bind", d, d)
	}

	// Git configurations holding a credential: a redacted copy, read-only.
	creds := p.gitCredentialFiles(w.roots)
	srcs, releaseCopies, err := redactedCopies(creds)
	if err != nil {
		return nil, err
	}
	for i, c := range creds {
		if under(c.path, masked) && !under(c.path, w.all) {
			continue // not visible in the sandbox (a worktree's repository under /tmp, …)
		}
		add(c.path, "--ro-bind", srcs[i], c.path)
	}
	plan.release = releaseCopies

	// Sensitive workspace files: a directory gets a read-only
	// empty tmpfs, a file /dev/null (read-only): reads return nothing, and
	// a mount point cannot be renamed or removed.
	for _, e := range sensitive {
		if under(e.path, masked) && !under(e.path, w.all) {
			continue // already hidden (a symlink's target in /tmp, $HOME/.ssh, …)
		}
		if e.dir {
			add(e.path, "--tmpfs", e.path)
			add(e.path, "--remount-ro", e.path)
		} else {
			add(e.path, "--ro-bind", "/dev/null", e.path)
		}
		masked = append(masked, e.path)
	}
	// Opted-in unix sockets that a mask hides are bound back (a socket
	// inside a writable dir is visible anyway).
	for _, sock := range socks {
		if under(sock, masked) && !under(sock, w.all) {
			add(sock, "--bind", sock, sock)
		}
	}

	// The helper must be visible (and read-only) inside: the test binary
	// lives under /tmp, a developer's build may live in the workspace.
	if under(s.helper, masked) || under(s.helper, w.all) {
		add(s.helper, "--ro-bind", s.helper, s.helper)
	}

	sort.SliceStable(ops, func(i, j int) bool { return depth(ops[i].dst) < depth(ops[j].dst) })
	args := bwrapBaseArgs(p.Network)
	for _, o := range ops {
		args = append(args, o.args...)
	}
	args = append(args, "--chdir", dir)
	plan.args = args
	return plan, nil
}

// stateDir returns agentd's state directory for the policy: StateDir, or the
// store's default ($XDG_STATE_HOME/agentd, else $HOME/.local/state/agentd)
// from the policy's environment. "" when none is known.
func (p Policy) stateDir() string {
	if p.StateDir != "" {
		if filepath.IsAbs(p.StateDir) {
			return filepath.Clean(p.StateDir)
		}
		return ""
	}
	base := p.Env
	if base == nil {
		base = os.Environ()
	}
	if d := lookupEnv(base, "XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "agentd")
	}
	if h := p.home(); h != "" && filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "agentd")
	}
	return ""
}

// maskPaths are the host paths no command may read: the secret paths, the
// runtime dir and agentd's state directory.
func (p Policy) maskPaths() []string {
	out := p.secretPaths()
	if d := p.stateDir(); d != "" {
		out = append(out, d)
	}
	return out
}

// unixSockets validates Policy.UnixSockets and returns their canonical paths.
// A named path that exists must be a socket (the opt-in must never unmask a
// file); a missing one is reported in gaps and skipped.
func (p Policy) unixSockets() (socks []string, gaps []string, err error) {
	for _, s := range p.UnixSockets {
		if !filepath.IsAbs(s) || strings.ContainsRune(s, 0) {
			return nil, nil, fmt.Errorf("%w: unix socket %q is not an absolute path", ErrPolicy, s)
		}
		real, err := filepath.EvalSymlinks(s)
		if err != nil {
			gaps = append(gaps, fmt.Sprintf("unix socket %s: %v", s, err))
			continue
		}
		fi, err := os.Lstat(real)
		if err != nil {
			gaps = append(gaps, fmt.Sprintf("unix socket %s: %v", s, err))
			continue
		}
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, nil, fmt.Errorf("%w: %s is not a unix socket (%s)", ErrPolicy, s, fi.Mode().Type())
		}
		if !slices.Contains(socks, real) {
			socks = append(socks, real)
		}
	}
	return socks, gaps, nil
}

// sensitiveNames lists up to n entries' relative names for a summary line.
func sensitiveNames(ents []sensitiveEntry, n int) string {
	var names []string
	for i, e := range ents {
		if i == n {
			names = append(names, fmt.Sprintf("and %d more", len(ents)-n))
			break
		}
		names = append(names, e.rel)
	}
	return strings.Join(names, ", ")
}

// MaxMasked is the most sensitive workspace entries one bubblewrap command masks (three
// arguments each, within bubblewrap's limit of 9,000 arguments, beside its other mounts).
const MaxMasked = 2500

// argsMemfd returns a memory file holding args, NUL-separated, for bubblewrap's --args.
func argsMemfd(args []string) (*os.File, error) {
	fd, err := unix.MemfdCreate("agentd-bwrap-args", 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: bubblewrap arguments: %w", err)
	}
	f := os.NewFile(uintptr(fd), "agentd-bwrap-args")
	var b bytes.Buffer
	for _, a := range args {
		b.WriteString(a)
		b.WriteByte(0)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: bubblewrap arguments: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
