package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentd/agentd/tools"
)

// ErrBindingMismatch is returned by CheckBinding when the action about to run is not the one that
// was approved.
var ErrBindingMismatch = errors.New("the action changed after it was approved")

// ErrNoBinding is returned by CheckBinding when either binding is empty.
var ErrNoBinding = errors.New("the action has no binding")

// Bind computes the binding of the exact action a request describes. An approval is bound to it;
// the kernel recomputes it right before execution and calls CheckBinding.
//
// When the tool's preview carries a Binding, that is used as is (the tool knows its action best).
// Otherwise: for a command, the binding covers the shell source, the argv, the cwd, the sandbox
// description and the unsandboxed and network flags; for a file call, the canonical paths
// (symlinks resolved at the time of the call, so a swapped symlink changes the binding) and the
// SHA-256 of the old and new contents from the preview's diff. The result is "exec:<hex>",
// "file:<hex>" or "call:<hex>".
func Bind(req Request) string {
	if req.Preview != nil && req.Preview.Binding != "" {
		return req.Preview.Binding
	}
	switch req.access() {
	case tools.AccessRead, tools.AccessWrite:
		return bindFile(&req)
	}
	return bindExec(&req)
}

func bindExec(req *Request) string {
	b := struct {
		Tool        string   `json:"tool"`
		Command     string   `json:"command"`
		Argv        []string `json:"argv"`
		Cwd         string   `json:"cwd"`
		Sandbox     string   `json:"sandbox"`
		Unsandboxed bool     `json:"unsandboxed"`
		Network     bool     `json:"network"`
		Paths       []string `json:"paths"`
	}{Tool: req.Tool, Command: req.Command, Unsandboxed: req.unsandboxed(), Network: req.network()}
	if pc := req.commandPreview(); pc != nil {
		b.Argv, b.Cwd, b.Sandbox = pc.Argv, pc.Cwd, pc.Sandbox
		if pc.Cwd != "" {
			b.Cwd = canonicalPath(pc.Cwd)
		}
	}
	for _, p := range req.Permission.Paths {
		b.Paths = append(b.Paths, canonicalPath(p))
	}
	return "exec:" + hashJSON(b)
}

func bindFile(req *Request) string {
	type content struct {
		Old, New         string
		Created, Deleted bool
	}
	b := struct {
		Tool    string   `json:"tool"`
		Access  string   `json:"access"`
		Paths   []string `json:"paths"`
		Content *content `json:"content"`
	}{Tool: req.Tool, Access: string(req.access())}
	for _, p := range req.Permission.Paths {
		b.Paths = append(b.Paths, canonicalPath(p))
	}
	if req.Preview != nil && req.Preview.Diff != nil {
		d := req.Preview.Diff
		b.Content = &content{Old: sha(d.Old), New: sha(d.New), Created: d.Created, Deleted: d.Deleted}
	}
	kind := "file:"
	if len(b.Paths) == 0 && b.Content == nil {
		kind = "call:"
	}
	return kind + hashJSON(b)
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func hashJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		// Only plain strings, slices and bools are encoded: this cannot fail.
		panic("policy: binding: " + err.Error())
	}
	return sha(string(data))
}

// CheckBinding compares the binding that was approved with the binding of the action about to
// run. It returns nil only when both are set and equal.
func CheckBinding(approved, current string) error {
	if approved == "" || current == "" {
		return ErrNoBinding
	}
	if approved != current {
		return fmt.Errorf("%w (approved %s, now %s)", ErrBindingMismatch, short(approved), short(current))
	}
	return nil
}

func short(b string) string {
	if len(b) > 24 {
		return b[:24] + "…"
	}
	return b
}
