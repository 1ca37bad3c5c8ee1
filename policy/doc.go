// Package policy is the harness-side approval policy of agentd: approval modes, command
// classification by real shell parsing, rules, session grants, approval bindings and the user and
// workspace configuration. The kernel (package agent) never imports it: the daemon or the CLI
// wraps Policy.Decide into the kernel's gate function.
//
// Parsing is for classification and display; the boundary is the kernel (the sandbox). The
// classifier only ever errs towards asking.
//
// # Modes
//
//	ask        reads free; edits and commands ask (allow rules and grants still allow)
//	auto-edit  edits apply without asking (revertible); read-only commands run in the sandbox;
//	           other commands ask
//	plan       no writes (denied); read-only commands run in the sandbox; other commands denied
//	yolo       everything allowed, except what always asks (below)
//
// In every mode: a forbid rule denies (nothing overrides it); protected paths, sensitive reads,
// unparsable commands, a machine without a sandbox (no Landlock), running unsandboxed and network
// access ask, and no grant covers them; ask rules ask unless a command grant at least as specific
// covers the command. Strictness, for workspace tightening: plan > ask > auto-edit > yolo.
//
// Decisions that follow from these rules and are worth knowing: in ask mode a command allowed by
// an allow rule runs, and so do read-only commands listed with it (npm test && ls); in yolo mode
// a command classified Network (curl) is allowed because it runs in the sandbox, where the
// network is off — asking for network access (Request.Network) is what asks; plan mode allows
// go test (read-only in the sandbox, see below) and asks, rather than denies, for a read-only
// command that cannot be sandboxed.
//
// # Classification
//
// Classify parses the command with mvdan.cc/sh/v3/syntax as bash (the bash tool runs bash -c)
// and looks at every simple command, including those inside command substitutions and compound
// commands. A command is ReadOnly only when every simple command's program is on the read-only
// allowlist (ls, cat, head, tail, wc, grep, rg without --pre, find without -exec/-delete/-fprint…,
// git status/diff/log/show/branch --list/rev-parse without --output/--ext-diff or global options,
// go vet/test/build/list/version/env without -exec/-toolexec/-o…, sort/uniq without an output
// file, echo, pwd, stat, …) with arguments its checker accepts, and nothing else can write:
//
//   - lists, pipelines, blocks { } and subshells ( ) are read-only only if every part is; each
//     newline-separated command is its own statement and is classified (a newline never hides
//     anything);
//   - redirections ask, except output to /dev/null (2>/dev/null, &>/dev/null), duplicating or
//     closing numbered descriptors (2>&1, >&-), and input from a regular file; /dev/tcp and
//     /dev/udp targets are Network;
//   - here-documents, here-strings, command and process substitution, parameter and arithmetic
//     expansion, ANSI-C quoting, variable assignments (PAGER=…, LD_PRELOAD=…), functions, loops,
//     conditionals, background jobs and a non-literal program name are Unknown;
//   - quotes and backslashes are removed exactly as bash does: 'l'"s" is ls and \rm is rm;
//   - a program given by path is never read-only, except in /bin and /usr/bin (/bin/ls is ls;
//     ./ls and /tmp/ls are not);
//   - unquoted globs and brace expansions are allowed only in the arguments of programs none of
//     whose options can write or run anything (ls *.go is read-only; rg x * is not, since a file
//     named --pre=sh would become an option);
//   - wrappers (sudo, env CMD, xargs, nohup, timeout, nice, bash -c, sh -c, eval, exec, source,
//     .) are Unknown: the wrapped command is not classified;
//   - go test and go build are read-only inside the sandbox: they write the build cache, which the
//     sandbox confines; go test also runs the project's tests (RunsProjectCode is set). go build
//     is read-only only with -o /dev/null or a ./... pattern, since building one main package
//     writes an executable; go test accepts only known test flags (not -update, -args);
//   - input that does not parse, is not UTF-8, holds control characters or is longer than 64 KiB
//     is Unknown with ParseError set, and is never allowed.
//
// TestArgvMatchesBash runs every read-only command of the test table, and a set of quoting
// tricks, through the real bash with logging stubs on PATH and checks that bash runs exactly the
// argv the classifier saw.
//
// Arguments that look like secrets (.env, id_rsa, .netrc, *.pem, ~/.ssh/…, /proc/*/environ) and
// commands that print the environment (env, printenv) set Sensitive, and
// arguments or write targets of non-read-only commands that look like protected paths (.git,
// .agentd, .vscode, .idea, .envrc, shell rc files, .mcp.json…) set Protected; both ask in every
// mode. This is best effort: the sandbox masks secrets and write-protects those paths.
//
// # Rule and config file format
//
// Rule files and config files share one line format, meant to be edited by hand. Blank lines and
// lines starting with # are ignored; each other line is a keyword and its value:
//
//	# ~/.config/agentd/config
//	mode auto-edit              # default approval mode: ask, auto-edit, plan or yolo
//	defaults on                 # off drops the built-in rules (user config only)
//	protect  secrets            # extra write-protected path pattern (components, path.Match globs)
//	sensitive "*.tfstate"       # extra sensitive path pattern
//
//	allow npm test              # ACTION PREFIX: the prefix is shell words, quoted as in the shell
//	    example npm test
//	    example npm test -- --watch=false
//	    not     npm install
//	    reason  the test suite runs in the sandbox
//	ask git push
//	    example git push origin main
//	forbid rm -rf /
//	    example rm -rf /
//
// A rule line starts a rule; the example, not and reason lines after it belong to it
// (indentation is only for the reader). Every example must parse and contain a command the
// prefix matches, and no "not" example may; this is checked when the file loads, and a failing
// example is a load error naming the file, line and rule. A pattern starting with / is anchored
// at the root; otherwise it matches anywhere in a path (case-folded).
//
// Where the files live (see Locations and Load):
//
//	$XDG_CONFIG_HOME/agentd/config             user config (mode, rules, patterns)
//	$XDG_STATE_HOME/agentd/trusted-workspaces  trusted workspaces, one canonical path per line
//	<workspace>/.agentd/config                 workspace config, read only when trusted
//
// The workspace config is read only when the workspace is in the trust list (kept outside any
// workspace), through os.Root (no symlink escapes; regular files only), and can only tighten: a
// stricter mode, ask and forbid rules and extra patterns apply; allow rules, a looser mode and
// "defaults off" are ignored with a warning in Config.Warnings. An untrusted workspace's config is
// not read at all. agentd's config and state directories are always write-protected.
//
// # Grants
//
// Grants are "allow for this session", by tool, by command prefix (parsed tokens, exact program
// name) or by canonical path prefix (whole components). A command list is covered only when every
// command in it is read-only or covered. After adding a grant, Policy.Settles tells which pending
// reviews are now allowed.
//
// # Bindings
//
// An approval binds to the exact action through the tool's preview (tools.Preview.Binding:
// canonical path and content hashes, or argv, cwd, sandbox and network); each tool checks it next
// to its write, right before it acts, and answers stale when it no longer holds.
package policy
