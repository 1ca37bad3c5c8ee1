//go:build linux && !amd64 && !arm64

package helper

import (
	"errors"
	"runtime"
)

// No hand-written filter for this architecture: Detect reports seccomp as
// missing, so the mode choice and Gaps say so.
const SeccompArchSupported = false

const ArchName = runtime.GOARCH

type FilterSpec struct {
	Inet     bool
	DenyUnix bool
}

func InstallSeccomp(FilterSpec) error {
	return errors.New("seccomp: no filter for architecture " + runtime.GOARCH)
}
