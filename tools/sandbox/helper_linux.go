//go:build linux

package sandbox

import "github.com/agentd/agentd/tools/sandbox/helper"

// helperConfig is what Command tells the helper (package helper), as JSON in argv[2].
type helperConfig = helper.Config

const (
	seccompArchSupported = helper.SeccompArchSupported
	archName             = helper.ArchName
)
