// Command agentd-sandbox is agentd's in-sandbox helper on its own: it applies Landlock and the
// seccomp filter, then runs the command (see tools/sandbox). agentd uses it when it sits next to
// the agentd binary, because it starts much faster than agentd itself (it has none of agentd's
// package initialisation); without it, agentd runs its own helper mode. It is also the go
// command's cache program inside the sandbox (GOCACHEPROG, see tools/gocache).
package main

import (
	"fmt"
	"os"

	"github.com/agentd/agentd/tools/sandbox"
)

func main() {
	sandbox.HelperMain() // exits when argv[1] is the helper word
	fmt.Fprintf(os.Stderr, "agentd-sandbox is started by agentd, not by hand (usage: %s %s CONFIG -- ARGV...)\n", os.Args[0], sandbox.HelperArg)
	os.Exit(2)
}
