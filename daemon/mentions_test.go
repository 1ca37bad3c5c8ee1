package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
	"go.lsp.dev/protocol"
)

// mentionFiles is a workspace with one file of each case a mention meets.
func mentionFiles() map[string]string {
	files := map[string]string{
		"cart.go":           "package shop\n\nfunc Total() int { return 1 } // ON-DISK\n",
		"notes.md":          "MENTIONED-NOTES-CONTENT\n",
		".npmrc":            "//registry.npmjs.org/:_authToken=SECRET-TOKEN\n",
		"src/a/b.go":        "package a\n",
		"src/c.go":          "package src\n",
		"src/.gitignore":    "ignored.txt\n",
		"src/ignored.txt":   "x\n",
		"node_modules/x.js": "",
	}
	var big strings.Builder
	for i := 0; big.Len() < 40<<10; i++ {
		fmt.Fprintf(&big, "line %05d of a large file\n", i)
	}
	big.WriteString("BIG-FILE-TAIL\n")
	files["big.txt"] = big.String()
	// 270 files in 6 directories: under the per-directory cap, over the total cap.
	for d := range 6 {
		for i := range 45 {
			files[fmt.Sprintf("many/d%d/f%03d.txt", d, i)] = "x\n"
		}
	}
	return files
}

func fileItem(env *testEnv, rel string) rpc.ContextItem {
	return rpc.ContextItem{Kind: rpc.ContextFile, URI: fileURI(filepath.Join(env.ws, rel))}
}

// promptWithContext sends a prompt with context items and returns the user message the model got.
func promptWithContext(t *testing.T, env *testEnv, ed *fakeEditor, text string, items []rpc.ContextItem) string {
	t.Helper()
	sid := ed.newSession()
	env.ollama.Enqueue(ollamatest.Text("ok"))
	var res rpc.SessionPromptResult
	ed.mustCall(rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: sid, Text: text, Context: items}, &res)
	if u := ed.turnEnd(); u.Type != rpc.UpdateTurnCompleted {
		t.Fatalf("turn ended with %+v", u)
	}
	chats := env.ollama.Chats()
	if len(chats) == 0 {
		t.Fatal("no chat request reached the model")
	}
	msgs := chats[len(chats)-1].Request.Messages
	return msgs[len(msgs)-1].Content
}

// TestMentionsReachTheModel: each kind of mention is rendered into the prompt the model gets: a
// file's content (the editor's unsaved buffer when open), a large file capped with a note, a
// sensitive file named but not read, a folder's tree with the ignore rules and the entry cap, a
// symbol with its kind, name, lines and text; a file outside the workspace is not read.
func TestMentionsReachTheModel(t *testing.T) {
	env := newEnv(t, mentionFiles())
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("OUTSIDE-CONTENT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ed := env.editor(true)
	ed.open("cart.go", "package shop\n\nfunc Total() int { return 2 } // UNSAVED-BUFFER\n")
	rng := protocol.Range{Start: protocol.Position{Line: 2}, End: protocol.Position{Line: 2, Character: 40}}
	symText := "func Total() int { return 2 }"
	items := []rpc.ContextItem{
		fileItem(env, "cart.go"),
		fileItem(env, "notes.md"),
		fileItem(env, ".npmrc"),
		fileItem(env, "big.txt"),
		{Kind: rpc.ContextFile, URI: fileURI(outside)},
		{Kind: rpc.ContextFolder, URI: fileURI(filepath.Join(env.ws, "src"))},
		{Kind: rpc.ContextFolder, URI: fileURI(filepath.Join(env.ws, "many"))},
		{Kind: rpc.ContextSymbol, URI: fileURI(filepath.Join(env.ws, "cart.go")), Range: &rng, Text: symText, Name: "Total", SymbolKind: "function"},
	}
	user := promptWithContext(t, env, ed, "look at @cart.go @notes.md @.npmrc @big.txt @src/ @many/ @#Total", items)

	if !strings.Contains(user, "look at @cart.go @notes.md @.npmrc @big.txt @src/ @many/ @#Total\n\n") {
		t.Errorf("the user's text with its @ tokens is not kept as typed:\n%s", user)
	}
	for _, want := range []string{
		"The user mentions the file cart.go (the editor's buffer):\n```\npackage shop",
		"UNSAVED-BUFFER",
		"The user mentions the file notes.md:\n```\nMENTIONED-NOTES-CONTENT\n\n```",
		"The user mentions the file .npmrc. Its content is not included: it is sensitive",
		"Reading it with the read tool asks the user first.",
		"The user mentions the file big.txt:\n```\nline 00000 of a large file\n",
		"Read the rest with the read tool.)",
		"The user mentions the folder src (3 levels deep):\n```\nsrc/\n",
		"  a/\n    b.go\n",
		"  c.go\n",
		"The user mentions the folder many (3 levels deep):",
		"not shown: at most",
		"The user mentions function Total in cart.go, lines 3–3:\n```\n" + symText + "\n```",
		"outside.txt, but it cannot be read:",
	} {
		if !strings.Contains(user, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, user)
		}
	}
	for _, never := range []string{"SECRET-TOKEN", "ON-DISK", "BIG-FILE-TAIL", "OUTSIDE-CONTENT", "ignored.txt"} {
		if strings.Contains(user, never) {
			t.Errorf("the prompt holds %q, which must not be there:\n%s", never, user)
		}
	}
	if n := strings.Count(user, "\n    f"); n < folderEntries-10 || n > folderEntries {
		t.Errorf("the folder many lists %d of its 270 files, want about %d (the cap)", n, folderEntries)
	}
	if len(user) > 2*mentionBytes+16<<10 {
		t.Errorf("the prompt is %d bytes: the caps do not hold", len(user))
	}
}

// TestUnknownContextKindIsRefused: a context item of a kind the daemon does not know is an
// invalid-params error, and no turn starts.
func TestUnknownContextKindIsRefused(t *testing.T) {
	env := newEnv(t, map[string]string{"a.go": "package a\n"})
	ed := env.editor(true)
	sid := ed.newSession()
	err := ed.call(rpc.MethodSessionPrompt, rpc.SessionPromptParams{SessionID: sid, Text: "hi",
		Context: []rpc.ContextItem{{Kind: "secrets", URI: fileURI(filepath.Join(env.ws, "a.go"))}}}, nil)
	if err == nil || !strings.Contains(err.Error(), `unknown kind "secrets"`) {
		t.Fatalf("prompt with an unknown context kind: err = %v, want an invalid-params error", err)
	}
	if n := len(env.ollama.Chats()); n != 0 {
		t.Errorf("%d chat requests after a refused prompt", n)
	}
}

// TestEditorContextCaps: a symbol's text over the cap is cut with a note, text holding a fence
// cannot close the block, and the selection and active-file items read as before.
func TestEditorContextCaps(t *testing.T) {
	root := t.TempDir()
	long := strings.Repeat("x := 1 // 0123456789012345678901234567890123456789\n", 1000)
	rng := protocol.Range{Start: protocol.Position{Line: 9}, End: protocol.Position{Line: 1009}}
	ec, err := editorContext(context.Background(), []rpc.ContextItem{
		{Kind: rpc.ContextSymbol, URI: fileURI(filepath.Join(root, "m.go")), Range: &rng, Text: long, Name: "main", SymbolKind: "function"},
		{URI: fileURI(filepath.Join(root, "s.md")), Range: &rng, Text: "a\n```\nb"},
		{URI: fileURI(filepath.Join(root, "m.go"))},
	}, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := ec.Text
	if want := []string{"@#main", "s.md:10-1009", "m.go"}; !slices.Equal(ec.Labels, want) {
		t.Errorf("labels = %q, want %q", ec.Labels, want)
	}
	if !strings.Contains(got, "The user mentions function main in m.go, lines 10–1009:\n```\nx := 1") ||
		!strings.Contains(got, "only the first") || len(got) > mentionBytes+2048 {
		t.Errorf("a long symbol is not capped with a note (%d bytes):\n%s", len(got), got[len(got)-600:])
	}
	if !strings.Contains(got, "Selected in s.md, lines 10–1009:\n````\na\n```\nb\n````") {
		t.Errorf("a selection holding a fence is not fenced safely:\n%s", got[len(got)-300:])
	}
	if !strings.HasSuffix(got, "The user is looking at m.go.\n") {
		t.Errorf("the active file item changed:\n%s", got[len(got)-300:])
	}
}

// TestContextLabels: each context item is labelled as the editors' chips label it.
func TestContextLabels(t *testing.T) {
	root := t.TempDir()
	uri := func(rel string) string { return fileURI(filepath.Join(root, rel)) }
	rng := func(l1, c1, l2, c2 int) *protocol.Range {
		return &protocol.Range{Start: protocol.Position{Line: uint32(l1), Character: uint32(c1)}, End: protocol.Position{Line: uint32(l2), Character: uint32(c2)}}
	}
	cases := []struct {
		item rpc.ContextItem
		want string
	}{
		{rpc.ContextItem{URI: uri("cart.go")}, "cart.go"},
		{rpc.ContextItem{URI: uri("pkg/cart.go"), Range: rng(2, 0, 4, 7)}, "pkg/cart.go:3-5"},
		// Whole lines 3–5 as VS Code selects them and Neovim's :'<,'>Agent sends them: the end is
		// at the start of line 6.
		{rpc.ContextItem{URI: uri("cart.go"), Range: rng(2, 0, 5, 0)}, "cart.go:3-5"},
		{rpc.ContextItem{URI: uri("cart.go"), Range: rng(2, 4, 2, 9)}, "cart.go:3"},
		{rpc.ContextItem{Kind: rpc.ContextFile, URI: uri("greet.go")}, "@greet.go"},
		{rpc.ContextItem{Kind: rpc.ContextFolder, URI: uri("pkg")}, "@pkg/"},
		{rpc.ContextItem{Kind: rpc.ContextSymbol, URI: uri("cart.go"), Name: "Total", Range: rng(2, 0, 9, 1)}, "@#Total"},
		{rpc.ContextItem{URI: "file:///elsewhere/notes.md"}, "/elsewhere/notes.md"},
	}
	for _, c := range cases {
		if got := contextLabel(c.item, root); got != c.want {
			t.Errorf("contextLabel(%+v) = %q, want %q", c.item, got, c.want)
		}
	}
}
