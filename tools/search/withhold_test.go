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

// shown returns the files r shows and those it should: searched for the secret's pattern, none
// for another.
func shown(r *GrepResult, pattern string, searched []string) (got, want []string) {
	for _, f := range r.Files {
		got = append(got, f.Path)
	}
	if pattern == "hunter2" {
		want = searched
	}
	return got, want
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
					if got, want := shown(r, pattern, c.searched); !slices.Equal(got, want) {
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

// A hard link to .env, or to a file outside Root, is withheld like .env itself (issue 23: grep
// with no path or a broad glob printed it), in both engines, from disk and from an open editor
// document, counted whatever the pattern; named as the path, it is searched (the caller asked).
func TestGrepWithholdsHardLinks(t *testing.T) {
	root := secretFixture(t)
	outside := filepath.Join(t.TempDir(), "credentials.txt")
	if err := os.WriteFile(outside, []byte("aws_secret=hunter2-outside\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"notes.txt": filepath.Join(root, ".env"), "docs/aws.txt": outside, "open.txt": filepath.Join(root, "README.md"),
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, link)), 0o755)
		if err := os.Link(target, filepath.Join(root, link)); err != nil {
			t.Skipf("no hard links here: %v", err)
		}
	}
	// README.md itself now has two links, as open.txt (open in the editor) does.
	ov := memOverlay{filepath.Join(root, "open.txt"): secretText + " from the buffer\n"}
	for _, c := range []struct {
		name     string
		opts     GrepOptions
		searched []string
		withheld []string
	}{
		{"no path", GrepOptions{}, []string{"keys/id_rsa.pub", "src/app.go"},
			[]string{"README.md", "certs/server.pem", "config/prod.env", "docs/aws.txt", "keys/id_rsa"}},
		{"broad glob", GrepOptions{Include: []string{"**/*.txt"}}, nil, []string{"docs/aws.txt", "notes.txt", "open.txt"}},
		{"dir path", GrepOptions{Paths: []string{"docs"}}, nil, []string{"docs/aws.txt"}},
	} {
		for _, e := range enginesForTest(t) {
			for _, pattern := range []string{"hunter2", "no such text anywhere"} {
				o := c.opts
				o.Root, o.Pattern, o.Engine, o.Withhold, o.WithholdLinked, o.Overlay = root, pattern, e, sensitive, true, ov
				r, err := Grep(context.Background(), o)
				if err != nil {
					t.Fatalf("%s/%s: %v", c.name, e, err)
				}
				text := r.Render()
				if strings.Contains(text, "hunter2") && pattern != "hunter2" || strings.Contains(text, "hunter2-outside") || strings.Contains(text, "from the buffer") {
					t.Errorf("%s/%s: a hard link's content is shown:\n%s", c.name, e, text)
				}
				if got, want := shown(r, pattern, c.searched); !slices.Equal(got, want) {
					t.Errorf("%s/%s %q: files %q, want %q", c.name, e, pattern, got, want)
				}
				n := len(c.withheld)
				if c.name == "no path" {
					n = 7 // and notes.txt, open.txt beyond the sample of five
				}
				if r.Withheld != n || !slices.Equal(r.WithheldSample, c.withheld) || r.WithheldLinks == 0 {
					t.Errorf("%s/%s %q: withheld %d %q (%d links), want %d %q", c.name, e, pattern, r.Withheld, r.WithheldSample, r.WithheldLinks, n, c.withheld)
				}
				if !strings.Contains(text, "hard link") {
					t.Errorf("%s/%s: the result does not say hard links were withheld:\n%s", c.name, e, text)
				}
			}
		}
	}
	for _, e := range enginesForTest(t) {
		r, err := Grep(context.Background(), GrepOptions{Root: root, Pattern: "hunter2", Engine: e, Paths: []string{"docs/aws.txt"}})
		if err != nil || r.TotalFiles != 1 || r.Withheld != 0 {
			t.Errorf("%s: a hard link named as the path (the caller asked): %v %s", e, err, r.Render())
		}
	}
}
