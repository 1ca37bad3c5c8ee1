package gitguard

import (
	"fmt"
	"strings"
	"time"
)

// Options configure a Guard.
type Options struct {
	// Roots are the workspace roots (absolute, canonical) the guarded commands can write.
	Roots []string
	// Writable are the directories outside the roots that the commands can write too (the
	// session's tmp dir, shared build caches): a link from a root into one of them that a
	// command creates is undone, since a repository planted there would be found through it.
	Writable []string
	// QuarantineDir is where undone entries are moved (agentd's state directory, outside
	// every writable directory). "": they are deleted.
	QuarantineDir string
}

// Action is one change to git metadata that the guard undid.
type Action struct {
	// Path is the entry, relative to the first root (absolute in another root).
	Path string `json:"path"`
	// Change is "created", "changed", "replaced" or "removed".
	Change string `json:"change"`
	// What says what the entry is to git ("a nested git repository", "git configuration", …).
	What string `json:"what"`
	// Undo says what the guard did: "moved to DIR", "deleted", "restored".
	Undo string `json:"undo"`
	// Err is set when the undo failed.
	Err string `json:"error,omitzero"`
}

// Report is what the guard found after one command.
type Report struct {
	Actions []Action `json:"actions,omitzero"`
	// Unchecked lists what the guard could not read, each with the reason.
	Unchecked []string `json:"unchecked,omitzero"`
	// Dirs is how many directories the walk after the command listed.
	Dirs int `json:"dirs"`
	// Elapsed is the time both walks and the undo took.
	Elapsed time.Duration `json:"elapsedNs"`
}

// Undone reports whether the guard undid something.
func (r *Report) Undone() bool { return r != nil && len(r.Actions) > 0 }

// Text is the report for the model and the user ("" when there is nothing to say).
func (r *Report) Text() string {
	if r == nil || len(r.Actions) == 0 && len(r.Unchecked) == 0 {
		return ""
	}
	var b strings.Builder
	if len(r.Actions) > 0 {
		b.WriteString("agentd undid changes this command made to git metadata, which git would act on outside the sandbox " +
			"(the user's next git command could run a program they name):\n")
		for _, a := range r.Actions {
			fmt.Fprintf(&b, "- %s %s (%s): %s", a.Change, a.Path, a.What, a.Undo)
			if a.Err != "" {
				fmt.Fprintf(&b, " — FAILED: %s", a.Err)
			}
			b.WriteByte('\n')
		}
		b.WriteString("Commands may not create repositories, worktrees or submodules in the workspace, nor change git's " +
			"configuration or hooks; use $TMPDIR for scratch repositories, and ask the user for the rest.\n")
	}
	if len(r.Unchecked) > 0 {
		fmt.Fprintf(&b, "agentd could not check these for planted git metadata: %s\n", strings.Join(r.Unchecked, "; "))
	}
	return b.String()
}
