package policy

import (
	"fmt"
	"path"
	"strings"
)

// This file is the read-only allowlist, by argv. A command is read-only only when its program is
// listed here and its checker accepts every argument; everything else is Write, Network or
// Unknown (all of which need review). Checkers err on the side of refusing: an option they cannot
// prove harmless makes the command not read-only.

type argvExtra struct {
	runsProjectCode bool
	// sensitive names what a read-only command reveals that may hold secrets.
	sensitive string
}

// result is a checker's answer.
type result struct {
	class           Class
	reason          string
	runsProjectCode bool
}

func readOnly() result { return result{class: ReadOnly} }

func not(class Class, format string, args ...any) result {
	return result{class: class, reason: fmt.Sprintf(format, args...)}
}

// spec describes a read-only program.
type spec struct {
	// check inspects the arguments (argv[1:]); nil accepts any.
	check func(args []string) result
	// globSafe: no option of the program can write or run anything, so a glob that expands to a
	// file named like an option ("--pre=x", "-delete") is harmless.
	globSafe bool
}

var readOnlySpecs map[string]spec

func init() {
	plain := spec{globSafe: true}
	readOnlySpecs = map[string]spec{}
	for _, name := range []string{
		"ls", "cat", "head", "tail", "wc", "pwd", "echo", "which", "type", "stat", "du", "df",
		"basename", "dirname", "realpath", "readlink", "true", "false", ":", "test", "[",
		"whoami", "id", "groups", "uname", "nproc", "arch", "printenv", "sleep", "cd",
		"grep", "egrep", "fgrep", "cut", "tr", "nl", "tac", "rev", "diff", "cmp", "comm", "join",
		"paste", "fold", "fmt", "expand", "unexpand", "column", "strings", "od", "hexdump",
		"md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum",
		"cksum", "sum", "base64", "seq", "free", "uptime", "locale",
	} {
		readOnlySpecs[name] = plain
	}
	readOnlySpecs["find"] = spec{check: checkFind}
	readOnlySpecs["rg"] = spec{check: checkRg}
	readOnlySpecs["sort"] = spec{check: checkSort}
	readOnlySpecs["uniq"] = spec{check: checkUniq}
	readOnlySpecs["tree"] = spec{check: checkTree}
	readOnlySpecs["file"] = spec{check: checkFile}
	readOnlySpecs["date"] = spec{check: checkDate}
	readOnlySpecs["printf"] = spec{check: checkPrintf}
	readOnlySpecs["env"] = spec{check: checkEnv}
	readOnlySpecs["command"] = spec{check: checkCommand}
	readOnlySpecs["hostname"] = spec{check: noArgs("hostname with arguments can set the host name")}
	readOnlySpecs["jq"] = spec{}
	readOnlySpecs["git"] = spec{check: checkGit}
	readOnlySpecs["go"] = spec{check: checkGo}
	readOnlySpecs["gofmt"] = spec{check: checkGofmt}
	readOnlySpecs["sed"] = spec{check: checkSed}
}

// Programs that are known to change files or processes.
var writePrograms = set("rm", "rmdir", "mv", "cp", "mkdir", "touch", "chmod", "chown", "chgrp",
	"ln", "tee", "dd", "truncate", "install", "shred", "unlink", "patch", "kill", "pkill",
	"killall", "tar", "zip", "unzip", "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "7z",
	"mktemp", "mkfifo", "mknod", "split", "csplit", "mkfs", "mount", "umount", "shutdown",
	"reboot", "poweroff", "halt", "systemctl", "crontab", "useradd", "userdel", "passwd")

// Programs that talk to the network.
var networkPrograms = set("curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat",
	"socat", "telnet", "ftp", "tftp", "lftp", "ping", "ping6", "dig", "nslookup", "host", "whois",
	"traceroute", "tracepath", "http", "https", "aria2c", "mosh")

// Programs that run other commands, scripts or code, or change the shell's state; their argv
// says nothing sound about what happens.
var runnerPrograms = map[string]string{}

func init() {
	for _, n := range []string{"sudo", "doas", "su", "pkexec"} {
		runnerPrograms[n] = "%s runs a command with other privileges"
	}
	for _, n := range []string{"xargs", "nohup", "nice", "ionice", "timeout", "stdbuf", "setsid",
		"chroot", "unshare", "nsenter", "strace", "ltrace", "gdb", "watch", "parallel", "time",
		"builtin", "flock", "script", "expect"} {
		runnerPrograms[n] = "%s runs another command"
	}
	for _, n := range []string{"eval", "source", ".", "exec"} {
		runnerPrograms[n] = "%s runs shell code or replaces the shell"
	}
	for _, n := range []string{"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh",
		"busybox", "python", "python2", "python3", "perl", "ruby", "node", "nodejs", "deno", "bun",
		"php", "lua", "awk", "gawk", "mawk", "nawk", "tclsh", "osascript", "pwsh"} {
		runnerPrograms[n] = "%s runs a script or program"
	}
	for _, n := range []string{"vim", "vi", "nvim", "emacs", "nano", "ed", "ex", "less", "more", "man"} {
		runnerPrograms[n] = "%s is interactive and can run commands"
	}
	for _, n := range []string{"make", "npx", "cargo", "mvn", "gradle", "cmake", "ninja", "bazel",
		"docker", "podman", "kubectl"} {
		runnerPrograms[n] = "%s runs project-defined commands"
	}
	for _, n := range []string{"set", "shopt", "export", "unset", "alias", "unalias", "read",
		"mapfile", "readarray", "hash", "enable", "ulimit", "umask", "trap", "fc", "history",
		"exit", "return", "logout", "wait", "jobs", "fg", "bg", "disown", "pushd", "popd",
		"declare", "typeset", "local", "readonly", "let", "shift", "getopts", "caller", "complete"} {
		runnerPrograms[n] = "%s changes or depends on the shell's state"
	}
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// trustedBinDirs are the directories whose programs are taken for the bare name (/bin/ls is ls).
// Anything else with a slash (./rm, ~/bin/ls, /tmp/ls) is never read-only.
var trustedBinDirs = set("/bin", "/usr/bin")

// classifyArgv classifies one static argv. glob says whether some argument holds unquoted
// pattern characters (the shell may turn it into any file name, option-like names included).
func classifyArgv(argv []string, glob bool) (Class, []string, argvExtra) {
	var extra argvExtra
	if len(argv) == 0 || argv[0] == "" {
		return Unknown, []string{"empty command name"}, extra
	}
	name := argv[0]
	base := name
	byPath := false
	if strings.Contains(name, "/") {
		dir, b := path.Split(name)
		base = b
		if !trustedBinDirs[path.Clean(dir)] {
			byPath = true
		}
	}
	if base == "" {
		return Unknown, []string{fmt.Sprintf("%s is not a program name", name)}, extra
	}
	if byPath {
		// Classify by the base name for the user's information, but never as read-only.
		if networkPrograms[base] {
			return Network, []string{fmt.Sprintf("%s runs a program by path (%s uses the network)", name, base)}, extra
		}
		if writePrograms[base] {
			return Write, []string{fmt.Sprintf("%s runs a program by path (%s changes files)", name, base)}, extra
		}
		return Unknown, []string{fmt.Sprintf("%s runs a program by path, not a known read-only command", name)}, extra
	}
	if sp, ok := readOnlySpecs[base]; ok {
		r := readOnly()
		if sp.check != nil {
			r = sp.check(argv[1:])
		}
		if r.class == ReadOnly && glob && !sp.globSafe {
			return Unknown, []string{fmt.Sprintf("a glob in the arguments of %s may expand to an option", base)}, extra
		}
		if r.class == ReadOnly {
			extra.runsProjectCode = r.runsProjectCode
			if base == "printenv" || base == "env" {
				extra.sensitive = "(environment variables)"
			}
			reason := base + " is read-only"
			if r.reason != "" {
				reason = r.reason
			}
			return ReadOnly, []string{reason}, extra
		}
		return r.class, []string{r.reason}, extra
	}
	if networkPrograms[base] {
		return Network, []string{base + " uses the network"}, extra
	}
	if writePrograms[base] {
		return Write, []string{base + " changes files or processes"}, extra
	}
	if f, ok := runnerPrograms[base]; ok {
		return Unknown, []string{fmt.Sprintf(f, base)}, extra
	}
	switch base {
	case "npm", "pnpm", "yarn", "pip", "pip3", "gem", "composer", "apt", "apt-get", "brew":
		if len(argv) > 1 && set("install", "i", "ci", "add", "update", "upgrade", "publish", "download", "fetch")[argv[1]] {
			return Network, []string{fmt.Sprintf("%s %s downloads or publishes packages", base, argv[1])}, extra
		}
		return Unknown, []string{base + " runs package scripts"}, extra
	}
	return Unknown, []string{base + " is not a known read-only command"}, extra
}

// --- option helpers ---------------------------------------------------------------------------

// shortCluster returns the first single-dash option cluster (before "--") holding any of the
// letters, e.g. "-nro" for 'o'. Negative numbers ("-5") hold no letters.
func shortCluster(args []string, letters string) (string, bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], letters) {
			return a, true
		}
	}
	return "", false
}

// longOption returns the first --name[=value] argument (before "--") whose name is a non-empty
// prefix of one of names. GNU getopt accepts unambiguous abbreviations (--out for --output), so a
// prefix is treated as the option itself.
func longOption(args []string, names ...string) (string, bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "--") || len(a) == 2 {
			continue
		}
		n := a[2:]
		if i := strings.IndexByte(n, '='); i >= 0 {
			n = n[:i]
		}
		if n == "" {
			continue
		}
		for _, want := range names {
			if strings.HasPrefix(want, n) {
				return a, true
			}
		}
	}
	return "", false
}

// operands returns the arguments that are not options (those after "--" included).
func operands(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

func noArgs(reason string) func([]string) result {
	return func(args []string) result {
		if len(args) > 0 {
			return not(Unknown, "%s", reason)
		}
		return readOnly()
	}
}

// --- checkers ---------------------------------------------------------------------------------

// checkFind refuses the actions that run commands, delete or write files: -exec, -execdir, -ok,
// -okdir, -delete, -fls, -fprint, -fprint0, -fprintf (and anything that starts like them).
func checkFind(args []string) result {
	for _, a := range args {
		if a == "-delete" || a == "-fls" || strings.HasPrefix(a, "-fprint") ||
			strings.HasPrefix(a, "-exec") || strings.HasPrefix(a, "-ok") {
			return not(Write, "find %s runs commands, deletes or writes files", a)
		}
	}
	return readOnly()
}

func checkRg(args []string) result {
	if a, ok := longOption(args, "pre", "hostname-bin"); ok {
		return not(Unknown, "rg %s runs a program", a)
	}
	return readOnly()
}

func checkSort(args []string) result {
	if a, ok := longOption(args, "output", "compress-program"); ok {
		return not(Write, "sort %s writes a file or runs a program", a)
	}
	if a, ok := shortCluster(args, "o"); ok {
		return not(Write, "sort %s writes a file", a)
	}
	return readOnly()
}

func checkUniq(args []string) result {
	if ops := operands(args); len(ops) > 1 {
		return not(Write, "uniq with a second operand (%s) writes it", ops[1])
	}
	return readOnly()
}

func checkTree(args []string) result {
	if a, ok := longOption(args, "output"); ok {
		return not(Write, "tree %s writes a file", a)
	}
	if a, ok := shortCluster(args, "oR"); ok {
		return not(Write, "tree %s writes files", a)
	}
	return readOnly()
}

func checkFile(args []string) result {
	if a, ok := longOption(args, "compile"); ok {
		return not(Write, "file %s writes a compiled magic file", a)
	}
	if a, ok := shortCluster(args, "C"); ok {
		return not(Write, "file %s writes a compiled magic file", a)
	}
	return readOnly()
}

func checkDate(args []string) result {
	if a, ok := longOption(args, "set"); ok {
		return not(Write, "date %s sets the clock", a)
	}
	if a, ok := shortCluster(args, "s"); ok {
		return not(Write, "date %s sets the clock", a)
	}
	for _, op := range operands(args) {
		if !strings.HasPrefix(op, "+") {
			return not(Write, "date %s sets the clock", op)
		}
	}
	return readOnly()
}

func checkPrintf(args []string) result {
	if len(args) > 0 && strings.HasPrefix(args[0], "-") {
		return not(Unknown, "printf %s can assign a shell variable", args[0])
	}
	return readOnly()
}

func checkEnv(args []string) result {
	if len(args) > 0 {
		return not(Unknown, "env with arguments runs another command with a changed environment")
	}
	return readOnly()
}

func checkCommand(args []string) result {
	if len(args) >= 1 && (args[0] == "-v" || args[0] == "-V") {
		return readOnly()
	}
	return not(Unknown, "command runs another command")
}

func checkSed(args []string) result {
	if a, ok := longOption(args, "in-place"); ok {
		return not(Write, "sed %s edits files in place", a)
	}
	if a, ok := shortCluster(args, "i"); ok {
		return not(Write, "sed %s edits files in place", a)
	}
	return not(Unknown, "sed scripts can write files (w) or run commands (e)")
}

// --- git --------------------------------------------------------------------------------------

var gitWriters = set("add", "commit", "checkout", "switch", "reset", "restore", "merge", "rebase",
	"stash", "tag", "rm", "mv", "clean", "cherry-pick", "revert", "apply", "am", "init", "config",
	"gc", "worktree", "notes", "remote", "prune", "update-index", "update-ref", "bisect",
	"filter-branch", "replace", "reflog", "archive", "format-patch", "maintenance", "sparse-checkout",
	"mergetool", "difftool", "commit-tree", "hash-object", "read-tree", "write-tree", "symbolic-ref")

var gitNetwork = set("clone", "fetch", "pull", "push", "ls-remote", "submodule", "send-email", "request-pull")

func checkGit(args []string) result {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		switch args[i] {
		case "--no-pager":
			i++
			continue
		case "--version", "--help":
			if i == len(args)-1 {
				return readOnly()
			}
		}
		// -c, --config-env, -C, --git-dir, --work-tree, --exec-path, -p/--paginate, ...
		return not(Unknown, "git option %s changes what git reads or runs", args[i])
	}
	if i == len(args) {
		return readOnly()
	}
	sub, rest := args[i], args[i+1:]
	switch sub {
	case "status", "rev-parse", "ls-files", "blame", "shortlog", "describe", "cat-file", "ls-tree",
		"merge-base", "name-rev", "whatchanged", "count-objects", "check-ignore", "var":
		return readOnly()
	case "diff", "log", "show":
		if a, ok := longOption(rest, "output", "ext-diff"); ok {
			return not(Write, "git %s %s writes a file or runs an external diff program", sub, a)
		}
		return readOnly()
	case "grep":
		if a, ok := longOption(rest, "open-files-in-pager", "ext-grep"); ok {
			return not(Unknown, "git grep %s runs a pager", a)
		}
		if a, ok := shortCluster(rest, "O"); ok {
			return not(Unknown, "git grep %s runs a pager", a)
		}
		return readOnly()
	case "branch":
		return checkGitBranch(rest)
	}
	if gitNetwork[sub] {
		return not(Network, "git %s uses the network", sub)
	}
	if gitWriters[sub] {
		return not(Write, "git %s changes the repository", sub)
	}
	return not(Unknown, "git %s is not a known read-only git command (it may be an alias)", sub)
}

var gitBranchListFlags = set("--list", "-l", "-a", "--all", "-r", "--remotes", "-v", "-vv",
	"--verbose", "--show-current", "--no-color", "--color", "--no-column", "--column", "-i",
	"--ignore-case", "--omit-empty")

var gitBranchListValueFlags = []string{"--sort=", "--format=", "--contains=", "--no-contains=",
	"--merged=", "--no-merged=", "--points-at=", "--color=", "--column=", "--abbrev="}

// checkGitBranch accepts only the listing forms of git branch: listing flags, and patterns when
// --list is given. Anything else can create, delete, rename or configure branches.
func checkGitBranch(args []string) result {
	list := false
	for _, a := range args {
		if a == "--list" || a == "-l" {
			list = true
		}
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			if list {
				continue // a pattern
			}
			return not(Write, "git branch %s creates a branch", a)
		}
		if gitBranchListFlags[a] {
			continue
		}
		ok := false
		for _, p := range gitBranchListValueFlags {
			if strings.HasPrefix(a, p) {
				ok = true
			}
		}
		if !ok {
			return not(Write, "git branch %s may change branches", a)
		}
	}
	return readOnly()
}

// --- go ---------------------------------------------------------------------------------------

// goFlag splits a Go-style flag (-name, --name, -name=value).
func goFlag(a string) (name, value string, hasValue, ok bool) {
	if len(a) < 2 || a[0] != '-' || a == "--" {
		return "", "", false, false
	}
	n := strings.TrimPrefix(a[1:], "-")
	if i := strings.IndexByte(n, '='); i >= 0 {
		return n[:i], n[i+1:], true, true
	}
	return n, "", false, true
}

// goBadFlags run programs, write files outside the build cache or change go.mod.
var goBadFlags = map[string]string{
	"exec": "runs the test binary through a program", "toolexec": "runs the toolchain through a program",
	"vettool": "runs a vet program", "c": "writes a test binary", "o": "writes an output file",
	"ldflags": "passes linker flags (-extld runs a program)", "gcflags": "passes compiler flags",
	"asmflags": "passes assembler flags", "gccgoflags": "passes gccgo flags",
	"compiler": "selects another compiler", "pkgdir": "writes packages to a directory",
	"buildmode": "can write archives or libraries", "i": "installs packages",
	"coverprofile": "writes a profile", "cpuprofile": "writes a profile", "memprofile": "writes a profile",
	"blockprofile": "writes a profile", "mutexprofile": "writes a profile", "trace": "writes a trace",
	"outputdir": "writes files to a directory", "fuzz": "writes to the fuzz corpus",
	"args": "passes the remaining arguments to the test binary",
}

var goTestFlags = set("run", "skip", "v", "count", "race", "msan", "asan", "short", "timeout",
	"bench", "benchtime", "benchmem", "cpu", "parallel", "failfast", "list", "shuffle", "cover",
	"covermode", "coverpkg", "json", "tags", "p", "vet", "x", "n", "a", "mod", "trimpath",
	"buildvcs", "work", "C", "modcacherw", "fullpath")

func checkGo(args []string) result {
	if len(args) == 0 {
		return readOnly()
	}
	sub, rest := args[0], args[1:]
	if strings.HasPrefix(sub, "-") {
		return not(Unknown, "go flag %s before the subcommand is not analysed", sub)
	}
	switch sub {
	case "version", "help", "doc":
		return readOnly()
	case "env":
		for _, a := range rest {
			if n, _, _, ok := goFlag(a); ok && (n == "w" || n == "u") {
				return not(Write, "go env %s changes the Go configuration", a)
			}
		}
		return readOnly()
	case "vet", "list":
		if r, bad := goFlagsBad(sub, rest, false); bad {
			return r
		}
		return readOnly()
	case "build":
		if r, bad := goFlagsBad(sub, rest, true); bad {
			return r
		}
		devNull, multi := false, false
		for i := 0; i < len(rest); i++ {
			n, v, has, ok := goFlag(rest[i])
			if ok && n == "o" {
				if !has && i+1 < len(rest) {
					v = rest[i+1]
					i++
				}
				devNull = v == "/dev/null"
				continue
			}
			if !ok && strings.Contains(rest[i], "...") {
				multi = true
			}
		}
		if !devNull && !multi {
			return not(Write, "go build of a single main package writes an executable (use -o /dev/null or ./...)")
		}
		return result{class: ReadOnly, reason: "go build writes only the build cache (confined by the sandbox)"}
	case "test":
		if r, bad := goFlagsBad(sub, rest, false); bad {
			return r
		}
		for _, a := range rest {
			n, _, _, ok := goFlag(a)
			if !ok {
				continue
			}
			if !goTestFlags[strings.TrimPrefix(n, "test.")] {
				return not(Unknown, "go test flag %s is not known (the test binary may write files with it)", a)
			}
		}
		return result{class: ReadOnly, reason: "go test runs the project's tests inside the sandbox", runsProjectCode: true}
	case "mod":
		if len(rest) > 0 {
			switch rest[0] {
			case "graph", "why", "verify":
				return readOnly()
			case "download":
				return not(Network, "go mod download uses the network")
			}
		}
		return not(Write, "go mod changes go.mod or the module cache")
	case "get", "install":
		return not(Network, "go %s downloads modules", sub)
	case "run", "generate", "tool":
		return not(Unknown, "go %s runs programs", sub)
	case "fmt", "fix", "work", "clean":
		return not(Write, "go %s changes files", sub)
	}
	return not(Unknown, "go %s is not a known read-only go command", sub)
}

// goFlagsBad reports a flag that runs a program or writes outside the build cache. -o is allowed
// only for build and only as -o /dev/null; -mod only as -mod=readonly or -mod=vendor.
func goFlagsBad(sub string, args []string, build bool) (result, bool) {
	for i, a := range args {
		n, v, has, ok := goFlag(a)
		if !ok {
			continue
		}
		n = strings.TrimPrefix(n, "test.")
		switch n {
		case "json":
			continue
		case "o":
			if build {
				if !has && i+1 < len(args) {
					v = args[i+1]
				}
				if v == "/dev/null" {
					continue
				}
			}
		case "mod":
			if has && (v == "readonly" || v == "vendor") {
				continue
			}
			return not(Write, "go %s %s may change go.mod", sub, a), true
		}
		if why, bad := goBadFlags[n]; bad {
			return not(Write, "go %s %s %s", sub, a, why), true
		}
	}
	return result{}, false
}

func checkGofmt(args []string) result {
	for _, a := range args {
		if n, _, _, ok := goFlag(a); ok && (n == "w" || n == "cpuprofile") {
			return not(Write, "gofmt %s writes files", a)
		}
	}
	return readOnly()
}
