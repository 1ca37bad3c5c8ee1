//go:build linux && arm64

package helper

import "golang.org/x/sys/unix"

// nativeAuditArch is the only seccomp_data.arch value allowed through; AArch32
// compat syscalls report AUDIT_ARCH_ARM and are killed.
const nativeAuditArch = unix.AUDIT_ARCH_AARCH64

// x32SyscallBit is x86-64 only.
const x32SyscallBit = 0

// archDenied are architecture-specific syscalls denied in addition to commonDenied.
var archDenied = []uint32{}

const ArchName = "aarch64"

// archModeArg are this architecture's chmod-family syscalls beyond the common ones (none: arm64
// has only fchmod, fchmodat and fchmodat2).
var archModeArg = map[uint32]uint32{}
