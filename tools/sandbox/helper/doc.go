// Package helper is the sandbox helper: the process that, inside bubblewrap (or on its own in
// the Landlock mode), drops capabilities, sets no_new_privs, applies Landlock and the seccomp
// filter, and then runs the command as its child subreaper. Package sandbox builds its
// configuration and starts it; see the sandbox package documentation for the layers.
//
// It is a package of its own, importing nothing of agentd but tools/gocache, so that the
// dedicated helper binary (cmd/agentd-sandbox), which starts once per command, links no
// package whose initialisation costs time (the JSON Schema library's init alone took 6 ms a
// process).
package helper

// Arg is the reserved argv[1] that switches a binary whose main calls Main (agentd,
// agentd-sandbox, the sandbox package's test binary) into helper mode.
const Arg = "__sandbox-exec"

// ExitFailed is the exit status of the helper when it could not set up the sandbox (bad
// policy, Landlock or seccomp refused, command not found). A command killed by signal N exits
// 128+N in every mode (bubblewrap and the helper's supervisor both report it that way, like a
// shell).
const ExitFailed = 125

// MaxLandlockABI is the highest Landlock ABI the helper uses (the one the rules were written
// and tested against). Lower kernel ABIs are used as they are; the missing rights are
// reported by sandbox.Features.Missing.
const MaxLandlockABI = 7

// LayerArg is the reserved argv[1] of the helper's first stage in bubblewrap mode: started by
// the daemon in a new user and mount namespace, it mounts each workspace root's copy-on-write
// layer (overlayfs) over the root and then executes bubblewrap (see LayerMain).
const LayerArg = "__sandbox-layer"
