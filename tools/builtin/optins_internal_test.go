package builtin

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentd/agentd/tools"
)

// TestReadableSensitiveIsNarrow: of the sensitive paths an approval names, only regular files
// with one link below a workspace root are unmasked (a link also names its target, which must
// qualify too); everything else stays masked.
func TestReadableSensitiveIsNarrow(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{root + "/sub", root + "/secrets", outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(root + "/.env")
	write(root + "/sub/.env")
	write(root + "/secrets/prod.env")
	write(outside + "/.env")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(root+"/secrets/prod.env", root+"/.env.prod"))
	must(os.Symlink(outside+"/.env", root+"/.env.out"))
	must(os.Symlink(root+"/sub", root+"/link"))
	must(os.Link(root+"/.env", root+"/.env.hard"))
	write(root + "/.env.single")
	roots := []string{root}
	for _, c := range []struct {
		path string
		want []string
	}{
		{root + "/sub/.env", []string{root + "/sub/.env"}},
		{root + "/sub/../sub/.env", []string{root + "/sub/.env"}},
		{root + "/link/.env", []string{root + "/sub/.env"}}, // the name the sandbox's walk finds
		{root + "/.env.prod", []string{root + "/.env.prod", root + "/secrets/prod.env"}},
		{root + "/.env.single", []string{root + "/.env.single"}},
		{root + "/.env.out", nil},    // a link leading outside the workspace
		{root + "/.env.hard", nil},   // a hard link: the same content under another name
		{root + "/.env", nil},        // its other name
		{root + "/secrets", nil},     // a directory
		{root + "/missing.env", nil}, // nothing to unmask
		{outside + "/.env", nil},     // outside every root
		{".env", nil},                // relative
		{root + "/.env\x00x", nil},   // NUL
		{root + "/../outside/.env", nil},
	} {
		if got := readableSensitive(c.path, roots); !slices.Equal(got, c.want) {
			t.Errorf("readableSensitive(%q) = %q, want %q", c.path, got, c.want)
		}
	}
	o := optInsOf(&tools.Approval{UnixSockets: []string{"/run/docker.sock"},
		ReadableSensitive: []string{root + "/sub/.env", root + "/link/.env", root + "/.env.out"}}, roots)
	if !slices.Equal(o.UnixSockets, []string{"/run/docker.sock"}) || !slices.Equal(o.ReadableSensitive, []string{root + "/sub/.env"}) {
		t.Errorf("optInsOf = %+v", o)
	}
	if o := optInsOf(nil, roots); !o.empty() {
		t.Errorf("optInsOf(nil) = %+v", o)
	}
}
