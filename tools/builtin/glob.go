package builtin

import (
	"context"
	_ "embed"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/search"
)

//go:embed glob.md
var globDescription string

// GlobArgs are the arguments of glob.
type GlobArgs struct {
	Pattern string `json:"pattern" jsonschema_description:"* within a directory, ** any depth, {a,b} either: **/*.go, src/**/*.{ts,tsx}"`
	Path    string `json:"path,omitempty" jsonschema_description:"Directory to search (default: the root)."`
}

var globSpec = tools.NewSpec[GlobArgs]()

type globTool struct{ *env }

var (
	_ tools.Validator          = (*globTool)(nil)
	_ tools.PermissionMetadata = (*globTool)(nil)
)

func (t *globTool) Name() string        { return "glob" }
func (t *globTool) Description() string { return globDescription }
func (t *globTool) Spec() *tools.Spec   { return globSpec }

func (t *globTool) Label(args any) string                 { return "Find files " + args.(*GlobArgs).Pattern }
func (t *globTool) ReadOnly(any) bool                     { return true }
func (t *globTool) ConcurrencySafe(any) bool              { return true }
func (t *globTool) InterruptBehavior(any) tools.Interrupt { return tools.InterruptCancel }

var globRenames = renamer{"glob": "pattern", "dir": "path", "directory": "path", "cwd": "path"}

func (t *globTool) CompatArgs(args map[string]any) map[string]any { return globRenames.apply(args) }

func (t *globTool) Permission(call *tools.Call) tools.Permission {
	return t.permission(tools.ArgsOf[GlobArgs](call).Path, tools.AccessRead)
}

func (t *globTool) Validate(_ context.Context, call *tools.Call) error {
	_, err := t.requireDir(tools.ArgsOf[GlobArgs](call).Path, "glob")
	return err
}

func (t *globTool) Execute(ctx context.Context, call *tools.Call) (tools.Output, error) {
	a := tools.ArgsOf[GlobArgs](call)
	p, err := t.requireDir(a.Path, "glob")
	if err != nil {
		return tools.Output{}, err
	}
	// Models often repeat the directory in the pattern as an absolute path.
	pattern := a.Pattern
	if rest, ok := strings.CutPrefix(pattern, p.Abs()+"/"); ok {
		pattern = rest
	}
	res, err := search.Glob(ctx, search.GlobOptions{Root: p.Root(), Path: p.Rel(), Pattern: pattern,
		MaxResults: t.limits.GlobResults})
	if err != nil {
		return tools.Output{}, searchErr(ctx, err)
	}
	// Names are not secrets, contents may be: say which listed files reading would ask about
	// (sensitive names, hard links).
	var secret []string
	for _, f := range res.Files {
		if sensitiveFile(f.Path) || t.permission(filepath.Join(p.Root(), filepath.FromSlash(f.Path)), tools.AccessRead).Sensitive {
			secret = append(secret, f.Path)
		}
	}
	if len(secret) > 0 {
		names := strings.Join(secret[:min(len(secret), 5)], ", ")
		if len(secret) > 5 {
			names += ", …"
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%d listed file%s may hold secrets (%s): reading or grepping one asks the user first",
			len(secret), plural(len(secret)), names))
	}
	return tools.Output{Text: res.Render(), Details: res,
		Meta: tools.Meta{Truncated: res.Omitted > 0}}, nil
}
