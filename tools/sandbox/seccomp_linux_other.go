//go:build linux && !amd64 && !arm64

package sandbox

import (
	"errors"
	"runtime"
)

// No hand-written filter for this architecture: Detect reports seccomp as
// missing, so the mode choice and Gaps say so.
const seccompArchSupported = false

const archName = runtime.GOARCH

type filterSpec struct {
	Inet     bool
	DenyUnix bool
}

func installSeccomp(filterSpec) error {
	return errors.New("seccomp: no filter for architecture " + runtime.GOARCH)
}
