package builtin

import (
	_ "embed"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
)

//go:embed write.md
var writeDescription string

// WriteArgs are the arguments of write.
type WriteArgs struct {
	Path    string `json:"path" jsonschema_description:"The file."`
	Content string `json:"content" jsonschema_description:"The whole new content."`
}

var writeSpec = tools.NewSpec[WriteArgs]()

type writeTool struct{ *fileChange }

func newWrite(e *env) *writeTool {
	t := &writeTool{}
	t.fileChange = &fileChange{env: e, verb: "Replaced the content of", derive: t.derive,
		pathOf: func(a any) string { return a.(*WriteArgs).Path }}
	return t
}

func (t *writeTool) Name() string        { return "write" }
func (t *writeTool) Description() string { return writeDescription }
func (t *writeTool) Spec() *tools.Spec   { return writeSpec }
func (t *writeTool) Label(args any) string {
	return "Write " + args.(*WriteArgs).Path
}

var writeRenames = renamer{
	"file_path": "path", "filePath": "path", "filepath": "path", "file": "path",
	"contents": "content", "file_content": "content", "fileContent": "content", "text": "content",
}

func (t *writeTool) CompatArgs(args map[string]any) map[string]any { return writeRenames.apply(args) }

// derive is the new content: as given for a new file; for an existing file, with the file's BOM
// and line endings, and ending with a line break when either the content or the file did
// (models often drop the final newline; one they write is meant).
func (t *writeTool) derive(tg *fsafe.Target, shown string, args any) (string, string, error) {
	content := args.(*WriteArgs).Content
	if limit := t.fs.Limits().WriteBytes; int64(len(content)) > limit {
		return "", "", tools.Errorf(tools.Oversized, "the content for %s is %s, more than the %s a write may hold; write a smaller file",
			shown, sizeText(int64(len(content))), sizeText(limit))
	}
	if !tg.Exists {
		if err := t.checkParents(tg.Path); err != nil {
			return "", "", err
		}
		return content, "", nil
	}
	_, format := fsafe.Normalize(string(tg.Content))
	content = lf(content)
	if strings.HasSuffix(content, "\n") {
		format.FinalNewline = true
	}
	return format.Restore(content), "", nil
}

// checkParents refuses a new file whose nearest existing ancestor is not a directory, before the
// user is asked about a write that cannot happen.
func (t *writeTool) checkParents(p fsafe.Path) error {
	for dir := path.Dir(p.Rel()); dir != "." && dir != "/"; dir = path.Dir(dir) {
		dp, err := t.fs.Resolve(filepath.Join(p.Root(), dir))
		if err != nil {
			return err
		}
		if !dp.Exists() {
			continue
		}
		if !dp.Info().Mode.IsDir() {
			return tools.Errorf(tools.InvalidArgs, "%s is a file, so %s cannot be created inside it", t.show(dp), t.show(p))
		}
		return nil
	}
	return nil
}
