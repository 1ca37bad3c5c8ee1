package sandbox

import (
	"errors"
	"fmt"
	"github.com/agentd/agentd/tools/sandbox/helper"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// HelperArg is the reserved argv[1] that switches the agentd binary (and this
// package's test binary) into helper mode; see HelperMain.
const HelperArg = helper.Arg

// IsHelperArg reports whether argv[1] switches a binary into one of the helper's modes (the
// command's helper, or the first stage that mounts the copy-on-write layers): call HelperMain then.
func IsHelperArg(a string) bool { return a == helper.Arg || a == helper.LayerArg }

// ExitHelperFailed is the exit status of the helper when it could not set up
// the sandbox (bad policy, Landlock or seccomp refused, command not found). A
// command killed by signal N exits 128+N in every mode (bubblewrap and the
// helper's supervisor both report it that way, like a shell).
const ExitHelperFailed = helper.ExitFailed

// MaxLandlockABI is the highest Landlock ABI the helper uses (the one the
// rules were written and tested against). Lower kernel ABIs are used as they
// are; the missing rights are reported by Features.Missing.
const MaxLandlockABI = helper.MaxLandlockABI

// HelperMain runs the sandbox helper (package helper) when os.Args[1] is
// HelperArg, and the go command's cache program when it is gocache.Arg; it
// returns immediately otherwise. Call it first thing in main (and in TestMain
// of packages that run sandboxed commands), before any goroutine starts work:
// in helper mode it never returns.
func HelperMain() { helper.Main() }

// Mode is how a command is confined.
type Mode int

const (
	// ModeAuto (Options only) picks the strongest available mode.
	ModeAuto Mode = iota
	// ModeBwrap: bubblewrap namespaces + the helper (Landlock + seccomp).
	ModeBwrap
	// ModeLandlock: the helper only (Landlock + seccomp, no namespaces).
	ModeLandlock
	// ModeNone: unsandboxed. Only for Policy.Unsandboxed.
	ModeNone
)

func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeBwrap:
		return "bwrap"
	case ModeLandlock:
		return "landlock+seccomp"
	case ModeNone:
		return "none"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Errors returned by New, Sandbox.Command and LockApplyRoots.
var (
	// ErrUnavailable: no sandbox mode works on this machine (or the forced
	// mode does not), and the command was not explicitly allowed to run
	// unsandboxed.
	ErrUnavailable = errors.New("sandbox unavailable")
	// ErrPolicy: the policy is malformed (relative path, missing root, …).
	ErrPolicy = errors.New("invalid sandbox policy")
	// ErrApplyLock: the apply lock of a workspace root (LockApplyRoots) could not be taken:
	// its file could not be made, or the wait for another holder ended (the turn cancelled).
	// Nothing was applied.
	ErrApplyLock = errors.New("the workspace's apply lock could not be taken")
)

// Features is what this machine offers, as measured by Detect.
type Features struct {
	Arch string

	// UserNamespaces: a process could be started in a new user namespace.
	UserNamespaces    bool
	UserNamespacesErr string

	// Bwrap: bubblewrap ran a command with the flags Command uses.
	Bwrap        bool
	BwrapPath    string
	BwrapVersion string
	BwrapErr     string

	// LandlockABI is the kernel's Landlock ABI version (0: none).
	LandlockABI int
	LandlockErr string

	// Seccomp: seccomp filters with KILL_PROCESS and ERRNO can be installed,
	// and this build has a filter for Arch.
	Seccomp    bool
	SeccompErr string

	// CgroupV2 is mounted; CgroupKill: this process's cgroup has cgroup.kill.
	CgroupV2   bool
	CgroupKill bool
	// Cgroup is how commands get a cgroup of their own (kill and limits).
	Cgroup CgroupSupport
}

// BestMode is the strongest mode Features allow, or ModeNone when neither
// bubblewrap nor Landlock + seccomp works.
func (f Features) BestMode() Mode {
	switch {
	case f.Bwrap:
		return ModeBwrap
	case f.LandlockABI >= 1 && f.Seccomp:
		return ModeLandlock
	}
	return ModeNone
}

// Usable reports whether mode m can run on these features (ModeNone always
// can; ModeAuto when some sandbox can).
func (f Features) Usable(m Mode) bool {
	switch m {
	case ModeBwrap:
		return f.Bwrap
	case ModeLandlock:
		return f.LandlockABI >= 1 && f.Seccomp
	case ModeNone:
		return true
	case ModeAuto:
		return f.BestMode() != ModeNone
	}
	return false
}

// Missing lists the protections this machine cannot give, each with its
// consequence, in the order they matter. Empty when everything is there.
func (f Features) Missing() []string {
	var out []string
	if !f.Bwrap {
		why := f.BwrapErr
		if !f.UserNamespaces && f.UserNamespacesErr != "" {
			why = "user namespaces unusable: " + f.UserNamespacesErr
		}
		out = append(out, fmt.Sprintf("bubblewrap (%s): "+NoLayer+": commands write the workspace directly and agentd cannot "+
			"review what they change, so every command asks; $HOME secrets and /tmp are not masked, no PID or network namespace", why))
	}
	switch {
	case f.LandlockABI < 1:
		out = append(out, fmt.Sprintf("Landlock (%s): writes outside the workspace are stopped only by bubblewrap's read-only mounts; "+
			"every command should ask", orUnknown(f.LandlockErr)))
	case f.LandlockABI < 6:
		out = append(out, fmt.Sprintf("Landlock ABI %d < 6: signals and abstract unix sockets to processes outside the sandbox are not scoped", f.LandlockABI))
	}
	if f.LandlockABI >= 1 && f.LandlockABI < 4 {
		out = append(out, fmt.Sprintf("Landlock ABI %d < 4: TCP is not restricted by Landlock (seccomp still denies sockets)", f.LandlockABI))
	}
	if !f.Seccomp {
		out = append(out, fmt.Sprintf("seccomp (%s): ptrace, io_uring, mount, namespace and socket syscalls are not filtered", orUnknown(f.SeccompErr)))
	}
	return out
}

// CgroupSupport is how this machine gives commands their own cgroup, as found
// by Detect.
type CgroupSupport struct {
	// V2Parent is the cgroup v2 directory under which per-command cgroups
	// are created ("": none).
	V2Parent string `json:"v2Parent,omitempty"`
	// V2Memory, V2Pids: the controllers are enabled for V2Parent's children.
	V2Memory bool `json:"v2Memory,omitempty"`
	V2Pids   bool `json:"v2Pids,omitempty"`
	// V1Memory, V1Pids are this process's cgroups in the v1 memory and pids
	// hierarchies, under which per-command cgroups are created when the
	// controller is not available in cgroup v2 ("": none).
	V1Memory string `json:"v1Memory,omitempty"`
	V1Pids   string `json:"v1Pids,omitempty"`
	// Err says why something is missing ("" when nothing is).
	Err string `json:"err,omitempty"`
}

// Kill reports whether a command's processes can all be killed through its
// cgroup (cgroup v2, or the v1 pids hierarchy).
func (c CgroupSupport) Kill() bool { return c.V2Parent != "" || c.V1Pids != "" }

// Memory reports whether a per-command memory limit can be set.
func (c CgroupSupport) Memory() bool { return c.V2Memory || c.V1Memory != "" }

// Pids reports whether a per-command process limit can be set.
func (c CgroupSupport) Pids() bool { return c.V2Pids || c.V1Pids != "" }

// Mechanism names what is in force, for `agentd doctor`: "cgroup v2
// (kill, memory, pids)" or "cgroup v2 (kill) + v1 (memory, pids)".
func (c CgroupSupport) Mechanism() string {
	var v2, v1 []string
	if c.V2Parent != "" {
		v2 = append(v2, "kill")
		if c.V2Memory {
			v2 = append(v2, "memory")
		}
		if c.V2Pids {
			v2 = append(v2, "pids")
		}
	}
	if c.V1Memory != "" {
		v1 = append(v1, "memory")
	}
	if c.V1Pids != "" {
		v1 = append(v1, "pids")
	}
	var parts []string
	if len(v2) > 0 {
		parts = append(parts, "cgroup v2 ("+strings.Join(v2, ", ")+")")
	}
	if len(v1) > 0 {
		parts = append(parts, "cgroup v1 ("+strings.Join(v1, ", ")+")")
	}
	if len(parts) == 0 {
		return "no per-command cgroup"
	}
	return "per-command " + strings.Join(parts, " + ")
}

// Limits are per-command resource limits, enforced through the command's
// cgroup where the machine allows it (see CgroupSupport; Cmd.Gaps says when
// it does not). A zero field takes the default (DefaultLimits); a negative
// one means no limit.
type Limits struct {
	// MemoryBytes caps the memory of the command and every process it
	// starts, together (RAM; no swap beyond it). Over it, the kernel kills
	// the largest process of the command (Cmd.Events().OOMKills).
	MemoryBytes int64
	// Pids caps the processes and threads the command has at any one time;
	// fork and clone fail with EAGAIN beyond it.
	Pids int
}

// DefaultLimits are the limits of a command on this machine: memory half the
// RAM, at most 8 GiB and at least 1 GiB; 64 processes and threads per CPU,
// between 512 and 4096.
//
// Why: a limit is a ceiling, not a reservation. Large links (Rust, C++) and
// JavaScript bundlers take 2–6 GiB, so 8 GiB leaves them room on a 16 GiB
// laptop or the 24 GiB build machine, while half the RAM leaves the editor,
// the desktop and the Ollama model (about 5 GB for the default 8B model)
// standing on an 8 GiB laptop. Process counts include threads: `go test
// ./...` or `make -j` run one process per CPU with a dozen or more threads
// each, so 64 per CPU is generous for builds and still stops a fork loop
// (a run of 1,007 background processes on a 2-core machine now fails at 512).
func DefaultLimits() Limits {
	mem := int64(8) << 30
	if total := memTotal(); total > 0 {
		mem = min(mem, max(total/2, 1<<30))
	}
	return Limits{MemoryBytes: mem, Pids: min(max(64*runtime.NumCPU(), 512), 4096)}
}

// or fills the zero fields of l from d.
func (l Limits) or(d Limits) Limits {
	if l.MemoryBytes == 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.Pids == 0 {
		l.Pids = d.Pids
	}
	return l
}

// String is "memory 8 GiB, 512 processes" ("no memory limit" for a
// negative field).
func (l Limits) String() string {
	mem := "no memory limit"
	if l.MemoryBytes > 0 {
		mem = "memory " + FormatBytes(l.MemoryBytes)
	}
	pids := "no process limit"
	if l.Pids > 0 {
		pids = fmt.Sprintf("%d processes", l.Pids)
	}
	return mem + ", " + pids
}

// LimitsSummary is what the limits l amount to on these features: l, or
// which of them cannot be enforced.
func (f Features) LimitsSummary(l Limits) string {
	var parts []string
	switch {
	case l.MemoryBytes <= 0:
		parts = append(parts, "no memory limit")
	case f.Cgroup.Memory():
		parts = append(parts, "memory "+FormatBytes(l.MemoryBytes))
	default:
		parts = append(parts, "NO memory limit (no cgroup)")
	}
	switch {
	case l.Pids <= 0:
		parts = append(parts, "no process limit")
	case f.Cgroup.Pids():
		parts = append(parts, fmt.Sprintf("%d processes", l.Pids))
	default:
		parts = append(parts, "NO process limit (no cgroup)")
	}
	return strings.Join(parts, ", ")
}

// ResourceEvents are what the limits did to a command.
type ResourceEvents struct {
	// OOMKills is the number of processes the kernel killed because the
	// command hit its memory limit.
	OOMKills int
	// PidsLimited is the number of fork/clone calls refused because the
	// command hit its process limit.
	PidsLimited int
}

// String says what happened in a sentence for the command's result ("" when
// nothing did).
func (e ResourceEvents) String() string {
	var parts []string
	if e.OOMKills > 0 {
		parts = append(parts, fmt.Sprintf("out of memory: the kernel killed %d process(es) that exceeded the command's memory limit", e.OOMKills))
	}
	if e.PidsLimited > 0 {
		parts = append(parts, fmt.Sprintf("process limit reached: %d fork(s) failed", e.PidsLimited))
	}
	return strings.Join(parts, "; ")
}

// FormatBytes writes n as "4 GiB", "512 MiB" or "1536 KiB" (exact values in
// the largest unit that divides n), or "N bytes".
func FormatBytes(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d bytes", n)
}

// ParseBytes reads a memory size for configuration: "4G", "4GiB", "512M",
// "1536k", "8589934592" (binary units; K, M, G, T with an optional "iB" or
// "B"); "off", "none" or "unlimited" give -1 (no limit).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "off", "none", "unlimited", "max":
		return -1, nil
	}
	num := strings.TrimRightFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.ToUpper(strings.TrimSpace(t[len(num):]))
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "B"), "I")
	shift := map[string]int{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
	sh, ok := shift[unit]
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || n <= 0 || n > (1<<62)>>sh {
		return 0, fmt.Errorf("%q is not a memory size (e.g. 4G, 512M, off)", s)
	}
	return n << sh, nil
}

// memTotal is the machine's RAM in bytes (0 when unknown).
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

func orUnknown(s string) string {
	if s == "" {
		return "unavailable"
	}
	return s
}

// Describe is the one-line summary for `agentd doctor`: the strongest mode
// and the protections that are missing.
func (f Features) Describe() string {
	var b strings.Builder
	b.WriteString("sandbox: ")
	if m := f.BestMode(); m == ModeNone {
		b.WriteString("NONE AVAILABLE (commands can only run unsandboxed, each on explicit approval)")
	} else {
		l := f.layers(m)
		if m == ModeBwrap && f.BwrapVersion != "" {
			l = strings.Replace(l, "bubblewrap", "bubblewrap "+f.BwrapVersion, 1)
		}
		b.WriteString(l)
	}
	if f.Arch != "" {
		fmt.Fprintf(&b, "; %s", f.Arch)
	}
	if f.Cgroup.Kill() {
		b.WriteString("; " + f.Cgroup.Mechanism())
		if f.Cgroup.Err != "" {
			fmt.Fprintf(&b, " (%s)", f.Cgroup.Err)
		}
	} else {
		fmt.Fprintf(&b, "; NO per-command cgroup (%s): without bubblewrap, processes that called setsid survive a SIGKILL sent straight to the helper", orUnknown(f.Cgroup.Err))
	}
	if m := f.BestMode(); m != ModeNone {
		fmt.Fprintf(&b, "; per-command limits: %s", f.LimitsSummary(DefaultLimits()))
	}
	if miss := f.Missing(); len(miss) > 0 {
		b.WriteString("; missing: ")
		b.WriteString(strings.Join(miss, "; "))
	} else {
		b.WriteString("; all protections available")
	}
	return b.String()
}

// Summary describes mode m with these features in the words an approval
// prompt shows: "bubblewrap + Landlock ABI 7 + seccomp; network off".
func (f Features) Summary(m Mode, network bool) string {
	if m == ModeNone {
		return "UNSANDBOXED (no confinement; environment scrubbed only)"
	}
	if network {
		return f.layers(m) + "; network ON"
	}
	return f.layers(m) + "; network off"
}

// layers names the layers mode m uses on these features.
func (f Features) layers(m Mode) string {
	var parts []string
	switch m {
	case ModeBwrap:
		parts = append(parts, "bubblewrap")
	case ModeLandlock:
		parts = append(parts, "no bubblewrap")
	}
	if f.LandlockABI >= 1 {
		parts = append(parts, fmt.Sprintf("Landlock ABI %d", min(f.LandlockABI, MaxLandlockABI)))
	} else {
		parts = append(parts, "NO Landlock")
	}
	if f.Seccomp {
		parts = append(parts, "seccomp")
	} else {
		parts = append(parts, "NO seccomp")
	}
	s := strings.Join(parts, " + ")
	if m == ModeLandlock {
		s = strings.Replace(s, "no bubblewrap + ", "", 1) + " (no bubblewrap)"
	}
	return s
}

// Policy is what one command may do. Nil slices take the package defaults
// (DefaultEnvAllow, DefaultSecretPaths); pass an empty
// non-nil slice to have none.
type Policy struct {
	// WorkspaceRoots are writable (absolute; must exist).
	WorkspaceRoots []string
	// WritableDirs are also writable (absolute; must exist): the session tmp
	// dir, build caches the caller chooses to share.
	WritableDirs []string
	// TmpDir, when set, is writable and exported as TMPDIR. In ModeLandlock
	// the host /tmp is not writable, so set it.
	TmpDir string

	// LayerDir is where the commands' copy-on-write layers are made (ModeBwrap;
	// absolute, outside every workspace root, on a file system that can be an
	// overlay's upper layer). "" means "layers" in the state directory (see
	// StateDir). The workspace roots are mounted as overlays whose upper layer
	// is private to the command: it writes there, never to the workspace, and
	// Cmd.Changes reads what it changed.
	LayerDir string

	// Network allows AF_INET/AF_INET6 and shares the host network namespace.
	Network bool
	// PrivateLoopback (ModeBwrap, Network off): allow AF_INET/AF_INET6 inside
	// the command's own empty network namespace, so test servers on
	// 127.0.0.1 work while nothing outside is reachable. Ignored otherwise.
	PrivateLoopback bool
	// UnixSockets opts this command in to Unix sockets, naming the host
	// sockets it needs (absolute paths: "/run/docker.sock"). Empty (the
	// default): socket(AF_UNIX) is denied in every mode, so no host socket
	// (docker.sock, an ssh-agent, a session bus, agentd's own API) is
	// reachable; socketpair(2) stays allowed. Non-empty: socket(AF_UNIX) is
	// allowed and each named socket is made visible in ModeBwrap even where a
	// mount masks its directory. Sockets outside the masked directories are
	// then reachable too: the opt-in is for the command, not for one socket.
	UnixSockets []string

	// Env is the base environment ("K=V"); nil means os.Environ().
	Env []string
	// EnvAllow names the variables kept from Env; a trailing '*' is a prefix
	// match ("LC_*").
	EnvAllow []string
	// SetEnv ("K=V") is applied last, after DefaultSetEnv.
	SetEnv []string

	// Home is $HOME for resolving SecretPaths; "" means HOME from Env.
	Home string
	// SecretPaths are masked (tmpfs for a dir, /dev/null for a file) and made
	// unreadable by Landlock; absolute, or relative to Home.
	SecretPaths []string
	// RuntimeDir ($XDG_RUNTIME_DIR: D-Bus, ssh-agent, Wayland, …) is masked
	// and unreadable; "" means XDG_RUNTIME_DIR from Env.
	RuntimeDir string
	// StateDir is agentd's state directory (every session's journal, tool
	// output, checkpoints, the audit log): masked and unreadable, except
	// TmpDir and WritableDirs below it. "" means $XDG_STATE_HOME/agentd, or
	// $HOME/.local/state/agentd, from Env (the store's default).
	StateDir string
	// ReadableSensitive are workspace files (absolute) the user approved this
	// command reading. Every other file below a workspace root that
	// fsafe.Classify calls sensitive (.env*, keys, …) is masked in ModeBwrap;
	// ModeLandlock cannot mask single files and says so (SensitiveUnmasked).
	ReadableSensitive []string

	// Limits override the Sandbox's limits (Options.Limits) for this
	// command; zero fields keep them.
	Limits Limits

	// Unsandboxed runs the command with ModeNone. Set it only on an explicit
	// per-command user decision.
	Unsandboxed bool
}

// DefaultEnvAllow are the variables a command keeps from the daemon's
// environment. Everything else (tokens, SSH_AUTH_SOCK, DBUS_SESSION_BUS_ADDRESS…)
// is dropped.
var DefaultEnvAllow = []string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ",
	"GOPATH", "GOCACHE", "GOMODCACHE", "GOROOT", "GOTOOLCHAIN", "GOFLAGS",
	"CARGO_HOME", "RUSTUP_HOME", "NPM_CONFIG_CACHE", "PYENV_ROOT", "VIRTUAL_ENV", "JAVA_HOME",
}

// DefaultSetEnv is always set: nothing may prompt or page.
var DefaultSetEnv = []string{"GIT_TERMINAL_PROMPT=0", "PAGER=cat", "GIT_PAGER=cat"}

// DefaultSecretPaths are relative to $HOME.
var DefaultSecretPaths = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub",
	".netrc", ".git-credentials", ".config/git/credentials", ".docker", ".kube",
	".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
	".password-store", ".local/share/keyrings", ".vault-token", ".terraform.d/credentials.tfrc.json",
	".config/agentd", ".agentd",
	// Shell and REPL histories: typed passwords, tokens on command lines.
	".bash_history", ".zsh_history", ".zhistory", ".histfile", ".sh_history",
	".local/share/fish/fish_history", ".python_history", ".node_repl_history",
	".psql_history", ".mysql_history", ".sqlite_history", ".lesshst", ".irb_history",
	".pry_history", ".rediscli_history", ".dbshell", ".viminfo", ".local/state/nvim/shada",
	".ipython/profile_default/history.sqlite",
}

// SensitiveUnmasked starts the part of a ModeLandlock summary that lists the
// sensitive workspace files the command can read because that mode cannot
// mask single files (Sandbox.Describe); an approval policy asks when it sees
// it.
const SensitiveUnmasked = "sensitive files NOT masked"

// NoLayer starts the part of a ModeLandlock summary (and of its gaps) that says the command has
// no copy-on-write layer: it writes the workspace directly, and no change set is reviewed. The
// approval policy asks for every such command, in every mode.
const NoLayer = "NO copy-on-write layer"

// env computes the command's environment: Env filtered by EnvAllow, then
// DefaultSetEnv, SetEnv and TMPDIR.
func (p Policy) env() []string {
	base := p.Env
	if base == nil {
		base = os.Environ()
	}
	allow := p.EnvAllow
	if allow == nil {
		allow = DefaultEnvAllow
	}
	var out []string
	set := func(kv string) {
		k, _, _ := strings.Cut(kv, "=")
		out = slices.DeleteFunc(out, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		out = append(out, kv)
	}
	for _, kv := range base {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if envAllowed(k, allow) {
			set(kv)
		}
	}
	for _, kv := range DefaultSetEnv {
		set(kv)
	}
	for _, kv := range p.SetEnv {
		if strings.Contains(kv, "=") {
			set(kv)
		}
	}
	if p.TmpDir != "" {
		set("TMPDIR=" + p.TmpDir)
	}
	return out
}

func envAllowed(k string, allow []string) bool {
	for _, a := range allow {
		if pre, ok := strings.CutSuffix(a, "*"); ok {
			if strings.HasPrefix(k, pre) {
				return true
			}
		} else if k == a {
			return true
		}
	}
	return false
}

// lookupEnv finds k in an environment list.
func lookupEnv(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v
		}
	}
	return ""
}

// home returns $HOME for the policy.
func (p Policy) home() string {
	if p.Home != "" {
		return p.Home
	}
	base := p.Env
	if base == nil {
		base = os.Environ()
	}
	return lookupEnv(base, "HOME")
}

// runtimeDir returns $XDG_RUNTIME_DIR for the policy.
func (p Policy) runtimeDir() string {
	if p.RuntimeDir != "" {
		return p.RuntimeDir
	}
	base := p.Env
	if base == nil {
		base = os.Environ()
	}
	return lookupEnv(base, "XDG_RUNTIME_DIR")
}

// secretPaths returns the absolute secret paths (plus the runtime dir).
func (p Policy) secretPaths() []string {
	list := p.SecretPaths
	if list == nil {
		list = DefaultSecretPaths
	}
	home := p.home()
	var out []string
	for _, s := range list {
		if !filepath.IsAbs(s) {
			if home == "" || !filepath.IsAbs(home) {
				continue
			}
			s = filepath.Join(home, s)
		}
		out = append(out, filepath.Clean(s))
	}
	if rd := p.runtimeDir(); rd != "" && filepath.IsAbs(rd) {
		out = append(out, filepath.Clean(rd))
	}
	return out
}
