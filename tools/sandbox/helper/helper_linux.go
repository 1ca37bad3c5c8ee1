//go:build linux

package helper

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/tools/gocache"
)

// Config is what Command tells the helper, as JSON in argv[2]. Paths are
// as seen by the helper (inside bubblewrap, the same as on the host).
type Config struct {
	// Landlock and Seccomp are required layers: the helper fails (exit
	// ExitFailed) rather than run without one it was asked for.
	Landlock bool `json:"landlock"`
	Seccomp  bool `json:"seccomp"`
	// Inet allows AF_INET/AF_INET6 sockets (and leaves TCP unhandled by
	// Landlock). DenyUnix denies socket(AF_UNIX).
	Inet     bool `json:"inet"`
	DenyUnix bool `json:"deny_unix"`
	// Supervise keeps the helper as a child subreaper that kills every
	// remaining descendant when the command exits (ModeLandlock).
	Supervise bool `json:"supervise"`
	// Lifeline (bwrap mode, with Supervise) is the fd of the read end of a
	// pipe whose write end only the outer bwrap process holds: it is
	// bwrap's --json-status-fd, which the outer monitor keeps open for its
	// whole life and every other bwrap process closes. EOF means the outer
	// bwrap is gone: the helper kills every descendant and exits. This
	// closes a race in bubblewrap, whose PID 1 arms --die-with-parent only
	// at the end of its setup: an outer bwrap killed during setup would
	// otherwise leave the command running with nobody to stop it.
	Lifeline int `json:"lifeline,omitempty"`

	// Join are cgroup.procs files (the command's cgroups in cgroup v1
	// hierarchies) the helper moves itself into first, before anything else,
	// so that everything it starts is limited by them (ModeLandlock; in
	// bubblewrap mode the daemon places bubblewrap's child itself).
	Join []string `json:"join,omitempty"`

	Writable      []string `json:"writable"`       // dirs: read, write, create, remove, rename
	WritableFiles []string `json:"writable_files"` // /dev/null, …
	DevFiles      []string `json:"dev_files"`      // read, write, ioctl (ptys)
	ReadFiles     []string `json:"read_files"`     // readable even below a DenyRead entry
	DenyRead      []string `json:"deny_read"`      // secrets, runtime dir, …
}

// Main runs the sandbox helper when os.Args[1] is Arg, and
// returns immediately otherwise. Call it first thing in main (and in TestMain
// of packages that run sandboxed commands), before any goroutine starts work:
// in helper mode it never returns.
//
// Usage: agentd __sandbox-exec CONFIG_JSON -- ARGV...
//
// In order, on one locked OS thread: drop every capability (bounding set,
// ambient, effective, permitted, inheritable), set no_new_privs, apply
// Landlock to all threads (go-landlock), install the seccomp filter with
// SECCOMP_FILTER_FLAG_TSYNC (all threads), then exec ARGV[0] from that same
// thread, or (Supervise: always in practice) fork it from that thread and
// stay as its child subreaper.
//
// Thread semantics: capabilities, no_new_privs, the seccomp filter and the
// Landlock domain are per-thread kernel state, and Go schedules goroutines on
// several threads. The helper keeps the calling goroutine on its thread from
// the first instruction (runtime.LockOSThread, never unlocked), so the thread
// that drops capabilities is the one that execs or forks: execve keeps only
// the calling thread, and fork copies only it. Landlock and seccomp are
// additionally applied to every thread, so the helper's other threads (which
// never run untrusted code) are confined too. Two consequences: below
// Landlock ABI 8, go-landlock restricts each thread separately, which gives
// each thread its own sibling domain, so the supervisor sends every signal
// from the locked thread (the only one whose domain the command shares);
// capabilities are dropped on the locked thread only, which is the one that
// matters.
func Main() {
	if len(os.Args) >= 2 && os.Args[1] == gocache.Arg {
		// The go command's cache program (GOCACHEPROG), started inside the sandbox.
		os.Exit(gocache.Main(os.Args[2:]))
	}
	if len(os.Args) >= 2 && os.Args[1] == LayerArg {
		runtime.LockOSThread()
		os.Exit(layerRun(os.Args[2:]))
	}
	if len(os.Args) < 2 || os.Args[1] != Arg {
		return
	}
	runtime.LockOSThread()
	os.Exit(helperRun(os.Args[2:]))
}

func helperFail(format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "agentd sandbox: "+format+"\n", a...)
	return ExitFailed
}

func helperRun(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		return helperFail("usage: %s CONFIG_JSON -- ARGV...", Arg)
	}
	var cfg Config
	dec := json.NewDecoder(strings.NewReader(args[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return helperFail("bad config: %v", err)
	}
	argv := args[2:]
	for _, f := range cfg.Join {
		if filepath.Base(f) != "cgroup.procs" || !filepath.IsAbs(f) {
			return helperFail("bad config: join %q is not a cgroup.procs file", f)
		}
		// "0": the writing process.
		if err := os.WriteFile(f, []byte("0"), 0); err != nil {
			return helperFail("joining the command's cgroup: %v", err)
		}
	}
	if cfg.Lifeline > 0 {
		unix.CloseOnExec(cfg.Lifeline)
		if lifelineCut(cfg.Lifeline, 0) {
			return helperFail("the sandbox lost its parent during setup; not starting the command")
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return helperFail("%v", err)
	}
	if err := dropCapabilities(); err != nil {
		return helperFail("dropping capabilities: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return helperFail("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	}
	if cfg.Landlock {
		if _, err := applyLandlock(&cfg); err != nil {
			return helperFail("%v", err)
		}
	}
	if cfg.Seccomp {
		if err := InstallSeccomp(FilterSpec{Inet: cfg.Inet, DenyUnix: cfg.DenyUnix}); err != nil {
			return helperFail("%v", err)
		}
	}
	if cfg.Supervise {
		return supervise(path, argv, cfg.Lifeline)
	}
	err = syscall.Exec(path, argv, os.Environ())
	return helperFail("exec %s: %v", path, err)
}

// dropCapabilities empties the calling thread's capability sets and, when it
// may (CAP_SETPCAP), its bounding set, so that exec of anything (even as uid
// 0) cannot grant capabilities back. Without CAP_SETPCAP the bounding set
// cannot matter: no_new_privs stops setuid and file capabilities.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[0].Effective&(1<<unix.CAP_SETPCAP) != 0 {
		last := 63
		if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				last = n
			}
		}
		for c := 0; c <= last; c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
				if errors.Is(err, unix.EINVAL) {
					break
				}
				return fmt.Errorf("PR_CAPBSET_DROP %d: %w", c, err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data != [2]unix.CapUserData{} {
		return errors.New("capabilities still present after capset")
	}
	return nil
}

// supervise runs the command as a child and stays as its child subreaper:
// everything the command leaves behind (background jobs, `setsid` escapes,
// daemons that double-fork) is reparented to the helper and SIGKILLed when
// the command exits. The exit status is the command's (128+N if it was killed
// by signal N).
//
// Signals: the caller signals the process group (helper and command share
// it). The helper catches TERM/INT/HUP/QUIT and forwards them to descendants
// outside its process group (setsid escapes), which the group signal missed.
// A SIGKILL to the helper cannot be caught: descendants that left the group
// then survive, so callers send TERM first (and the daemon should be a child
// subreaper or use a cgroup if it needs a hard guarantee in this mode). When
// the daemon dies, the helper gets SIGTERM (Pdeathsig), notices that its
// parent changed, and kills every descendant.
func supervise(path string, argv []string, lifeline int) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return helperFail("prctl(PR_SET_CHILD_SUBREAPER): %v", err)
	}
	parent := os.Getppid()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT)
	// StartProcess forks on this (locked) thread, which holds the dropped
	// capabilities. Pdeathsig is tied to that thread, which never exits
	// before the process does.
	proc, err := os.StartProcess(path, argv, &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return helperFail("starting %s: %v", path, err)
	}
	pid := proc.Pid
	self := os.Getpid()

	// Every kill happens on this goroutine, i.e. on the locked thread. Below
	// Landlock ABI 8, go-landlock restricts each thread with its own
	// landlock_restrict_self call, which gives each thread its own (sibling)
	// domain; the command inherited the locked thread's domain, and Landlock's
	// signal scope lets only that domain (or an enclosing one) signal it.
	// Other goroutines only wait and report.
	exited := make(chan unix.WaitStatus, 1)
	go func() {
		// Reaps the command and everything reparented to the subreaper.
		for {
			var ws unix.WaitStatus
			wpid, err := unix.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				// ECHILD cannot happen before the command is reaped.
				exited <- 0
				return
			}
			if wpid == pid {
				exited <- ws
				return
			}
		}
	}()
	cut := make(chan struct{})
	if lifeline > 0 {
		go func() {
			lifelineCut(lifeline, -1)
			close(cut)
		}()
	}

	pgrp := unix.Getpgrp()
	for {
		select {
		case ws := <-exited:
			code := 0
			switch {
			case ws.Exited():
				code = ws.ExitStatus()
			case ws.Signaled():
				code = 128 + int(ws.Signal())
			}
			killDescendants(self)
			return code
		case <-cut:
			// The outer bwrap is gone.
			killDescendants(self)
			return 128 + int(unix.SIGKILL)
		case s := <-sigs:
			if os.Getppid() != parent {
				// The daemon died (Pdeathsig SIGTERM): nobody will
				// kill the group any more, so take everything down.
				killDescendants(self)
				return 128 + int(unix.SIGTERM)
			}
			for _, d := range descendants(self) {
				if g, err := unix.Getpgid(d); err == nil && g != pgrp {
					_ = unix.Kill(d, s.(syscall.Signal))
				}
			}
		}
	}
}

// lifelineCut reports whether the lifeline pipe fd is at EOF (every writer
// gone), waiting up to timeoutMs (-1: forever). Status data bwrap writes
// into it is read and discarded.
func lifelineCut(fd, timeoutMs int) bool {
	var buf [512]byte
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, timeoutMs)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return true
		}
		if n == 0 {
			return false
		}
		r, err := unix.Read(fd, buf[:])
		switch {
		case errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN):
		case err != nil || r == 0:
			return true
		}
	}
}

// killDescendants SIGKILLs and reaps every descendant of self (a subreaper),
// repeating until none is left or five seconds have passed.
func killDescendants(self int) {
	deadline := time.Now().Add(5 * time.Second)
	pause := time.Millisecond
	for {
		for {
			var ws unix.WaitStatus
			wpid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if wpid <= 0 || err != nil {
				break
			}
		}
		ds := descendants(self)
		if len(ds) == 0 || time.Now().After(deadline) {
			return
		}
		for _, d := range ds {
			_ = unix.Kill(d, unix.SIGKILL)
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// descendants lists all descendants of pid, from /proc/PID/task/TID/children
// (or, without CONFIG_PROC_CHILDREN, a scan of /proc/*/stat).
func descendants(pid int) []int {
	var out []int
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	childrenOf := childrenFromTask
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err != nil {
		childrenOf = childrenFromStat()
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range childrenOf(p) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

func childrenFromTask(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func childrenFromStat() func(int) []int {
	kids := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may contain spaces and ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			kids[pp] = append(kids[pp], p)
		}
	}
	return func(pid int) []int { return kids[pid] }
}
