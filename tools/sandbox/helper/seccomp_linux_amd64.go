//go:build linux && amd64

package helper

import "golang.org/x/sys/unix"

// nativeAuditArch is the only seccomp_data.arch value allowed through; i386
// (`int 0x80`, sysenter from 32-bit code) reports AUDIT_ARCH_I386 and is killed.
const nativeAuditArch = unix.AUDIT_ARCH_X86_64

// x32SyscallBit marks x32-ABI syscall numbers, which also report
// AUDIT_ARCH_X86_64; any number at or above it is killed.
const x32SyscallBit = 0x40000000

// archDenied are x86-only syscalls denied in addition to commonDenied.
var archDenied = []uint32{unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_USELIB}

const ArchName = "x86_64"

// archModeArg are this architecture's chmod-family syscalls beyond the common ones, with the
// offset of their mode argument.
var archModeArg = map[uint32]uint32{unix.SYS_CHMOD: offArg1}
