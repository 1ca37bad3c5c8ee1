package builtin

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
)

//go:embed edit.md
var editDescription string

// EditArgs are the arguments of edit: one replacement (old_string, new_string, replace_all) or
// several (edits), applied to one file all together or not at all.
type EditArgs struct {
	Path       string   `json:"path" jsonschema_description:"The file."`
	OldString  string   `json:"old_string,omitempty" jsonschema_description:"Exact text to replace."`
	NewString  *string  `json:"new_string,omitempty" jsonschema_description:"Replacement (empty deletes)."`
	ReplaceAll bool     `json:"replace_all,omitempty" jsonschema_description:"Replace every occurrence."`
	Edits      []EditOp `json:"edits,omitempty" jsonschema:"minItems=1" jsonschema_description:"Several replacements, instead of old_string and new_string."`
}

var editSpec = tools.NewSpec[EditArgs]()

type editTool struct{ *fileChange }

func newEdit(e *env) *editTool {
	t := &editTool{}
	t.fileChange = &fileChange{env: e, verb: "Edited", derive: t.derive,
		pathOf: func(a any) string { return a.(*EditArgs).Path }}
	return t
}

func (t *editTool) Name() string        { return "edit" }
func (t *editTool) Description() string { return editDescription }
func (t *editTool) Spec() *tools.Spec   { return editSpec }
func (t *editTool) Label(args any) string {
	return "Edit " + args.(*EditArgs).Path
}

var editRenames = renamer{
	"file_path": "path", "filePath": "path", "filepath": "path", "file": "path",
	"oldString": "old_string", "old_str": "old_string", "old_text": "old_string",
	"newString": "new_string", "new_str": "new_string", "new_text": "new_string",
	"replaceAll": "replace_all",
}

func (t *editTool) CompatArgs(args map[string]any) map[string]any {
	args = editRenames.apply(args)
	if s, ok := args["edits"].(string); ok {
		// The list sent as a JSON string (coercion would parse it too, after this hook; its
		// items need the renames).
		var list []any
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		if d.Decode(&list) == nil && !d.More() {
			args["edits"] = list
		}
	}
	if edits, ok := args["edits"].([]any); ok {
		for _, e := range edits {
			if m, ok := e.(map[string]any); ok {
				editRenames.apply(m)
			}
		}
	}
	return args
}

// ops returns the replacements a call asks for.
func (a *EditArgs) ops() ([]EditOp, error) {
	single := a.OldString != "" || a.NewString != nil || a.ReplaceAll
	switch {
	case len(a.Edits) > 0 && single:
		return nil, tools.Errorf(tools.InvalidArgs, "give either old_string and new_string, or edits, not both")
	case len(a.Edits) > 0:
		return a.Edits, nil
	case a.NewString == nil && a.OldString == "":
		return nil, tools.Errorf(tools.InvalidArgs, "give old_string (the exact text to replace) and new_string (its replacement), or edits")
	case a.NewString == nil:
		return nil, tools.Errorf(tools.InvalidArgs, "new_string is missing; give the replacement text (an empty string deletes old_string)")
	}
	return []EditOp{{OldString: a.OldString, NewString: *a.NewString, ReplaceAll: a.ReplaceAll}}, nil
}

// derive applies the replacements to the file's normalized text and restores its format (BOM,
// line endings, final newline).
func (t *editTool) derive(tg *fsafe.Target, shown string, args any) (string, string, error) {
	a := args.(*EditArgs)
	ops, err := a.ops()
	if err != nil {
		return "", "", err
	}
	if !tg.Exists {
		return "", "", tools.Errorf(tools.NotFound, "%s does not exist; use write to create a new file (or glob to find the file you meant)", shown)
	}
	if fsafe.LooksBinary(tg.Content) {
		return "", "", tools.Errorf(tools.InvalidArgs, "%s is a binary file; edit changes text files only", shown)
	}
	text, format := fsafe.Normalize(string(tg.Content))
	text, counts, err := applyEdits(text, shown, ops)
	if err != nil {
		return "", "", err
	}
	total := 0
	for _, c := range counts {
		total += c
	}
	summary := ""
	if total > len(ops) || len(ops) > 1 {
		summary = fmt.Sprintf("%d replacement%s", total, plural(total))
	}
	return format.Restore(text), summary, nil
}
