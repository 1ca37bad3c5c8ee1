package policy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// bashBuiltins are the read-only commands bash runs without looking at PATH.
var bashBuiltins = set("echo", "printf", "pwd", "cd", "test", "[", "true", "false", ":", "type", "command")

// TestArgvMatchesBash checks the classifier's central assumption against the real bash: for every
// read-only command of the table (and a set of quoting tricks), bash runs exactly the programs,
// with exactly the argv, that the classifier found. Programs are stubs on an otherwise empty PATH
// that log their argv; the commands run in a temporary directory.
func TestArgvMatchesBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed: the differential test against bash did not run")
	}
	dir := t.TempDir()
	stubs := filepath.Join(dir, "bin")
	work := filepath.Join(dir, "work")
	for _, d := range []string{stubs, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "input.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stub := "#!" + bash + "\nprintf '%s\\0' \"${0##*/}\" \"$@\" > \"$STUBLOG/$$\"\n"
	names := map[string]bool{}
	for n := range readOnlySpecs {
		names[n] = true
	}
	for n := range writePrograms {
		names[n] = true
	}
	for n := range networkPrograms {
		names[n] = true
	}
	for n := range names {
		if bashBuiltins[n] || strings.ContainsAny(n, "/[:.") {
			continue
		}
		if err := os.WriteFile(filepath.Join(stubs, n), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	cmds := []string{
		`cat "a\"b" 'c d' e\ f "\q" "\\" 'x\y' "a"'b'c`,
		"cat a\\\nb",
		`cat "$'x'" '$(rm)' "\$(rm)" \$HOME`,
		`cat -- -x '' ""`,
		"cat\ta\t\tb",
		`c\at x`,
		`"cat" x`,
		`ca""t x`,
		`cat # rm -rf /`,
		"cat x # `rm`",
		`cat a\#b a#b`,
		`cat \~ '~' x~`,
		"cat x;cat y\ncat z",
		"cat x &&\ncat y",
		"cat x |\ncat y",
		`cat \{a,b\} '{a,b}'`,
		`cat a\*b 'a*b' "a?b"`,
		`grep -e "\n" '\n' \n`,
	}
	for _, tc := range classifierCases {
		if tc.want == ReadOnly {
			cmds = append(cmds, tc.cmd)
		}
	}
	for _, cmd := range cmds {
		cl := Classify(cmd)
		if cl.Class != ReadOnly {
			t.Errorf("%q: not read-only (%s): the differential test only runs read-only commands", cmd, cl.Summary())
			continue
		}
		var want [][]string
		skip := false
		for _, argv := range cl.Argvs() {
			if len(argv) == 0 || bashBuiltins[argv[0]] {
				continue
			}
			if strings.Contains(argv[0], "/") {
				skip = true // runs the real /bin program, not a stub
			}
			want = append(want, argv)
		}
		if skip {
			continue
		}
		got := runLogged(t, bash, stubs, work, cmd)
		sortArgvs(want)
		sortArgvs(got)
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%q:\n  bash ran       %q\n  classifier saw %q", cmd, got, want)
		}
	}
}

func runLogged(t *testing.T, bash, stubs, work, cmd string) [][]string {
	t.Helper()
	log, err := os.MkdirTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, bash, "-c", cmd)
	c.Dir = work
	c.Env = []string{"PATH=" + stubs, "STUBLOG=" + log, "HOME=" + work, "LC_ALL=C"}
	_ = c.Run() // the exit status is irrelevant: only what ran matters
	entries, err := os.ReadDir(log)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, e := range entries { // one file per stub process
		data, err := os.ReadFile(filepath.Join(log, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00"))
	}
	return out
}

func sortArgvs(a [][]string) {
	slices.SortFunc(a, func(x, y []string) int { return slices.Compare(x, y) })
}
