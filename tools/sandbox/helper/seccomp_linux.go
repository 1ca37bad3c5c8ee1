//go:build linux && (amd64 || arm64)

package helper

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter is written by hand as classic BPF. Its shape:
//
//  1. Load seccomp_data.arch. Anything but the native architecture is killed
//     (SECCOMP_RET_KILL_PROCESS): on x86-64 this catches `int 0x80` (i386 ABI),
//     which would otherwise reach the i386 syscall table with different numbers
//     and bypass every number-based rule below.
//  2. Load seccomp_data.nr. On x86-64, numbers with the x32 bit (0x40000000) are
//     killed too: x32 syscalls report AUDIT_ARCH_X86_64 but use another table.
//  3. A deny list of syscall numbers returns EPERM (clone3 returns ENOSYS so that
//     libc falls back to clone, whose flags we can inspect).
//  4. Some syscalls are checked on their arguments: socket (address family),
//     clone (namespace flags), ioctl (TIOCSTI/TIOCLINUX terminal injection, inode
//     flags) and the chmod family (the setuid and setgid bits).
//  5. Everything else is allowed.
//
// Arguments are 64 bits wide in seccomp_data; the values we compare (int domain,
// unsigned int ioctl request, the low 32 bits of clone flags, which is all that
// clone(2) looks at) fit in the low word, which sits first on little-endian
// machines (both supported architectures are little-endian).

// seccomp_data offsets.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
	offArg2 = 32
)

// setIDBits are S_ISUID|S_ISGID: a command may change ordinary permission bits of the files it
// owns (builds, git and tar do), never make a file run as its owner or group. In Landlock-only
// mode, where Landlock does not cover metadata, this keeps a command from planting a setuid
// binary anywhere the user owns (as root: any root-owned file).
const setIDBits = unix.S_ISUID | unix.S_ISGID

// modeArg maps each chmod-family syscall of this architecture to the seccomp_data offset of its
// mode argument.
var modeArg = func() map[uint32]uint32 {
	m := map[uint32]uint32{unix.SYS_FCHMOD: offArg1, unix.SYS_FCHMODAT: offArg2, unix.SYS_FCHMODAT2: offArg2}
	for nr, off := range archModeArg {
		m[nr] = off
	}
	return m
}()

// fsFlagIoctls change inode flags (immutable, append-only, no-dump, project ids): no command
// needs them, and Landlock does not cover them.
var fsFlagIoctls = []uint32{unix.FS_IOC_SETFLAGS, fsIOC32SetFlags, fsIOCFSSetXattr}

const (
	fsIOC32SetFlags = 0x40046602 // FS_IOC32_SETFLAGS, _IOW('f', 2, int)
	fsIOCFSSetXattr = 0x401c5820 // FS_IOC_FSSETXATTR, _IOW('X', 32, struct fsxattr)
)

// cloneNamespaceFlags are CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET.
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// commonDenied are denied (EPERM) on every supported architecture. Each entry is
// either a way around the other layers or kernel attack surface no build needs.
var commonDenied = []uint32{
	// Reading or writing other processes' memory, stealing their fds.
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_PIDFD_GETFD, unix.SYS_PROCESS_MADVISE,
	// io_uring performs I/O outside the syscall path seccomp sees (and has a
	// long CVE record).
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	// Kernel attack surface.
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_REBOOT,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT, unix.SYS_SYSLOG,
	unix.SYS_VHANGUP, unix.SYS_QUOTACTL, unix.SYS_NFSSERVCTL,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_LOOKUP_DCOOKIE,
	// Changing the mount table or namespaces would undo the bubblewrap view.
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR, unix.SYS_MOVE_MOUNT,
	unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_MOUNT_SETATTR,
}

// FilterSpec selects the variable parts of the filter.
type FilterSpec struct {
	// Inet allows socket(AF_INET/AF_INET6). Off when the network is off.
	Inet bool
	// DenyUnix denies socket(AF_UNIX) (socketpair stays allowed: it cannot
	// reach anything outside).
	DenyUnix bool
}

// bpf assembler with forward labels.
type bpfInsn struct {
	f      unix.SockFilter
	jt, jf string // label names; "" = the next instruction
}

type bpfAsm struct {
	ins    []bpfInsn
	labels map[string]int
}

func (a *bpfAsm) ld(off uint32) {
	a.ins = append(a.ins, bpfInsn{f: unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}})
}

func (a *bpfAsm) jmp(op uint16, k uint32, jt, jf string) {
	a.ins = append(a.ins, bpfInsn{f: unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k}, jt: jt, jf: jf})
}

func (a *bpfAsm) ret(k uint32) {
	a.ins = append(a.ins, bpfInsn{f: unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k}})
}

func (a *bpfAsm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.ins)
}

func (a *bpfAsm) assemble() ([]unix.SockFilter, error) {
	out := make([]unix.SockFilter, len(a.ins))
	off := func(i int, l string) (uint8, error) {
		if l == "" {
			return 0, nil
		}
		t, ok := a.labels[l]
		if !ok {
			return 0, fmt.Errorf("bpf: undefined label %q", l)
		}
		d := t - i - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("bpf: jump %d→%s out of range", i, l)
		}
		return uint8(d), nil
	}
	for i, in := range a.ins {
		f := in.f
		var err error
		if f.Jt, err = off(i, in.jt); err != nil {
			return nil, err
		}
		if f.Jf, err = off(i, in.jf); err != nil {
			return nil, err
		}
		out[i] = f
	}
	if len(out) > unix.BPF_MAXINSNS {
		return nil, errors.New("bpf: program too long")
	}
	return out, nil
}

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM  = unix.SECCOMP_RET_ERRNO | (uint32(unix.EPERM) & unix.SECCOMP_RET_DATA)
	retENOSYS = unix.SECCOMP_RET_ERRNO | (uint32(unix.ENOSYS) & unix.SECCOMP_RET_DATA)
)

// BuildFilter returns the BPF program for spec on the running architecture.
func BuildFilter(spec FilterSpec) ([]unix.SockFilter, error) {
	var a bpfAsm
	a.ld(offArch)
	a.jmp(unix.BPF_JEQ, nativeAuditArch, "", "kill")
	a.ld(offNr)
	if x32SyscallBit != 0 {
		a.jmp(unix.BPF_JGE, x32SyscallBit, "kill", "")
	}
	for _, nr := range commonDenied {
		a.jmp(unix.BPF_JEQ, nr, "eperm", "")
	}
	for _, nr := range archDenied {
		a.jmp(unix.BPF_JEQ, nr, "eperm", "")
	}
	a.jmp(unix.BPF_JEQ, unix.SYS_CLONE3, "enosys", "")
	for _, nr := range slices.Sorted(maps.Keys(modeArg)) {
		a.jmp(unix.BPF_JEQ, nr, fmt.Sprintf("mode%d", modeArg[nr]), "")
	}
	a.jmp(unix.BPF_JEQ, unix.SYS_SOCKET, "socket", "")
	a.jmp(unix.BPF_JEQ, unix.SYS_CLONE, "clone", "")
	a.jmp(unix.BPF_JEQ, unix.SYS_IOCTL, "ioctl", "allow")

	a.label("socket")
	a.ld(offArg0)
	if spec.DenyUnix {
		a.jmp(unix.BPF_JEQ, unix.AF_UNIX, "eperm", "")
	} else {
		a.jmp(unix.BPF_JEQ, unix.AF_UNIX, "allow", "")
	}
	a.jmp(unix.BPF_JEQ, unix.AF_NETLINK, "netlink", "")
	if spec.Inet {
		a.jmp(unix.BPF_JEQ, unix.AF_INET, "allow", "")
		a.jmp(unix.BPF_JEQ, unix.AF_INET6, "allow", "eperm")
	} else {
		// Every other family (AF_INET*, AF_PACKET, AF_VSOCK, AF_ALG, AF_BLUETOOTH…).
		a.ret(retEPERM)
	}
	// Only NETLINK_ROUTE (getaddrinfo, getifaddrs); not audit, uevents, …
	a.label("netlink")
	a.ld(offArg2)
	a.jmp(unix.BPF_JEQ, unix.NETLINK_ROUTE, "allow", "eperm")

	a.label("clone")
	a.ld(offArg0)
	a.jmp(unix.BPF_JSET, cloneNamespaceFlags, "eperm", "allow")

	a.label("ioctl")
	a.ld(offArg1)
	a.jmp(unix.BPF_JEQ, unix.TIOCSTI, "eperm", "")
	for _, req := range fsFlagIoctls {
		a.jmp(unix.BPF_JEQ, req, "eperm", "")
	}
	a.jmp(unix.BPF_JEQ, unix.TIOCLINUX, "eperm", "allow")

	for _, off := range []uint32{offArg1, offArg2} {
		a.label(fmt.Sprintf("mode%d", off))
		a.ld(off)
		a.jmp(unix.BPF_JSET, setIDBits, "eperm", "allow")
	}

	a.label("allow")
	a.ret(retAllow)
	a.label("eperm")
	a.ret(retEPERM)
	a.label("enosys")
	a.ret(retENOSYS)
	a.label("kill")
	a.ret(retKill)
	return a.assemble()
}

// InstallSeccomp installs the filter with SECCOMP_FILTER_FLAG_TSYNC, so every
// thread of the helper carries it (the helper also holds its OS thread locked
// and execs from it, so either property alone would suffice; see Main).
// no_new_privs must already be set on the calling thread; TSYNC propagates it.
func InstallSeccomp(spec FilterSpec) error {
	prog, err := BuildFilter(spec)
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r1, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER, TSYNC): %w", errno)
	}
	if r1 != 0 {
		return fmt.Errorf("seccomp TSYNC failed: thread %d has an incompatible filter", r1)
	}
	mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	if err != nil || mode != 2 {
		return fmt.Errorf("seccomp filter not in force after install (mode %d, %v)", mode, err)
	}
	return nil
}

// SeccompArchSupported reports whether this build has a filter for the running
// architecture.
const SeccompArchSupported = true
