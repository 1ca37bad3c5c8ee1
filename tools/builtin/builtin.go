package builtin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/sandbox"
	"github.com/agentd/agentd/tools/search"
)

// Config configures the built-in tools of one session.
type Config struct {
	// FS is the session's file-safety facade: confinement, read stamps, the editor overlay and
	// writer, per-file locks and size limits. Required.
	FS *fsafe.FS
	// Search tunes glob, grep and ls.
	Search SearchConfig
	// Bash configures the bash tool.
	Bash BashConfig
	// Limits bound what the tools return. Zero fields take DefaultLimits.
	Limits Limits
}

// SearchConfig tunes the search engine behind glob, grep and ls.
type SearchConfig struct {
	// Overlay gives grep the editor's unsaved buffers. Nil: the disk only.
	Overlay search.Overlay
	// Engine selects grep's engine: ripgrep when installed, else Go (the default), or one of
	// them only.
	Engine search.Engine
	// RgPath is the ripgrep binary ("" : rg on PATH).
	RgPath string
}

// BashConfig configures the bash tool.
type BashConfig struct {
	// Runner turns a command into an unstarted process. Nil: a SandboxRunner over Sandbox and
	// Policy. One of Runner and Sandbox is required: there is no silent unsandboxed default.
	Runner Runner
	// Sandbox confines commands when Runner is nil.
	Sandbox *sandbox.Sandbox
	// Policy is the base sandbox policy when Runner is nil. Network is set per call. Nil
	// WorkspaceRoots default to the workspace roots of FS; nil ProtectedPaths to
	// fsafe.ProtectedPaths(); set TmpDir to the session's tmp dir.
	Policy sandbox.Policy
	// DefaultTimeout applies when a call gives none (2 min); MaxTimeout caps what a call may ask
	// (10 min). Grace is how long a command has between SIGTERM and SIGKILL (2 s).
	DefaultTimeout, MaxTimeout, Grace time.Duration
	// HeadBytes and TailBytes are how much of the output the result keeps from its start and its
	// end (16 KiB each); the middle is replaced by "[… N bytes omitted …]".
	HeadBytes, TailBytes int
	// SpillDir is where the full output of a truncated command is saved ("" : not saved).
	// SpillMaxBytes caps a spill file (64 MiB).
	SpillDir      string
	SpillMaxBytes int64
	// ProgressInterval is the least time between two progress updates (100 ms).
	ProgressInterval time.Duration
}

// Limits bound what the read-only tools return.
type Limits struct {
	// ReadLines is how many lines read returns when the call gives no limit.
	ReadLines int
	// ImageBytes is the largest image read returns as an image block.
	ImageBytes int64
	// DirEntries is how many entries read lists for a directory.
	DirEntries int
	// GlobResults is how many files glob lists; GrepResults is grep's default head_limit.
	GlobResults, GrepResults int
	// TreeEntries is how many entries ls lists in total; TreeDepth its default depth and
	// MaxTreeDepth the deepest it goes.
	TreeEntries, TreeDepth, MaxTreeDepth int
}

// DefaultLimits are sized for local models with 8–32k token contexts.
func DefaultLimits() Limits {
	return Limits{ReadLines: 2000, ImageBytes: 5 << 20, DirEntries: 500, GlobResults: 100, GrepResults: 100,
		TreeEntries: search.DefaultTreeMaxEntries, TreeDepth: 2, MaxTreeDepth: 5}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	pick := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&l.ReadLines, d.ReadLines)
	pick(&l.DirEntries, d.DirEntries)
	pick(&l.GlobResults, d.GlobResults)
	pick(&l.GrepResults, d.GrepResults)
	pick(&l.TreeEntries, d.TreeEntries)
	pick(&l.TreeDepth, d.TreeDepth)
	pick(&l.MaxTreeDepth, d.MaxTreeDepth)
	if l.ImageBytes <= 0 {
		l.ImageBytes = d.ImageBytes
	}
	return l
}

// New returns the built-in tools in their fixed order: read, glob, grep, ls, edit, write, bash.
// The order is the model's tool list order and never changes.
func New(cfg Config) ([]tools.Tool, error) {
	if cfg.FS == nil {
		return nil, errors.New("builtin: Config.FS is required")
	}
	env := &env{fs: cfg.FS, search: cfg.Search, limits: cfg.Limits.withDefaults()}
	bash, err := newBash(env, cfg.Bash)
	if err != nil {
		return nil, err
	}
	return seven(env, bash), nil
}

// seven are the tools in the order the model is offered them.
func seven(env *env, bash *bashTool) []tools.Tool {
	return []tools.Tool{&readTool{env}, &globTool{env}, &grepTool{env}, &lsTool{env}, newEdit(env), newWrite(env), bash}
}

// Definitions are the seven tools' definitions as every session offers them: they depend on no
// workspace, so `agentd doctor` can weigh them without one.
func Definitions() []tools.Definition {
	ts := seven(&env{}, &bashTool{})
	out := make([]tools.Definition, len(ts))
	for i, t := range ts {
		out[i] = tools.Definition{Name: t.Name(), Description: t.Description(), Parameters: t.Spec().Schema()}
	}
	return out
}

// env is what the tools of one session share.
type env struct {
	fs     *fsafe.FS
	search SearchConfig
	limits Limits
}

// resolve resolves a path the model gave. "" means the workspace root.
func (e *env) resolve(path string) (fsafe.Path, error) {
	if path == "" {
		path = "."
	}
	return e.fs.Resolve(path)
}

// show is the form of p shown to the model: relative to the first workspace root (slash
// separated), or absolute for a path in another root, so that the model can pass it back.
func (e *env) show(p fsafe.Path) string {
	if roots := e.fs.Workspace().Roots(); len(roots) > 0 && p.Root() == roots[0] {
		return p.Rel()
	}
	return p.Abs()
}

// permission is the harness-side metadata of a call touching path: the path resolved, or no
// path when it does not resolve (Validate refuses such a call before any gate sees it).
func (e *env) permission(path string, access tools.Access) tools.Permission {
	p, err := e.resolve(path)
	if err != nil {
		return tools.Permission{Access: access}
	}
	return p.Permission(access)
}

// requireDir resolves path and checks that it is an existing directory.
func (e *env) requireDir(path, tool string) (fsafe.Path, error) {
	p, err := e.resolve(path)
	if err != nil {
		return fsafe.Path{}, err
	}
	switch {
	case !p.Exists():
		return fsafe.Path{}, tools.Errorf(tools.NotFound, "%s does not exist; use ls or glob to find the right directory", e.show(p))
	case !p.Info().Mode.IsDir():
		return fsafe.Path{}, tools.Errorf(tools.InvalidArgs, "%s is a file, not a directory; %s needs a directory (use read to see a file)", e.show(p), tool)
	}
	return p, nil
}

// searchErr turns an error from the search engine into a typed error.
func searchErr(ctx context.Context, err error) error {
	var te *tools.Error
	switch {
	case errors.As(err, &te):
		return err
	case ctx.Err() != nil:
		return tools.Errorf(tools.Cancelled, "the search was cancelled")
	case errors.Is(err, os.ErrNotExist):
		return tools.Errorf(tools.NotFound, "%v", err)
	}
	return tools.Errorf(tools.IOError, "the search failed: %v", err)
}

// renamer reshapes argument names that models commonly get wrong into the schema's names. A
// rename applies only when the target is absent, so it never overwrites what the model sent.
type renamer map[string]string

func (r renamer) apply(args map[string]any) map[string]any {
	for _, from := range slices.Sorted(maps.Keys(r)) { // sorted: the first of two aliases wins, always the same
		to := r[from]
		v, ok := args[from]
		if !ok {
			continue
		}
		if _, taken := args[to]; taken {
			continue
		}
		args[to] = v
		delete(args, from)
	}
	return args
}

// noteOf is the user's note from an approval, as a line for the model ("" when none).
func noteOf(call *tools.Call) string {
	if call.Approval == nil || strings.TrimSpace(call.Approval.Note) == "" {
		return ""
	}
	return "Note from the user: " + strings.TrimSpace(call.Approval.Note)
}

// sizeText formats a byte count for a message the model reads.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// firstLine is the first non-empty line of s, cut to max runes.
func firstLine(s string, max int) string {
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return cutRunes(l, max)
		}
	}
	return ""
}

// cutRunes cuts s to at most max runes, marking the cut with "…".
func cutRunes(s string, max int) string {
	n := 0
	for i := range s {
		if n == max {
			return strings.TrimRight(s[:i], " \t") + "…"
		}
		n++
	}
	return s
}
