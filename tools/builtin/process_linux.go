//go:build linux

package builtin

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExit blocks until the process pid has exited, without reaping it: while it is a zombie
// its pid — the id of its process group — cannot be reused, so the group can still be killed
// safely. It returns false when it could not wait (the caller then reaps first).
func waitExit(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}

// signalName is the signal's name, "SIGKILL".
func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(s))
}
