package builtin_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
)

// grep never prints what files that may hold secrets contain, unless it is pointed at one (which
// the policy treats like reading it: it asks); then it searches it.
func TestGrepDoesNotPrintSecrets(t *testing.T) {
	for _, eng := range engines(t) {
		t.Run(string(eng), func(t *testing.T) {
			f := newFixture(t, withConfig(func(c *builtin.Config) { c.Search.Engine = eng }))
			f.write(".env", "API_KEY=sk-live-0123\n")
			f.write("keys/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\nsk-live-4567\n")
			f.write("main.go", "package main // uses API_KEY\n")
			for _, args := range []map[string]any{
				{"pattern": "sk-live|API_KEY"},
				{"pattern": "sk-live|API_KEY", "glob": ".env*"},
				{"pattern": "sk-live", "output_mode": "files_with_matches"},
				{"pattern": "sk-live", "output_mode": "count"},
				{"pattern": "sk-live", "path": "keys"},
			} {
				r := f.mustOK("grep", args)
				text := r.Text()
				if strings.Contains(text, "sk-live") || strings.Contains(text, "BEGIN OPENSSH") {
					t.Errorf("%v: a secret is printed:\n%s", args, text)
				}
				if !strings.Contains(text, "not searched because") || !strings.Contains(text, "read it or grep with its path") {
					t.Errorf("%v: the result does not say what was skipped and how to see it:\n%s", args, text)
				}
			}

			// Named as the path: classified like a read of it, and searched.
			pm := f.tool("grep").(tools.PermissionMetadata)
			for path, sensitive := range map[string]bool{"keys/id_rsa": true, ".env": true, "keys": false, "": false} {
				raw, _ := json.Marshal(map[string]any{"pattern": "sk-live", "path": path})
				args, err := f.tool("grep").Spec().Decode(raw, nil)
				if err != nil {
					t.Fatal(err)
				}
				if p := pm.Permission(&tools.Call{Args: args}); p.Access != tools.AccessRead || p.Sensitive != sensitive {
					t.Errorf("grep path %q: %+v", path, p)
				}
			}
			r := f.mustOK("grep", map[string]any{"pattern": "sk-live", "path": "keys/id_rsa"})
			if !strings.Contains(r.Text(), "keys/id_rsa:2:sk-live-4567") {
				t.Errorf("a named secret is not searched:\n%s", r.Text())
			}
		})
	}
}

func TestGlobSaysWhichFilesMayHoldSecrets(t *testing.T) {
	f := newFixture(t)
	f.write(".env", "API_KEY=sk-live-0123\n")
	f.write("main.go", "package main\n")
	r := f.mustOK("glob", map[string]any{"pattern": "**/{.env*,*.go}"})
	if !strings.Contains(r.Text(), ".env\n") || !strings.Contains(r.Text(), "1 listed file may hold secrets (.env): reading or grepping one asks") {
		t.Errorf("glob:\n%s", r.Text())
	}
	if strings.Contains(r.Text(), "sk-live") {
		t.Errorf("glob printed a secret:\n%s", r.Text())
	}
}
