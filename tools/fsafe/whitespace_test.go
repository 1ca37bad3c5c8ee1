package fsafe

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/tools"
)

// A path to nothing with a name that starts or ends with white space is refused, with the path
// the model most likely meant (a formatting slip created " test.txt"); a file or directory that
// exists under such a name is found as usual.
func TestPathWithStrayWhiteSpaceIsRefusedUnlessItExists(t *testing.T) {
	e := newEnv(t, Options{})
	mustWrite(t, filepath.Join(e.ws, "odd ", "kept.txt"), "x")
	mustWrite(t, filepath.Join(e.ws, " lead.txt"), "x")
	for _, tc := range []struct {
		path, meant string
	}{
		{" test.txt", "test.txt"},
		{"test.txt ", "test.txt"},
		{"sub/\tnew.go", "sub/new.go"},
		{"sub /new.go", "sub/new.go"},
		{"new.txt\n", "new.txt"},
	} {
		_, err := e.w.Resolve(tc.path)
		var te *tools.Error
		if !errors.As(err, &te) || te.Type != tools.InvalidArgs || !strings.Contains(te.Message, "white space") || !strings.Contains(te.Message, `"`+tc.meant+`"`) {
			t.Errorf("Resolve(%q) = %v; want invalid_args naming %q", tc.path, err, tc.meant)
		}
	}
	for _, ok := range []string{" lead.txt", "odd /kept.txt", "odd /new.txt", "a.txt", "new file.txt"} {
		if _, err := e.w.Resolve(ok); err != nil {
			t.Errorf("Resolve(%q): %v", ok, err)
		}
	}
}
