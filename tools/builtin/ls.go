package builtin

import (
	"context"
	_ "embed"
	"strconv"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/search"
)

//go:embed ls.md
var lsDescription string

// LsArgs are the arguments of ls.
type LsArgs struct {
	Path  string `json:"path,omitempty" jsonschema_description:"Directory (default: the root)."`
	Depth int    `json:"depth,omitempty" jsonschema:"minimum=1" jsonschema_description:"Levels (default 2, at most 5)."`
}

var lsSpec = tools.NewSpec[LsArgs]()

type lsTool struct{ *env }

var (
	_ tools.Validator          = (*lsTool)(nil)
	_ tools.PermissionMetadata = (*lsTool)(nil)
)

func (t *lsTool) Name() string        { return "ls" }
func (t *lsTool) Description() string { return lsDescription }
func (t *lsTool) Spec() *tools.Spec   { return lsSpec }

func (t *lsTool) Label(args any) string {
	if p := args.(*LsArgs).Path; p != "" {
		return "List " + p
	}
	return "List the workspace"
}
func (t *lsTool) ReadOnly(any) bool                     { return true }
func (t *lsTool) ConcurrencySafe(any) bool              { return true }
func (t *lsTool) InterruptBehavior(any) tools.Interrupt { return tools.InterruptCancel }

var lsRenames = renamer{"dir": "path", "directory": "path", "dir_path": "path", "max_depth": "depth", "maxDepth": "depth"}

func (t *lsTool) CompatArgs(args map[string]any) map[string]any { return lsRenames.apply(args) }

func (t *lsTool) Permission(call *tools.Call) tools.Permission {
	return t.permission(tools.ArgsOf[LsArgs](call).Path, tools.AccessRead)
}

func (t *lsTool) Validate(_ context.Context, call *tools.Call) error {
	_, err := t.requireDir(tools.ArgsOf[LsArgs](call).Path, "ls")
	return err
}

func (t *lsTool) Execute(ctx context.Context, call *tools.Call) (tools.Output, error) {
	a := tools.ArgsOf[LsArgs](call)
	p, err := t.requireDir(a.Path, "ls")
	if err != nil {
		return tools.Output{}, err
	}
	depth := a.Depth
	if depth <= 0 {
		depth = t.limits.TreeDepth
	}
	depth = min(depth, t.limits.MaxTreeDepth)
	res, err := search.Tree(ctx, search.TreeOptions{Root: p.Root(), Path: p.Rel(), Depth: depth,
		MaxEntries: t.limits.TreeEntries})
	if err != nil {
		return tools.Output{}, searchErr(ctx, err)
	}
	text := res.Render()
	if a.Depth > t.limits.MaxTreeDepth {
		text += "(depth is capped at " + strconv.Itoa(t.limits.MaxTreeDepth) + "; list a subdirectory to go deeper)\n"
	}
	return tools.Output{Text: text, Details: res, Meta: tools.Meta{Truncated: res.Omitted > 0}}, nil
}
