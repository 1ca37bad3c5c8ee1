//go:build !linux

package helper

import (
	"fmt"
	"os"
)

// Main refuses helper mode on this OS.
func Main() {
	if len(os.Args) >= 2 && (os.Args[1] == Arg || os.Args[1] == LayerArg) {
		fmt.Fprintln(os.Stderr, "agentd sandbox: helper mode needs Linux")
		os.Exit(ExitFailed)
	}
}
