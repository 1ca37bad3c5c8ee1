package testutil

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// Child is the test binary run again as a child process, to be killed at a chosen moment; the
// package's TestMain picks the child's role from the environment it is given.
type Child struct {
	cmd    *exec.Cmd
	out    *bufio.Reader
	stderr bytes.Buffer
	done   bool
}

// StartChild starts the test binary with no test to run (-test.run=^$) and env added to this
// process's environment. A child still running when the test ends is killed.
func StartChild(t testing.TB, env ...string) *Child {
	t.Helper()
	c := &Child{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	c.cmd.Env = append(os.Environ(), env...)
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewReader(out)
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !c.done {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	})
	return c
}

// ReadLine returns the child's next line of output without its newline, or what it printed
// before it closed its output. It blocks until the child prints: the test's deadline bounds it.
func (c *Child) ReadLine() string {
	line, _ := c.out.ReadString('\n')
	return strings.TrimSuffix(line, "\n")
}

// Fatalf kills the child and fails the test with the message and the child's stderr.
func (c *Child) Fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	if !c.done {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		c.done = true
	}
	t.Fatalf("%s; the child's stderr: %s", fmt.Sprintf(format, args...), c.stderr.String())
}

// Kill sends SIGKILL to the child, waits for it and fails the test unless the signal ended it.
func (c *Child) Kill(t testing.TB) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.Fatalf(t, "killing the child: %v", err)
	}
	err := c.cmd.Wait()
	c.done = true
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("the child ended on its own (%v); its stderr: %s", err, c.stderr.String())
	}
}
