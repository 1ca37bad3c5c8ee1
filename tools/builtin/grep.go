package builtin

import (
	"context"
	_ "embed"
	"path"
	"path/filepath"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/search"
)

//go:embed grep.md
var grepDescription string

// GrepArgs are the arguments of grep.
type GrepArgs struct {
	Pattern         string `json:"pattern" jsonschema_description:"Regex, e.g. func \\w+\\(, TODO|FIXME, (?i)error"`
	Path            string `json:"path,omitempty" jsonschema_description:"File or directory (default: the root)."`
	Glob            string `json:"glob,omitempty" jsonschema_description:"Only paths matching this glob, e.g. *.go"`
	Exclude         string `json:"exclude,omitempty" jsonschema_description:"Skip paths matching this glob."`
	Literal         bool   `json:"literal,omitempty" jsonschema_description:"pattern is plain text."`
	CaseInsensitive bool   `json:"case_insensitive,omitempty" jsonschema_description:"Ignore case."`
	Context         int    `json:"context,omitempty" jsonschema:"minimum=0" jsonschema_description:"Lines around each match."`
	Before          int    `json:"before,omitempty" jsonschema:"minimum=0" jsonschema_description:"Lines before each match."`
	After           int    `json:"after,omitempty" jsonschema:"minimum=0" jsonschema_description:"Lines after each match."`
	OutputMode      string `json:"output_mode,omitempty" jsonschema:"enum=content,enum=files_with_matches,enum=count"`
	HeadLimit       int    `json:"head_limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"Most results (default 100)."`
}

var grepSpec = tools.NewSpec[GrepArgs]()

type grepTool struct{ *env }

var (
	_ tools.Validator          = (*grepTool)(nil)
	_ tools.PermissionMetadata = (*grepTool)(nil)
)

func (t *grepTool) Name() string        { return "grep" }
func (t *grepTool) Description() string { return grepDescription }
func (t *grepTool) Spec() *tools.Spec   { return grepSpec }

func (t *grepTool) Label(args any) string {
	return "Search for " + cutRunes(args.(*GrepArgs).Pattern, 60)
}
func (t *grepTool) ReadOnly(any) bool                     { return true }
func (t *grepTool) ConcurrencySafe(any) bool              { return true }
func (t *grepTool) InterruptBehavior(any) tools.Interrupt { return tools.InterruptCancel }

var grepRenames = renamer{
	"include": "glob", "file_pattern": "glob", "filePattern": "glob",
	"fixed_strings": "literal", "fixedStrings": "literal", "-F": "literal",
	"ignore_case": "case_insensitive", "caseInsensitive": "case_insensitive", "-i": "case_insensitive",
	"-C": "context", "context_lines": "context", "-B": "before", "-A": "after",
	"outputMode": "output_mode", "headLimit": "head_limit", "max_results": "head_limit",
	"query": "pattern", "regex": "pattern",
}

// grepModes maps the output modes models use to the schema's.
var grepModes = map[string]string{"files": "files_with_matches", "files_with_match": "files_with_matches", "matches": "content", "lines": "content"}

func (t *grepTool) CompatArgs(args map[string]any) map[string]any {
	args = grepRenames.apply(args)
	if m, ok := args["output_mode"].(string); ok {
		if to, ok := grepModes[m]; ok {
			args["output_mode"] = to
		}
	}
	return args
}

func (t *grepTool) Permission(call *tools.Call) tools.Permission {
	return t.permission(tools.ArgsOf[GrepArgs](call).Path, tools.AccessRead)
}

// Validate confines the path; the pattern is checked by the search itself (invalid_args).
func (t *grepTool) Validate(_ context.Context, call *tools.Call) error {
	_, err := t.target(tools.ArgsOf[GrepArgs](call).Path)
	return err
}

// target resolves the file or directory to search.
func (t *grepTool) target(path string) (fsafe.Path, error) {
	p, err := t.resolve(path)
	if err != nil {
		return fsafe.Path{}, err
	}
	if !p.Exists() {
		return fsafe.Path{}, tools.Errorf(tools.NotFound, "%s does not exist; use ls or glob to find the right path", t.show(p))
	}
	return p, nil
}

func (t *grepTool) Execute(ctx context.Context, call *tools.Call) (tools.Output, error) {
	a := tools.ArgsOf[GrepArgs](call)
	p, err := t.target(a.Path)
	if err != nil {
		return tools.Output{}, err
	}
	opts := search.GrepOptions{
		Root: p.Root(), Pattern: a.Pattern, Literal: a.Literal, IgnoreCase: a.CaseInsensitive,
		Before: a.Context, After: a.Context, MaxResults: a.HeadLimit,
		Overlay: t.search.Overlay, Engine: t.search.Engine, RgPath: t.search.RgPath,
	}
	if p.Rel() != "." {
		opts.Paths = []string{p.Rel()}
	}
	// Files that may hold secrets — by their name, or as hard links whose content is also
	// another file's — are searched only when named as the path, which the policy treats like
	// a read of them (it asks); otherwise they are skipped and counted.
	if !p.Permission(tools.AccessRead).Sensitive {
		opts.Withhold, opts.WithholdLinked = t.withhold(p.Root()), true
	}
	if a.Glob != "" {
		opts.Include = []string{a.Glob}
	}
	if a.Exclude != "" {
		opts.Exclude = []string{a.Exclude}
	}
	if a.Before > 0 {
		opts.Before = a.Before
	}
	if a.After > 0 {
		opts.After = a.After
	}
	if opts.MaxResults <= 0 {
		opts.MaxResults = t.limits.GrepResults
	}
	switch a.OutputMode {
	case "files_with_matches":
		opts.Mode = search.ModeFiles
	case "count":
		opts.Mode = search.ModeCount
	default:
		opts.Mode = search.ModeContent
	}
	res, err := search.Grep(ctx, opts)
	if err != nil {
		return tools.Output{}, searchErr(ctx, err)
	}
	return tools.Output{Text: res.Render(), Details: res,
		Meta: tools.Meta{Truncated: res.OmittedFiles > 0 || res.OmittedMatches > 0}}, nil
}

// sensitiveFile reports whether reading the workspace-relative file rel asks (fsafe.Classify):
// grep withholds such files unless they are named as its path.
func sensitiveFile(rel string) bool {
	_, sensitive, _ := fsafe.Classify(rel)
	return sensitive
}

// withhold is grep's Withhold under root: sensitive names, and git configurations that hold a
// credential (only files that can be one are resolved and looked into).
func (t *grepTool) withhold(root string) func(rel string) bool {
	return func(rel string) bool {
		if sensitiveFile(rel) {
			return true
		}
		if !fsafe.GitConfigName(rel) && path.Base(rel) != "config" {
			return false
		}
		return t.permission(filepath.Join(root, filepath.FromSlash(rel)), tools.AccessRead).Sensitive
	}
}
