package fsafe_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
)

// An edit tool's life: read, prepare (validate/preview), gate, commit.
func Example() {
	dir, _ := os.MkdirTemp("", "fsafe-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\r\n\r\nfunc main() {}\r\n"), 0o644)

	ws, err := fsafe.NewWorkspace(dir) // once per workspace, shared by sessions
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	queue := &tools.MutationQueue{}                  // once per workspace, shared by sessions
	fs := fsafe.New(ws, fsafe.Options{Queue: queue}) // once per session
	ctx := context.Background()

	// Permission metadata for the gate.
	p, _ := fs.Resolve("main.go")
	fmt.Println("write protected:", p.Permission(tools.AccessWrite).Protected)
	p, _ = fs.Resolve(".git/hooks/pre-commit")
	fmt.Println(".git write protected:", p.Permission(tools.AccessWrite).Protected)

	// Editing before reading is refused.
	_, err = fs.PrepareWrite(ctx, "main.go")
	fmt.Println(tools.TypeOf(err, tools.OK))

	// The read tool records what the model saw.
	if _, err := fs.Read(ctx, "main.go"); err != nil {
		panic(err)
	}

	// The edit tool: Validate/Preview call PrepareWrite and compute the new content on the
	// normalized text; Execute calls Commit after the gate.
	tg, err := fs.PrepareWrite(ctx, "main.go")
	if err != nil {
		panic(err)
	}
	text, format := fsafe.Normalize(string(tg.Content))
	text = strings.Replace(text, "func main() {}", "func main() {\n\tprintln(\"hi\")\n}", 1)
	if _, err := fs.Commit(ctx, tg, []byte(format.Restore(text))); err != nil {
		panic(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "main.go"))
	fmt.Printf("%q\n", b)

	// Outside the workspace.
	_, err = fs.Read(ctx, "../../etc/passwd")
	fmt.Println(tools.TypeOf(err, tools.OK))

	// Output:
	// write protected: false
	// .git write protected: true
	// read_first
	// "package main\r\n\r\nfunc main() {\r\n\tprintln(\"hi\")\r\n}\r\n"
	// permission_denied
}
