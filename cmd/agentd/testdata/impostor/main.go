// Command impostor stands in for another user's listener in connect's tests: it listens on a
// Unix socket, prints "ready", and counts the connections and bytes it receives. A connection
// that sends exactly "sentinel" ends the count: connections are accepted in order, so every
// connection made before it has been accepted; it waits for them to end, prints
// "conns=N bytes=M" and exits.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

func main() {
	syscall.Umask(0)
	ln, err := net.Listen("unix", os.Args[1])
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	var (
		mu           sync.Mutex
		wg           sync.WaitGroup
		conns, total int64
	)
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		data, _ := io.ReadAll(io.LimitReader(c, 8)) // the sentinel is short
		if string(data) == "sentinel" {
			c.Close()
			break
		}
		conns++
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, _ := io.Copy(io.Discard, c)
			c.Close()
			mu.Lock()
			total += int64(len(data)) + n
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Printf("conns=%d bytes=%d\n", conns, total)
}
