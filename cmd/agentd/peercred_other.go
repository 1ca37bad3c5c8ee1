//go:build !linux

package main

import (
	"errors"
	"net"
)

// peerUID is not implemented off Linux: connect fails closed rather than trust the socket.
func peerUID(*net.UnixConn) (int, error) {
	return 0, errors.New("cannot check the daemon's credentials on this platform")
}
