package search

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/tools/fsafe"
)

const secretText = "TOKEN=hunter2-secret"

// secretFixture is a workspace with files that may hold secrets beside ordinary ones; every
// file contains secretText.
func secretFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, rel := range []string{
		".env", ".env.local", "keys/id_rsa", "keys/id_rsa.pub", "certs/server.pem", "config/prod.env",
		".ssh/config", "src/app.go", "README.md",
	} {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("line one\n"+secretText+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func sensitive(rel string) bool {
	_, s, _ := fsafe.Classify(rel)
	return s
}

func TestGrepWithholdsSecretsInBothEngines(t *testing.T) {
	root := secretFixture(t)
	ov := memOverlay{filepath.Join(root, "open.env"): secretText + " from the buffer\n"}
	cases := []struct {
		name     string
		opts     GrepOptions
		searched []string // files with a match that may be shown
		withheld int
		sample   []string
	}{
		{"no path", GrepOptions{}, []string{"README.md", "keys/id_rsa.pub", "src/app.go"},
			4, []string{"certs/server.pem", "config/prod.env", "keys/id_rsa", "open.env"}},
		{"glob .env*", GrepOptions{Include: []string{".env*"}}, nil,
			2, []string{".env", ".env.local"}},
		{"hidden", GrepOptions{Hidden: true}, []string{"README.md", "keys/id_rsa.pub", "src/app.go"},
			7, []string{".env", ".env.local", ".ssh/config", "certs/server.pem", "config/prod.env"}},
		{"dir path", GrepOptions{Paths: []string{"keys"}}, []string{"keys/id_rsa.pub"},
			1, []string{"keys/id_rsa"}},
	}
	for _, c := range cases {
		for _, mode := range []OutputMode{ModeContent, ModeFiles, ModeCount} {
			var results []*GrepResult
			for _, e := range enginesForTest(t) {
				for _, pattern := range []string{"hunter2", "no such text anywhere"} {
					o := c.opts
					o.Root, o.Pattern, o.Engine, o.Mode, o.Withhold, o.Overlay = root, pattern, e, mode, sensitive, ov
					r, err := Grep(context.Background(), o)
					if err != nil {
						t.Fatalf("%s/%s/%s: %v", c.name, mode, e, err)
					}
					text := r.Render()
					if strings.Contains(text, "hunter2") && pattern != "hunter2" || strings.Contains(text, "from the buffer") {
						t.Errorf("%s/%s/%s: a secret's content is shown:\n%s", c.name, mode, e, text)
					}
					var got []string
					for _, f := range r.Files {
						got = append(got, f.Path)
					}
					want := c.searched
					if pattern != "hunter2" {
						want = nil
					}
					if !slices.Equal(got, want) {
						t.Errorf("%s/%s/%s %q: files %q, want %q", c.name, mode, e, pattern, got, want)
					}
					// The count does not depend on the pattern: no oracle on a secret's content.
					if r.Withheld != c.withheld || !slices.Equal(r.WithheldSample, c.sample) {
						t.Errorf("%s/%s/%s %q: withheld %d %q, want %d %q", c.name, mode, e, pattern, r.Withheld, r.WithheldSample, c.withheld, c.sample)
					}
					if !strings.Contains(text, "not searched because") || !strings.Contains(text, "read it or grep with its path") {
						t.Errorf("%s/%s/%s: the result does not say what was skipped and how to see it:\n%s", c.name, mode, e, text)
					}
					if pattern == "hunter2" {
						results = append(results, r)
					}
				}
			}
			if len(results) == 2 && !reflect.DeepEqual(comparable(results[0]), comparable(results[1])) {
				t.Errorf("%s/%s: engines differ:\n%s", c.name, mode, diffResults(results[0], results[1]))
			}
		}
	}
}

// A file named as the path is searched (the caller asked the user first), and without Withhold
// nothing is skipped.
func TestGrepNamedSecretIsSearched(t *testing.T) {
	root := secretFixture(t)
	for _, e := range enginesForTest(t) {
		r, err := Grep(context.Background(), GrepOptions{Root: root, Pattern: "hunter2", Engine: e, Paths: []string{"keys/id_rsa"}})
		if err != nil || r.TotalFiles != 1 || r.Withheld != 0 || !strings.Contains(r.Render(), "keys/id_rsa:2:"+secretText) {
			t.Errorf("%s: %v %s", e, err, r.Render())
		}
	}
}
