// Command agentd is a coding agent daemon for editors, driven by a local Ollama model.
package main

import (
	"fmt"
	"os"
)

var version = "0.1.0-dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Println("agentd", version)
		return
	}
	fmt.Fprintln(os.Stderr, "usage: agentd version")
	os.Exit(2)
}
