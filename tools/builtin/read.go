package builtin

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig for GIF
	_ "image/jpeg"
	_ "image/png"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
)

//go:embed read.md
var readDescription string

// ReadArgs are the arguments of read.
type ReadArgs struct {
	Path   string `json:"path" jsonschema_description:"File or directory."`
	Offset int    `json:"offset,omitempty" jsonschema:"minimum=0" jsonschema_description:"First line, 1-based."`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"Number of lines."`
}

var readSpec = tools.NewSpec[ReadArgs]()

// ReadDetails describe a read result for the user interface.
type ReadDetails struct {
	Path string `json:"path"`
	// Kind is "text", "directory", "binary" or "image".
	Kind string `json:"kind"`
	// FirstLine and LastLine are the 1-based lines shown (text); TotalLines is the file's line
	// count (-1 when unknown).
	FirstLine  int  `json:"firstLine,omitzero"`
	LastLine   int  `json:"lastLine,omitzero"`
	TotalLines int  `json:"totalLines,omitzero"`
	Partial    bool `json:"partial,omitzero"`
	// MIME is set for images.
	MIME string `json:"mime,omitzero"`
}

type readTool struct{ *env }

var (
	_ tools.ContentTool        = (*readTool)(nil)
	_ tools.Validator          = (*readTool)(nil)
	_ tools.PermissionMetadata = (*readTool)(nil)
)

func (t *readTool) Name() string        { return "read" }
func (t *readTool) Description() string { return readDescription }
func (t *readTool) Spec() *tools.Spec   { return readSpec }

func (t *readTool) Label(args any) string {
	return "Read " + args.(*ReadArgs).Path
}
func (t *readTool) ReadOnly(any) bool                     { return true }
func (t *readTool) ConcurrencySafe(any) bool              { return true }
func (t *readTool) InterruptBehavior(any) tools.Interrupt { return tools.InterruptCancel }

var readRenames = renamer{
	"file_path": "path", "filePath": "path", "filepath": "path", "file": "path", "filename": "path",
	"start_line": "offset", "startLine": "offset", "line": "offset", "line_offset": "offset",
	"max_lines": "limit", "maxLines": "limit", "line_count": "limit", "num_lines": "limit",
}

func (t *readTool) CompatArgs(args map[string]any) map[string]any { return readRenames.apply(args) }

func (t *readTool) Permission(call *tools.Call) tools.Permission {
	return t.permission(tools.ArgsOf[ReadArgs](call).Path, tools.AccessRead)
}

// Validate confines the path before any gate sees the call.
func (t *readTool) Validate(_ context.Context, call *tools.Call) error {
	_, err := t.resolve(tools.ArgsOf[ReadArgs](call).Path)
	return err
}

func (t *readTool) Execute(ctx context.Context, call *tools.Call) (tools.Output, error) {
	return t.read(ctx, tools.ArgsOf[ReadArgs](call), false)
}

// ExecuteContent returns images as image blocks.
func (t *readTool) ExecuteContent(ctx context.Context, call *tools.Call) (tools.Output, error) {
	return t.read(ctx, tools.ArgsOf[ReadArgs](call), true)
}

func (t *readTool) read(ctx context.Context, a *ReadArgs, images bool) (tools.Output, error) {
	p, err := t.resolve(a.Path)
	if err != nil {
		return tools.Output{}, err
	}
	if !p.Exists() {
		return tools.Output{}, tools.Errorf(tools.NotFound, "%s does not exist; use glob or ls to find the file", t.show(p))
	}
	if p.Info().Mode.IsDir() {
		return t.listDir(p)
	}
	offset := max(a.Offset, 1)
	limit := a.Limit
	if limit <= 0 {
		limit = t.limits.ReadLines
	}
	pg, err := t.fs.ReadLines(ctx, p.Abs(), offset-1, limit)
	if err != nil {
		return tools.Output{}, err
	}
	if imageName(p.Rel()) || (len(pg.Lines) > 0 && imageMagicPrefix(pg.Lines[0].Text)) {
		if out, ok := t.image(p, images); ok {
			return out, nil
		}
	}
	if pg.Binary {
		return t.binary(p, pg), nil
	}
	return t.text(p, pg, limit), nil
}

// text renders a page like cat -n, with a note saying what is not shown.
func (t *readTool) text(p fsafe.Path, pg *fsafe.Page, limit int) tools.Output {
	var b strings.Builder
	var cut []string
	width := len(strconv.Itoa(max(pg.Offset+len(pg.Lines), 1)))
	width = max(width, 6)
	for _, l := range pg.Lines {
		fmt.Fprintf(&b, "%*d\t%s", width, l.N, l.Text)
		if l.Cut {
			b.WriteString("… [line cut]")
			cut = append(cut, strconv.Itoa(l.N))
		}
		b.WriteByte('\n')
	}
	d := ReadDetails{Path: t.show(p), Kind: "text", TotalLines: pg.TotalLines}
	if len(pg.Lines) > 0 {
		d.FirstLine, d.LastLine = pg.Lines[0].N, pg.Lines[len(pg.Lines)-1].N
	}
	var notes []string
	switch {
	case pg.TotalLines == 0:
		notes = append(notes, fmt.Sprintf("%s is empty.", d.Path))
	case pg.More:
		of := fmt.Sprintf(" of %d", pg.TotalLines)
		if pg.TotalLines < 0 {
			of = " (the file is too large to count its lines)"
		}
		why := ""
		if len(pg.Lines) < limit {
			why = fmt.Sprintf(" (one call shows at most %s of text)", sizeText(int64(t.fs.Limits().PageBytes)))
		}
		notes = append(notes, fmt.Sprintf("Showing lines %d–%d%s%s; call read with offset=%d for more.",
			d.FirstLine, d.LastLine, of, why, pg.NextOffset+1))
		d.Partial = true
	case d.FirstLine > 1:
		notes = append(notes, fmt.Sprintf("Showing lines %d–%d of %d (the end of the file).", d.FirstLine, d.LastLine, pg.TotalLines))
		d.Partial = true
	}
	if len(cut) > 0 {
		notes = append(notes, fmt.Sprintf("Line%s %s %s longer than %d bytes and %s cut; use grep to search inside.",
			plural(len(cut)), strings.Join(cut, ", "), isAre(len(cut)), t.fs.Limits().LineBytes, wasWere(len(cut))))
		d.Partial = true
	}
	if len(notes) > 0 {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("(" + strings.Join(notes, " ") + ")\n")
	}
	return tools.Output{Text: b.String(), Details: d,
		Meta: tools.Meta{Truncated: d.Partial, OriginalSize: pg.Stamp.Size}}
}

// binary describes a binary file instead of dumping it.
func (t *readTool) binary(p fsafe.Path, pg *fsafe.Page) tools.Output {
	var head []byte
	if len(pg.Lines) > 0 {
		head = []byte(pg.Lines[0].Text)
	}
	kind := http.DetectContentType(head)
	text := fmt.Sprintf("%s is a binary file (%s, looks like %s); its content is not shown. "+
		"Use bash with a suitable tool (file, xxd | head, unzip -l, …) if you need to inspect it.\n",
		t.show(p), sizeText(p.Info().Size), kind)
	return tools.Output{Text: text, Details: ReadDetails{Path: t.show(p), Kind: "binary"},
		Meta: tools.Meta{OriginalSize: p.Info().Size, Truncated: true}}
}

// image returns p as an image block when its content is an image the model can see.
func (t *readTool) image(p fsafe.Path, images bool) (tools.Output, bool) {
	data, _, err := fsafe.ReadFile(p, t.limits.ImageBytes)
	if err != nil {
		return tools.Output{}, false
	}
	mime := sniffImage(data)
	if mime == "" {
		return tools.Output{}, false
	}
	desc := fmt.Sprintf("%s is an image (%s, %s", t.show(p), mime, sizeText(int64(len(data))))
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
		desc += fmt.Sprintf(", %d×%d pixels", cfg.Width, cfg.Height)
	}
	desc += ")."
	d := ReadDetails{Path: t.show(p), Kind: "image", MIME: mime}
	if !images {
		return tools.Output{Text: desc + " Images cannot be shown here.\n", Details: d}, true
	}
	return tools.Output{Text: desc, Details: d, Content: []tools.Block{
		{Type: "text", Text: desc + " It follows.\n"},
		{Type: "image", MIME: mime, Data: data},
	}}, true
}

// listDir lists a directory's entries, for a read of a directory.
func (t *readTool) listDir(p fsafe.Path) (tools.Output, error) {
	entries, err := fsafe.ReadDir(p)
	if err != nil {
		return tools.Output{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s is a directory with %d entries (use ls for a tree, read a file path to see a file):\n", t.show(p), len(entries))
	for i, e := range entries {
		if i == t.limits.DirEntries {
			fmt.Fprintf(&b, "… %d more entries\n", len(entries)-i)
			break
		}
		b.WriteString(e.Name())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			b.WriteString(" (symlink)")
		case e.IsDir():
			b.WriteByte('/')
		}
		b.WriteByte('\n')
	}
	return tools.Output{Text: b.String(), Details: ReadDetails{Path: t.show(p), Kind: "directory"},
		Meta: tools.Meta{Truncated: len(entries) > t.limits.DirEntries}}, nil
}

// imageName reports a file name with an image extension.
func imageName(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp":
		return true
	}
	return false
}

// imageMagicPrefix reports a first line that starts like an image (the PNG signature holds a
// line break, so only its first bytes are in the first line).
func imageMagicPrefix(s string) bool {
	for _, m := range []string{"\x89PNG", "\xff\xd8\xff", "GIF87a", "GIF89a", "RIFF"} {
		if strings.HasPrefix(s, m) {
			return true
		}
	}
	return false
}

// sniffImage returns the MIME type of an image the model can be shown, by its magic bytes.
func sniffImage(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}
