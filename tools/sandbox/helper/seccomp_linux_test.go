//go:build linux && (amd64 || arm64)

package helper

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// seccompData mirrors struct seccomp_data.
type seccompData struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

func (d seccompData) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], d.nr)
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// runBPF interprets the subset of classic BPF the filter uses, the way the
// kernel's seccomp does (only absolute word loads, jumps on K, returns).
func runBPF(t *testing.T, prog []unix.SockFilter, d seccompData) uint32 {
	t.Helper()
	data := d.bytes()
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			if acc == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			if acc >= in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			if acc&in.K != 0 {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("unexpected BPF instruction %#v at %d", in, pc)
		}
	}
	t.Fatalf("BPF program fell off the end")
	return 0
}

func TestFilterDecisions(t *testing.T) {
	const (
		i386Socket = 359 // socket on the i386 table
		i386Arch   = 0x40000003
	)
	type tc struct {
		name string
		spec FilterSpec
		d    seccompData
		want uint32
	}
	native := func(nr uint32, args ...uint64) seccompData {
		d := seccompData{nr: nr, arch: nativeAuditArch}
		copy(d.args[:], args)
		return d
	}
	off := FilterSpec{}
	on := FilterSpec{Inet: true}
	noUnix := FilterSpec{DenyUnix: true}
	cases := []tc{
		{"read allowed", off, native(unix.SYS_READ), retAllow},
		{"execve allowed", off, native(unix.SYS_EXECVE), retAllow},
		{"foreign arch killed even for a harmless nr", on, seccompData{nr: unix.SYS_READ, arch: i386Arch}, retKill},
		{"i386 socket killed", on, seccompData{nr: i386Socket, arch: i386Arch}, retKill},
		{"arm compat killed", on, seccompData{nr: 1, arch: unix.AUDIT_ARCH_ARM}, retKill},
		{"ptrace", off, native(unix.SYS_PTRACE), retEPERM},
		{"process_vm_readv", off, native(unix.SYS_PROCESS_VM_READV), retEPERM},
		{"process_vm_writev", off, native(unix.SYS_PROCESS_VM_WRITEV), retEPERM},
		{"io_uring_setup", off, native(unix.SYS_IO_URING_SETUP), retEPERM},
		{"io_uring_enter", off, native(unix.SYS_IO_URING_ENTER), retEPERM},
		{"io_uring_register", off, native(unix.SYS_IO_URING_REGISTER), retEPERM},
		{"kexec_load", off, native(unix.SYS_KEXEC_LOAD), retEPERM},
		{"bpf", off, native(unix.SYS_BPF), retEPERM},
		{"perf_event_open", off, native(unix.SYS_PERF_EVENT_OPEN), retEPERM},
		{"keyctl", off, native(unix.SYS_KEYCTL), retEPERM},
		{"mount", off, native(unix.SYS_MOUNT), retEPERM},
		{"umount2", off, native(unix.SYS_UMOUNT2), retEPERM},
		{"pivot_root", off, native(unix.SYS_PIVOT_ROOT), retEPERM},
		{"unshare", off, native(unix.SYS_UNSHARE), retEPERM},
		{"setns", off, native(unix.SYS_SETNS), retEPERM},
		{"move_mount", off, native(unix.SYS_MOVE_MOUNT), retEPERM},
		{"clone3 falls back", off, native(unix.SYS_CLONE3), retENOSYS},
		{"clone thread", off, native(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD), retAllow},
		{"clone fork", off, native(unix.SYS_CLONE, uint64(unix.SIGCHLD)), retAllow},
		{"clone newuser", off, native(unix.SYS_CLONE, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), retEPERM},
		{"clone newns", off, native(unix.SYS_CLONE, unix.CLONE_NEWNS), retEPERM},
		{"clone newnet", off, native(unix.SYS_CLONE, unix.CLONE_NEWNET), retEPERM},
		{"socket inet off", off, native(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM), retEPERM},
		{"socket inet6 off", off, native(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM), retEPERM},
		{"socket inet on", on, native(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM), retAllow},
		{"socket inet6 on", on, native(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM), retAllow},
		{"socket inet high bits ignored", off, native(unix.SYS_SOCKET, 0xffffffff00000000|unix.AF_INET), retEPERM},
		{"socket packet on", on, native(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW), retEPERM},
		{"socket vsock on", on, native(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM), retEPERM},
		{"socket alg", on, native(unix.SYS_SOCKET, unix.AF_ALG, unix.SOCK_SEQPACKET), retEPERM},
		{"socket unix allowed", off, native(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM), retAllow},
		{"socket unix denied", noUnix, native(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM), retEPERM},
		{"socketpair unix stays allowed", noUnix, native(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM), retAllow},
		{"netlink route", off, native(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), retAllow},
		{"netlink audit", off, native(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT), retEPERM},
		{"ioctl TIOCSTI", off, native(unix.SYS_IOCTL, 0, unix.TIOCSTI), retEPERM},
		{"ioctl TIOCLINUX", off, native(unix.SYS_IOCTL, 0, unix.TIOCLINUX), retEPERM},
		{"ioctl TCGETS", off, native(unix.SYS_IOCTL, 0, unix.TCGETS), retAllow},
		{"ioctl FS_IOC_SETFLAGS", off, native(unix.SYS_IOCTL, 3, unix.FS_IOC_SETFLAGS), retEPERM},
		{"ioctl FS_IOC32_SETFLAGS", off, native(unix.SYS_IOCTL, 3, fsIOC32SetFlags), retEPERM},
		{"ioctl FS_IOC_FSSETXATTR", off, native(unix.SYS_IOCTL, 3, fsIOCFSSetXattr), retEPERM},
		{"ioctl FS_IOC_GETFLAGS", off, native(unix.SYS_IOCTL, 3, unix.FS_IOC_GETFLAGS), retAllow},
		{"fchmod 0755", off, native(unix.SYS_FCHMOD, 3, 0o755), retAllow},
		{"fchmod setuid", off, native(unix.SYS_FCHMOD, 3, 0o4755), retEPERM},
		{"fchmodat 0644", off, native(unix.SYS_FCHMODAT, 3, 0, 0o644), retAllow},
		{"fchmodat setgid", off, native(unix.SYS_FCHMODAT, 3, 0, 0o2775), retEPERM},
		{"fchmodat sticky", off, native(unix.SYS_FCHMODAT, 3, 0, 0o1777), retAllow},
		{"fchmodat2 setuid", off, native(unix.SYS_FCHMODAT2, 3, 0, 0o4700, 0), retEPERM},
		{"fchmodat2 0600", off, native(unix.SYS_FCHMODAT2, 3, 0, 0o600, 0), retAllow},
	}
	for nr, at := range archModeArg {
		args := make([]uint64, at/8-1) // offArgN is 16+8N: the mode is argument N
		args[len(args)-1] = 0o4755
		cases = append(cases, tc{fmt.Sprintf("syscall %d setuid", nr), off, native(nr, args...), retEPERM})
		args = slices.Clone(args)
		args[len(args)-1] = 0o755
		cases = append(cases, tc{fmt.Sprintf("syscall %d 0755", nr), off, native(nr, args...), retAllow})
	}
	if x32SyscallBit != 0 {
		cases = append(cases,
			tc{"x32 socket killed", on, native(x32SyscallBit | unix.SYS_SOCKET), retKill},
			tc{"x32 read killed", on, native(x32SyscallBit | unix.SYS_READ), retKill})
	}
	progs := map[FilterSpec][]unix.SockFilter{}
	for _, c := range cases {
		prog, ok := progs[c.spec]
		if !ok {
			var err error
			if prog, err = BuildFilter(c.spec); err != nil {
				t.Fatal(err)
			}
			progs[c.spec] = prog
		}
		if got := runBPF(t, prog, c.d); got != c.want {
			t.Errorf("%s: action %#x, want %#x", c.name, got, c.want)
		}
	}
	// Every deny-listed number is denied in every variant.
	for spec, prog := range progs {
		for _, nr := range slices.Concat(commonDenied, archDenied) {
			if got := runBPF(t, prog, native(nr)); got != retEPERM {
				t.Errorf("%+v: syscall %d: action %#x, want EPERM", spec, nr, got)
			}
		}
	}
	// The arch check comes first: instruction 0 loads arch.
	prog := progs[off]
	if prog[0].K != offArch || fmt.Sprint(prog[1].K) != fmt.Sprint(uint32(nativeAuditArch)) {
		t.Errorf("the filter must load and check seccomp_data.arch first: %#v %#v", prog[0], prog[1])
	}
	t.Logf("filter: %d instructions", len(prog))
}
