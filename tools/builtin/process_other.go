//go:build !linux

package builtin

import (
	"strconv"
	"syscall"
)

// waitExit cannot wait without reaping here: the caller reaps first and kills the group after.
func waitExit(int) bool { return false }

// signalName is the signal's name, "SIGKILL".
func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGABRT: "SIGABRT", syscall.SIGKILL: "SIGKILL", syscall.SIGSEGV: "SIGSEGV", syscall.SIGPIPE: "SIGPIPE",
		syscall.SIGTERM: "SIGTERM"}
	if n, ok := names[s]; ok {
		return n
	}
	return "signal " + strconv.Itoa(int(s))
}
