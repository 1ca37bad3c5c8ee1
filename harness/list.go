package harness

import (
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/tools"
)

// Sessions lists the stored sessions, whichever front end made them (`agentd run`, the editors,
// ACP), each with a title: its own, or else the start of its last prompt.
func (rt *Runtime) Sessions() ([]store.Summary, error) {
	list, err := rt.store.List()
	for i := range list {
		list[i].Title = SessionTitle(list[i].Title, list[i].LastPrompt)
	}
	return list, err
}

// SessionTitle is a session's title for a list: its own, or else its prompt's first 60 bytes on
// one line.
func SessionTitle(title, prompt string) string {
	if title != "" {
		return title
	}
	if len(prompt) > 60 {
		prompt = prompt[:60] + "…"
	}
	return strings.ReplaceAll(prompt, "\n", " ")
}

// CanonicalDir is a directory's path as sessions record their workspace (absolute, symbolic links
// resolved).
func CanonicalDir(p string) string { return tools.Canonical(filepath.Clean(p)) }
