// Command fakeollama serves a scripted fake Ollama server for end-to-end tests written in other
// languages. See README.md in this directory for the script format.
//
//	fakeollama -script scenario.json [-addr 127.0.0.1:0] [-exit-with-stdin]
//
// The first line on stdout is the server's base URL; give it to agentd as OLLAMA_HOST.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentd/agentd/ollama/ollamatest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (port 0 picks a free one)")
	scriptPath := flag.String("script", "", "JSON script file (empty: no turns, every model name exists)")
	exitWithStdin := flag.Bool("exit-with-stdin", false, "exit when stdin reaches end of file (the parent process went away)")
	flag.Parse()

	var script *ollamatest.Script
	if *scriptPath != "" {
		s, err := ollamatest.LoadScript(*scriptPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakeollama:", err)
			os.Exit(2)
		}
		script = s
	}
	srv, err := ollamatest.Start(*addr, script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeollama:", err)
		os.Exit(1)
	}
	fmt.Println(srv.URL)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	stdinClosed := make(chan struct{})
	if *exitWithStdin {
		go func() {
			io.Copy(io.Discard, os.Stdin)
			close(stdinClosed)
		}()
	}
	select {
	case <-stop:
	case <-stdinClosed:
	}
	for _, u := range srv.Unmatched() {
		fmt.Fprintln(os.Stderr, "fakeollama: unmatched", u)
	}
	srv.Close()
}
