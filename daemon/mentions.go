package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/search"
	"go.lsp.dev/protocol"
)

// Bounds of what a mention puts into the prompt.
const (
	// mentionBytes caps a mentioned file's content and a symbol's text.
	mentionBytes = 32 << 10
	// folderEntries caps a mentioned folder's listing; folderDepth is how deep it goes.
	folderEntries = 200
	folderDepth   = 3
)

// editorContext is the editor context appended to a prompt for the model: a selection, the active file, and the mentions
// the user typed (files the daemon reads through the session's file view — the editor's buffer
// when open, confined to the workspace, sensitive files withheld —, folders it lists, symbols
// whose text the editor sent). An item of an unknown kind is an invalid-params error; a mention
// that cannot be read is told to the model as such, never read around.
// The prompt's own text stays apart (agent.Session.PromptWithContext), so the turn keeps the
// user's words for the session list, the transcript and a rewind, with one label per item
// (contextLabel) that the editors show beside them, live and replayed.
func editorContext(ctx context.Context, items []rpc.ContextItem, root string, overlay fsafe.Overlay) (agent.EditorContext, error) {
	if len(items) == 0 {
		return agent.EditorContext{}, nil
	}
	var ws *fsafe.Workspace
	for _, it := range items {
		switch it.Kind {
		case "", rpc.ContextSymbol:
		case rpc.ContextFile, rpc.ContextFolder:
			if ws == nil {
				var err error
				if ws, err = fsafe.NewWorkspace(root); err != nil {
					return agent.EditorContext{}, err
				}
				defer ws.Close()
			}
		default:
			return agent.EditorContext{}, rpc.Errorf(rpc.CodeInvalidParams, "context item of unknown kind %q (known: file, folder, symbol)", it.Kind)
		}
	}
	var b strings.Builder
	labels := make([]string, 0, len(items))
	for _, it := range items {
		labels = append(labels, contextLabel(it, root))
		b.WriteString("\n\n")
		switch it.Kind {
		case rpc.ContextFile:
			mentionFile(ctx, &b, it.URI, ws, overlay)
		case rpc.ContextFolder:
			mentionFolder(ctx, &b, it.URI, ws)
		case rpc.ContextSymbol:
			path := displayPath(it.URI, root)
			kind := it.SymbolKind
			if kind == "" {
				kind = "symbol"
			}
			if it.Range != nil {
				first, last := lineSpan(it.Range)
				fmt.Fprintf(&b, "The user mentions %s %s in %s, lines %d–%d:\n", kind, it.Name, path, first, last)
			} else {
				fmt.Fprintf(&b, "The user mentions %s %s in %s:\n", kind, it.Name, path)
			}
			if it.Text != "" {
				body, cut := capText(it.Text, mentionBytes)
				b.WriteString(fence(body))
				if cut {
					fmt.Fprintf(&b, "\n(The symbol's text is %s; only the first %s are shown. Read %s for the rest.)", sizeOf(len(it.Text)), sizeOf(len(body)), path)
				}
			}
		default:
			path := displayPath(it.URI, root)
			if it.Range != nil {
				first, last := lineSpan(it.Range)
				fmt.Fprintf(&b, "Selected in %s, lines %d–%d:\n", path, first, last)
			} else {
				fmt.Fprintf(&b, "The user is looking at %s.\n", path)
			}
			if it.Text != "" {
				b.WriteString(fence(it.Text))
			}
		}
	}
	return agent.EditorContext{Text: b.String(), Labels: labels}, nil
}

// contextLabel names a context item as the editors' chips do: the active file "cart.go", a
// selection "cart.go:3-5" (its last line is the one before the end when the end is at the start
// of a line, as VS Code's chip counts it), mentions as typed: "@greet.go", "@pkg/", "@#Total".
func contextLabel(it rpc.ContextItem, root string) string {
	path := displayPath(it.URI, root)
	if p, ok := fileURIPath(path); ok {
		path = p // a file outside the workspace: its path
	}
	path = filepath.ToSlash(path)
	switch it.Kind {
	case rpc.ContextFile:
		return "@" + path
	case rpc.ContextFolder:
		return "@" + strings.TrimSuffix(path, "/") + "/"
	case rpc.ContextSymbol:
		return "@#" + it.Name
	}
	if it.Range == nil {
		return path
	}
	a, b := lineSpan(it.Range)
	if b <= a {
		return fmt.Sprintf("%s:%d", path, a)
	}
	return fmt.Sprintf("%s:%d-%d", path, a, b)
}

// lineSpan is the first and last line (from 1) of a range; an end at the start of a line ends the
// range on the line before (whole lines as VS Code selects them and Neovim's :'<,'>Agent sends them).
func lineSpan(r *protocol.Range) (first, last int) {
	first, last = int(r.Start.Line)+1, int(r.End.Line)+1
	if r.End.Character == 0 && r.End.Line > r.Start.Line {
		last--
	}
	return first, last
}

// displayPath is a URI as the model sees it: workspace-relative when inside the workspace.
func displayPath(uri, root string) string {
	if p, ok := fileURIPath(uri); ok && within(root, p) {
		return strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
	}
	return uri
}

// resolveMention resolves a mention's URI inside the workspace.
func resolveMention(uri string, ws *fsafe.Workspace) (fsafe.Path, error) {
	abs, ok := fileURIPath(uri)
	if !ok {
		return fsafe.Path{}, fmt.Errorf("%q is not a file: URI", uri)
	}
	p, err := ws.Resolve(abs)
	if err != nil {
		return fsafe.Path{}, err
	}
	if !p.Exists() {
		return fsafe.Path{}, fmt.Errorf("%s does not exist", p.Rel())
	}
	return p, nil
}

func mentionFile(ctx context.Context, b *strings.Builder, uri string, ws *fsafe.Workspace, overlay fsafe.Overlay) {
	p, err := resolveMention(uri, ws)
	if err != nil {
		fmt.Fprintf(b, "The user mentions %s, but it cannot be read: %v.", filepath.Base(uri), err)
		return
	}
	if perm := p.Permission(tools.AccessRead); perm.Sensitive {
		fmt.Fprintf(b, "The user mentions the file %s. Its content is not included: it is sensitive (%s). Reading it with the read tool asks the user first.", p.Rel(), perm.Reason)
		return
	}
	if !p.Info().Mode.IsRegular() {
		fmt.Fprintf(b, "The user mentions %s, which is not a regular file.", p.Rel())
		return
	}
	size := p.Info().Size
	var doc fsafe.Document
	open := false
	if overlay != nil {
		doc, open = overlay.Document(p.Abs())
		if open {
			size = int64(len(doc.Content))
		}
	}
	f := fsafe.New(ws, fsafe.Options{Overlay: overlay, Limits: fsafe.Limits{ReadBytes: mentionBytes, PageBytes: mentionBytes}})
	var body string
	var cut bool
	if size <= mentionBytes {
		c, err := f.Read(ctx, p.Abs())
		if err != nil {
			fmt.Fprintf(b, "The user mentions the file %s, but it cannot be read: %v.", p.Rel(), err)
			return
		}
		if fsafe.LooksBinary(c.Data) {
			fmt.Fprintf(b, "The user mentions the file %s (binary, %s; not included).", p.Rel(), sizeOf(int(size)))
			return
		}
		body = string(c.Data)
	} else {
		pg, err := f.ReadLines(ctx, p.Abs(), 0, 0)
		if err != nil {
			fmt.Fprintf(b, "The user mentions the file %s, but it cannot be read: %v.", p.Rel(), err)
			return
		}
		if pg.Binary {
			fmt.Fprintf(b, "The user mentions the file %s (binary, %s; not included).", p.Rel(), sizeOf(int(size)))
			return
		}
		lines := make([]string, len(pg.Lines))
		for i, l := range pg.Lines {
			lines[i] = l.Text
		}
		body, _ = capText(strings.Join(lines, "\n"), mentionBytes)
		cut = true // larger than mentionBytes
	}
	src := ""
	if open {
		src = " (the editor's buffer)"
	}
	fmt.Fprintf(b, "The user mentions the file %s%s:\n", p.Rel(), src)
	b.WriteString(fence(body))
	if cut {
		shown := strings.Count(body, "\n") + 1
		fmt.Fprintf(b, "\n(%s is %s; only lines 1–%d (%s) are shown, %s left out. Read the rest with the read tool.)",
			p.Rel(), sizeOf(int(size)), shown, sizeOf(len(body)), sizeOf(int(size)-len(body)))
	}
}

func mentionFolder(ctx context.Context, b *strings.Builder, uri string, ws *fsafe.Workspace) {
	p, err := resolveMention(uri, ws)
	if err != nil {
		fmt.Fprintf(b, "The user mentions %s, but it cannot be listed: %v.", filepath.Base(uri), err)
		return
	}
	if !p.Info().Mode.IsDir() {
		fmt.Fprintf(b, "The user mentions %s as a folder, but it is not a directory.", p.Rel())
		return
	}
	res, err := search.Tree(ctx, search.TreeOptions{Root: p.Root(), Path: p.Rel(), Depth: folderDepth, MaxEntries: folderEntries})
	if err != nil {
		fmt.Fprintf(b, "The user mentions the folder %s, but it cannot be listed: %v.", p.Rel(), err)
		return
	}
	name := p.Rel()
	if name == "." {
		name = "the workspace root"
	}
	fmt.Fprintf(b, "The user mentions the folder %s (%d levels deep):\n", name, folderDepth)
	b.WriteString(fence(strings.TrimSuffix(res.Render(), "\n")))
}

// capText cuts s to at most max bytes, at the last line break when there is one in the second
// half, else on a UTF-8 boundary.
func capText(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	cut := s[:max]
	if i := strings.LastIndexByte(cut, '\n'); i >= max/2 {
		return cut[:i], true
	}
	for range utf8.UTFMax - 1 {
		if r, size := utf8.DecodeLastRuneInString(cut); r != utf8.RuneError || size != 1 {
			break
		}
		cut = cut[:len(cut)-1]
	}
	return cut, true
}

// fence puts text in a Markdown code block whose fence the text cannot close.
func fence(text string) string {
	f := "```"
	for strings.Contains(text, f) {
		f += "`"
	}
	return f + "\n" + text + "\n" + f
}

func sizeOf(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}
