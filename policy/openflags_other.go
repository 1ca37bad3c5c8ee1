//go:build !unix

package policy

const openNonblock = 0
