package policy

import (
	"strings"
	"testing"
)

// FuzzClassify checks that the classifier never panics, never calls a command that does not parse
// read-only (or lets any mode allow it), and that appending a second command to a read-only one
// always makes it not read-only. The seed corpus is in testdata/fuzz/FuzzClassify; the table's
// commands are added too.
func FuzzClassify(f *testing.F) {
	for _, tc := range classifierCases {
		f.Add(tc.cmd)
	}
	rules := DefaultRules()
	yolo, err := New(Config{Mode: ModeYolo})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		cl := Classify(cmd)
		rcl := rules.Classify(cmd)
		_ = ClassifyArgv(strings.Fields(cmd))
		_ = cl.Summary()
		_ = cl.Reasons()

		if (cl.ParseError != nil) != (rcl.ParseError != nil) {
			t.Fatalf("%q: rules changed the parse result", cmd)
		}
		if cl.ParseError != nil {
			if cl.Class == ReadOnly || rcl.Class == ReadOnly || rcl.RuleAllowed {
				t.Fatalf("%q does not parse (%v) but is %s", cmd, cl.ParseError, cl.Class)
			}
			if v := yolo.Decide(Request{Tool: "bash", Command: cmd, SandboxAvailable: true}); v.Decision == Allow {
				t.Fatalf("%q does not parse but yolo allows it: %s", cmd, v.Reason)
			}
		}
		if rcl.Class == ReadOnly && cl.Class != ReadOnly {
			t.Fatalf("%q: rules made a command read-only", cmd)
		}
		if cl.Class != ReadOnly {
			return
		}
		// A trailing backslash joins the next line (bash does the same), and a comment swallows
		// the rest of its line: the suffixes that cannot be absorbed are tried.
		suffixes := []string{"\n\nrm -rf /"}
		if !strings.HasSuffix(cmd, `\`) {
			suffixes = append(suffixes, "\nrm -rf /")
			if !strings.Contains(cmd, "#") {
				suffixes = append(suffixes, "; rm -rf /", " > x", " && rm -rf /", " | sh")
			}
		}
		for _, s := range suffixes {
			if got := Classify(cmd + s); got.Class == ReadOnly {
				t.Fatalf("%q is read-only, and so is %q (argv %q)", cmd, cmd+s, got.Argvs())
			}
		}
	})
}
