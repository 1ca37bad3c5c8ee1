// Command agentd-sandbox is agentd's in-sandbox helper on its own: it applies Landlock and the
// seccomp filter, then runs the command (see tools/sandbox and tools/sandbox/helper). agentd
// uses it when it sits next to the agentd binary, because it starts much faster than agentd
// itself: it links only the helper package (no JSON Schema library, no package whose
// initialisation costs time); without it, agentd runs its own helper mode. It is also the go
// command's cache program inside the sandbox (GOCACHEPROG, see tools/gocache).
package main

import (
	"fmt"
	"os"

	"github.com/agentd/agentd/tools/sandbox/helper"
)

func main() {
	helper.Main() // exits when argv[1] is the helper word (or gocache's)
	fmt.Fprintf(os.Stderr, "agentd-sandbox is started by agentd, not by hand (usage: %s %s CONFIG -- ARGV...)\n", os.Args[0], helper.Arg)
	os.Exit(2)
}
