// Package sandbox builds the operating-system sandbox every model-proposed shell
// command runs in. Model output is untrusted: a prompt-injected README can make
// the model ask to run anything, so the boundary is the kernel, not a parse of
// the command string.
//
// # Layers
//
//   - bubblewrap (ModeBwrap, the default): a read-only view of /, a fresh /dev,
//     /proc, private /tmp and /run, the workspace roots and extra writable dirs
//     bound read-write, protected paths inside the workspace (.git/hooks,
//     .git/config, .vscode, …) bound read-only on top, $HOME secrets, shell
//     histories, $XDG_RUNTIME_DIR, agentd's state dir and the workspace's
//     sensitive files (fsafe.Classify; found through the process's mask index,
//     maskindex_linux.go, and with them the hard links to them) masked, every
//     namespace unshared (no
//     network unless the policy asks), --die-with-parent, --new-session, its
//     own PID namespace.
//   - Inside it, the helper (package helper: the agentd-sandbox binary, or the
//     helper mode of the agentd binary, HelperMain) drops all capabilities,
//     sets no_new_privs, applies Landlock (read everywhere but the masked
//     secrets, write only to the writable roots) and an arch-checking seccomp
//     filter (socket(AF_UNIX) denied in every mode unless Policy.UnixSockets
//     opts in; socketpair allowed), then execs the command. Where the command
//     has no cgroup of its own, it instead runs the command as its child and
//     stays as a child subreaper: when the command exits, or the outer bwrap
//     process disappears (a lifeline pipe), it kills everything left (with a
//     cgroup, Release kills the cgroup and the PID namespace ends with the
//     command).
//   - Without bubblewrap or user namespaces (ModeLandlock), the helper runs
//     directly: Landlock + seccomp only (sensitive workspace files cannot be
//     masked: Describe names them after SensitiveUnmasked), and the helper
//     stays as a child subreaper that kills every descendant when the command
//     ends. What this mode cannot do is listed in Cmd.Gaps.
//   - ModeNone runs the command unsandboxed (environment still scrubbed), only
//     when Policy.Unsandboxed is set: a per-command decision of the user.
//
// The package only reports what is missing (Features.Missing, Cmd.Gaps); the
// approval policy decides what to ask.
//
// # Seam with the bash tool
//
// Sandbox.Command returns a *Cmd whose embedded *exec.Cmd is not started. The
// package sets Path, Args, Env, Dir, ExtraFiles (bwrap mode: the lifeline
// pipe, or the --info-fd and --block-fd pipes; do not replace them), SysProcAttr{Setsid: true, Pdeathsig: SIGKILL
// (SIGTERM for the ModeLandlock helper, which then cleans up), UseCgroupFD
// and CgroupFD (the command's cgroup)} and a Cancel that SIGKILLs the whole
// process group and the command's cgroup. The caller sets Stdin (nil →
// /dev/null), Stdout/Stderr, WaitDelay, may replace Cancel with a TERM →
// grace → KILL sequence against the group (-Process.Pid; end it with
// Cmd.Kill, which also reaches processes that left the group), may add fields
// to SysProcAttr but must not set Setpgid/Setctty/Foreground (Setsid already
// made the command a session and group leader) or change the cgroup fields,
// starts it with Cmd.Start or
// Cmd.Run (not Cmd.Cmd.Start: they close the daemon's end of the lifeline
// and start the mount watch), waits with Cmd.Wait (which ends that watch),
// and calls Release after Wait (it sweeps the process group, empties and
// removes the command's cgroup, and removes placeholders).
//
// Pdeathsig (the command dies with the daemon) is tied, in Go, to the OS
// thread that started the command: do not call Start from a goroutine that
// holds runtime.LockOSThread and may exit.
//
// Killing: with bubblewrap, the process group holds only the outer bwrap
// process (the command runs in its own session inside the PID namespace).
// Any signal that kills the outer bwrap kills the whole sandbox with SIGKILL
// (--die-with-parent once bwrap's setup is done; the helper's lifeline while
// it is not), so there is no graceful TERM for the command itself in this
// mode; and the namespace dies anyway when the command's main process exits,
// taking background and setsid'd processes with it.
//
// In ModeLandlock the group holds the helper and the command; the helper
// kills leftovers when the command exits and forwards TERM/INT/HUP/QUIT to
// processes that left the group, so send TERM to the group before KILL. A
// SIGKILL that reaches the helper first (from the caller, or from the command
// itself: `kill -9 0`) would leave processes that called setsid running;
// the command's cgroup catches those (below).
//
// # Mounts the host takes away
//
// The kernel detaches a mount in every other mount namespace when the entry it
// sits on is removed or replaced by a rename on the host (git's config.lock,
// an editor's atomic save): the protection of a read-only .git/config or a
// masked .env would end in the middle of a command. In bubblewrap mode the
// package watches the host entries a command's sandbox mounted over (inotify
// on their parent directories) from Start to Wait, and kills the command at
// the first such change; Cmd.Unprotected names the paths (detach_linux.go).
//
// # Per-command cgroup and limits
//
// Where the machine allows it (root, or a delegated cgroup subtree; see
// CgroupSupport and cgroup_linux.go), every command runs in a cgroup of its
// own, created under the daemon's cgroup (cgroup v2; on hybrid machines also
// in the v1 memory and pids hierarchies) before its first process starts:
// that process is cloned into the v2 cgroup (CLONE_INTO_CGROUP); for v1, in
// bubblewrap mode Cmd.Start moves the outer bwrap and bubblewrap's first child
// into the cgroups while that child waits on --block-fd (bubblewrap reports
// its pid on --info-fd), and in ModeLandlock the helper joins them first
// thing. Cancel also kills the cgroup (cgroup.kill), Cmd.Kill
// does it on demand, and Release kills what is left, waits until the cgroup
// is empty, records Cmd.Events and removes it. The cgroup carries the
// limits (Options.Limits, Policy.Limits, DefaultLimits): memory.max and
// pids.max (v1: memory.limit_in_bytes, pids.max). Cmd.Events says what they
// did (OOM kills, refused forks); Describe and Features.Describe show the
// limits, or that they are not enforced (then Cmd.Gaps says so too).
// RLIMIT_NPROC and RLIMIT_AS are not used as a fallback: the first does not
// apply to root and counts every process of the user otherwise, the second
// limits address space, which breaks the race detector and JavaScript
// engines long before memory runs out.
//
// Exit status: the command's, or 128+N if it was killed by signal N (159 =
// SIGSYS, a seccomp kill); ExitHelperFailed (125) when the sandbox could not
// be set up.
package sandbox
