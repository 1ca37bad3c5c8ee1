package harness

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/agentd/agentd"

// frontEnds are the packages that serve a session to someone: the editor daemon and ACP.
// `agentd run` is the third front end, in cmd/agentd.
var frontEnds = []string{"daemon", "acp"}

// layerViolations checks the import direction cmd → front ends → harness → agent → tools →
// preview on a graph of module-relative package paths: no front end imports another, only
// front ends and cmd import rpc, harness or a front end's types, policy is read by the harness and
// above, front ends never import what the harness assembles (store, sandbox, tools, model
// clients), and the kernel (agent, tools, preview, ollama) knows nothing of them.
func layerViolations(graph map[string][]string) []string {
	top := func(p string) string { return strings.SplitN(p, "/", 2)[0] }
	isFront := func(p string) bool { return slices.Contains(frontEnds, top(p)) }
	isCmd := func(p string) bool { return top(p) == "cmd" }
	isKernel := func(p string) bool {
		switch top(p) {
		case "agent", "tools", "preview", "ollama":
			return true
		}
		return false
	}
	// isImplementation: what the harness assembles into a session, which no front end touches
	// (they see the harness, the kernel's types — events, results, documents, a question's
	// policy request — their wire package and internal).
	isImplementation := func(p string) bool {
		switch p {
		case "agent/store", "tools/sandbox", "tools/builtin", "tools/gocache", "tools/changeset", "ollama", "openai":
			return true
		}
		return strings.HasPrefix(p, "ollama/") || strings.HasPrefix(p, "openai/")
	}
	var out []string
	bad := func(from, to, why string) { out = append(out, from+" imports "+to+": "+why) }
	for from, imports := range graph {
		for _, to := range imports {
			if top(from) == top(to) {
				continue // inside one tree: agent → agent/store, tools/builtin → tools
			}
			switch {
			case isCmd(to):
				bad(from, to, "nothing imports a command")
			case isFront(to) && !isCmd(from):
				bad(from, to, "only cmd imports a front end (no front end imports another)")
			case top(to) == "harness" && !isFront(from) && !isCmd(from):
				bad(from, to, "only front ends and cmd import the harness")
			case top(to) == "rpc" && !isFront(from) && !isCmd(from):
				bad(from, to, "only front ends and cmd import rpc")
			case isFront(from) && isImplementation(to):
				bad(from, to, "a front end translates the harness's session; the store, sandbox, tools and model clients are the harness's to assemble")
			case top(to) == "policy" && isKernel(from):
				bad(from, to, "the kernel has no notion of approval policy")
			case top(from) == "tools" && (top(to) == "agent" || top(to) == "ollama"):
				bad(from, to, "tools sit below the agent loop")
			case top(from) == "agent" && top(to) == "ollama":
				bad(from, to, "the model adapter depends on the kernel, not the reverse")
			case top(from) == "preview" && top(to) != "internal":
				bad(from, to, "preview is the bottom layer")
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestImportDirection reads every package of the module with go/build (non-test files, this
// platform's build tags) and checks the layers.
func TestImportDirection(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found above harness/: %v", err)
	}
	graph := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" ||
			name == "node_modules" || name == "editors") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
			return filepath.SkipDir // another module, as `go list ./...` skips it
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		graph[rel] = nil
		for _, imp := range pkg.Imports {
			if p, ok := strings.CutPrefix(imp, module+"/"); ok {
				graph[rel] = append(graph[rel], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"harness", "daemon", "cmd/agentd", "agent", "tools", "preview", "rpc", "policy"} {
		if _, ok := graph[must]; !ok {
			t.Fatalf("package %s not found under %s: the walk is broken", must, root)
		}
	}
	if !slices.Contains(graph["daemon"], "harness") || !slices.Contains(graph["cmd/agentd"], "harness") {
		t.Errorf("daemon and cmd/agentd must build sessions through the harness; daemon imports %v, cmd/agentd %v",
			graph["daemon"], graph["cmd/agentd"])
	}
	for _, v := range layerViolations(graph) {
		t.Error(v)
	}
}

// TestLayerViolationsCatches shows the check fails on the imports it forbids.
func TestLayerViolationsCatches(t *testing.T) {
	graph := map[string][]string{
		"acp":           {"daemon", "harness", "rpc", "agent/store"},
		"daemon":        {"harness", "tools/sandbox", "tools/fsafe"},
		"harness":       {"rpc", "agent", "policy"},
		"agent":         {"policy", "ollama", "tools"},
		"tools/builtin": {"agent", "tools", "preview"},
		"preview":       {"tools"},
		"policy":        {"harness"},
		"cmd/agentd":    {"daemon", "acp", "harness", "rpc"},
	}
	want := []string{
		"acp imports agent/store: a front end translates the harness's session; the store, sandbox, tools and model clients are the harness's to assemble",
		"acp imports daemon: only cmd imports a front end (no front end imports another)",
		"agent imports ollama: the model adapter depends on the kernel, not the reverse",
		"agent imports policy: the kernel has no notion of approval policy",
		"daemon imports tools/sandbox: a front end translates the harness's session; the store, sandbox, tools and model clients are the harness's to assemble",
		"harness imports rpc: only front ends and cmd import rpc",
		"policy imports harness: only front ends and cmd import the harness",
		"preview imports tools: preview is the bottom layer",
		"tools/builtin imports agent: tools sit below the agent loop",
	}
	if got := layerViolations(graph); !slices.Equal(got, want) {
		t.Errorf("layerViolations:\n got %q\nwant %q", got, want)
	}
}
