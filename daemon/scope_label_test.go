package daemon

import (
	"testing"

	"github.com/agentd/agentd/policy"
)

// TestCommandScopeLabels: the label editors show for a command grant says what it grants: the
// exact command, or every command starting with the words.
func TestCommandScopeLabels(t *testing.T) {
	ls := &liveSession{}
	exact := ls.scopeOf(policy.Grant{Scope: policy.ScopeCommand, Prefix: []string{"go", "test", "./..."}, Exact: true})
	if exact.Label != "this exact command: `go test ./...`" {
		t.Errorf("exact command grant label = %q", exact.Label)
	}
	prefix := ls.scopeOf(policy.Grant{Scope: policy.ScopeCommand, Prefix: []string{"go", "test"}})
	if prefix.Label != "commands starting with `go test`" {
		t.Errorf("prefix grant label = %q", prefix.Label)
	}
}
