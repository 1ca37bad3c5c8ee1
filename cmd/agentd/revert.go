package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/internal/termtext"
	"github.com/agentd/agentd/tools"
)

// revertCmd restores the files a turn changed: by default the last turn that changed files in the
// most recent session of the workspace. Files changed since by someone else are skipped and
// listed; the git index is never touched.
func revertCmd(args []string) int {
	fs := flag.NewFlagSet("revert", flag.ContinueOnError)
	var s settings
	s.register(fs)
	dir := fs.String("C", ".", "the workspace directory (to find its latest session)")
	session := fs.String("session", "", "the session ID (default: the workspace's latest session)")
	turn := fs.String("turn", "", "the turn ID (default: the last turn that changed files)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts, _, err := s.resolve()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return 2
	}
	rt, err := harness.NewRuntime(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return 1
	}
	defer rt.Close()
	id := *session
	if id == "" {
		abs, err := filepath.Abs(*dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentd:", err)
			return 1
		}
		list, err := rt.Store().List()
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentd:", err)
			return 1
		}
		for _, sum := range list {
			if sum.Workspace == tools.Canonical(abs) {
				id = sum.ID
				break
			}
		}
		if id == "" {
			fmt.Fprintln(os.Stderr, "agentd: no session in", abs)
			return 1
		}
	}
	h, err := rt.Open(harness.SessionSpec{ID: id})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return 1
	}
	defer h.Close()
	turnID, res, err := h.Revert(*turn)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return 1
	}
	out := termtext.New(os.Stdout, false) // file names are the model's: never raw on the terminal
	out.Printf("reverted turn %s of session %s\n", turnID, id)
	for _, p := range res.Restored {
		out.Printf("  restored %s\n", termtext.Line(p))
	}
	for _, sk := range res.Skipped {
		out.Printf("  skipped  %s: %s\n", termtext.Line(sk.Path), sk.Reason)
	}
	if len(res.Skipped) > 0 {
		return 3
	}
	return 0
}
