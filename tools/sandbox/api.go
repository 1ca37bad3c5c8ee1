package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HelperArg is the reserved argv[1] that switches the agentd binary (and this
// package's test binary) into helper mode; see HelperMain.
const HelperArg = "__sandbox-exec"

// ExitHelperFailed is the exit status of the helper when it could not set up
// the sandbox (bad policy, Landlock or seccomp refused, command not found). A
// command killed by signal N exits 128+N in every mode (bubblewrap and the
// helper's supervisor both report it that way, like a shell).
const ExitHelperFailed = 125

// MaxLandlockABI is the highest Landlock ABI the helper uses (the one the
// rules were written and tested against). Lower kernel ABIs are used as they
// are; the missing rights are reported by Features.Missing.
const MaxLandlockABI = 7

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

// Errors returned by New and Sandbox.Command.
var (
	// ErrUnavailable: no sandbox mode works on this machine (or the forced
	// mode does not), and the command was not explicitly allowed to run
	// unsandboxed.
	ErrUnavailable = errors.New("sandbox unavailable")
	// ErrPolicy: the policy is malformed (relative path, missing root, …).
	ErrPolicy = errors.New("invalid sandbox policy")
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
	// Reported for the bash tool; the sandbox does not use cgroups itself.
	CgroupV2   bool
	CgroupKill bool
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
		out = append(out, fmt.Sprintf("bubblewrap (%s): protected paths (.git/hooks, .vscode, …) stay writable, "+
			"$HOME secrets and /tmp are not masked, no PID or network namespace", why))
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
	if f.CgroupKill {
		b.WriteString("; cgroup v2 with cgroup.kill")
	} else if f.CgroupV2 {
		b.WriteString("; cgroup v2")
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
// (DefaultProtectedPaths, DefaultEnvAllow, DefaultSecretPaths); pass an empty
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

	// ProtectedPaths are relative to each workspace root (".git/hooks",
	// ".vscode"): bound read-only in ModeBwrap; a missing one gets a
	// read-only empty placeholder so the command cannot create it. Not
	// enforceable in ModeLandlock (reported in Cmd.Gaps).
	ProtectedPaths []string

	// Network allows AF_INET/AF_INET6 and shares the host network namespace.
	Network bool
	// PrivateLoopback (ModeBwrap, Network off): allow AF_INET/AF_INET6 inside
	// the command's own empty network namespace, so test servers on
	// 127.0.0.1 work while nothing outside is reachable. Ignored otherwise.
	PrivateLoopback bool
	// DenyUnixSockets denies socket(AF_UNIX) in ModeBwrap too (always denied
	// in ModeLandlock).
	DenyUnixSockets bool

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

	// Unsandboxed runs the command with ModeNone. Set it only on an explicit
	// per-command user decision.
	Unsandboxed bool
}

// DefaultProtectedPaths are the workspace paths that configure or execute
// code outside the sandbox later (git hooks, editor tasks, agentd's own
// workspace config, direnv, MCP servers).
var DefaultProtectedPaths = []string{
	".git/hooks", ".git/config", ".gitmodules",
	".agentd", ".vscode", ".idea", ".nvim.lua", ".nvimrc", ".exrc",
	".envrc", ".mcp.json",
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
}

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

// protectedPaths returns the validated protected relative paths.
func (p Policy) protectedPaths() ([]string, error) {
	list := p.ProtectedPaths
	if list == nil {
		list = DefaultProtectedPaths
	}
	var out []string
	for _, r := range list {
		c := filepath.Clean(r)
		if r == "" || filepath.IsAbs(r) || c == "." || c == ".." || strings.HasPrefix(c, "../") || strings.ContainsRune(r, 0) {
			return nil, fmt.Errorf("%w: protected path %q must be relative and inside the workspace", ErrPolicy, r)
		}
		out = append(out, c)
	}
	return out, nil
}
