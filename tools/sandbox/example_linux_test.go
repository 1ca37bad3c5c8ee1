//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/agentd/agentd/tools/sandbox"
)

// The agentd binary's main starts with:
//
//	func main() {
//		sandbox.HelperMain() // never returns in helper mode
//		...
//	}
//
// The bash tool then wraps every command like this (compiled, not run).
func ExampleSandbox_Command() {
	sb, err := sandbox.New(sandbox.Options{}) // Detect once, at daemon start
	if err != nil {
		panic(err)
	}
	fmt.Println(sb.Features().Describe()) // for `agentd doctor`

	p := sandbox.Policy{
		WorkspaceRoots: []string{"/home/u/project"},
		TmpDir:         "/home/u/.cache/agentd/session-1234/tmp",
		Network:        false, // true only for an approved command
	}
	fmt.Println(sb.Describe(p)) // the approval prompt's sandbox line

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := sb.Command(ctx, p, []string{"bash", "-c", "go test ./..."}, "/home/u/project")
	if errors.Is(err, sandbox.ErrUnavailable) {
		// No sandbox on this machine: the policy must ask, and rerun with
		// p.Unsandboxed = true only on the user's explicit decision.
		return
	}
	if err != nil {
		panic(err)
	}
	defer c.Release() // after Wait: sweeps the group, removes placeholders
	_ = c.Gaps        // protections not in force: show them, let the policy decide

	var out bytes.Buffer
	c.Stdin = nil // /dev/null
	c.Stdout, c.Stderr = &out, &out
	// Timeout: TERM the whole group, then KILL after a grace period.
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGTERM) }
	c.WaitDelay = 5 * time.Second // then exec SIGKILLs c.Process; Release sweeps the group
	err = c.Run()                 // Cmd.Run / Cmd.Start, not c.Cmd.Start
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) && ee.ExitCode() == sandbox.ExitHelperFailed {
		fmt.Println("the sandbox could not be set up:", out.String())
	}
}
