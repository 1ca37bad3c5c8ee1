//go:build unix

package policy

import "syscall"

// openNonblock makes opening a FIFO return at once instead of blocking; the file type is then
// checked on the open descriptor.
const openNonblock = syscall.O_NONBLOCK
