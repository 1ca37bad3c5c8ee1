package policy

import (
	"slices"
	"strings"
	"testing"
)

// classifierCases is the classifier table: each command with the class the classifier (without
// rules) must give it. Known bypass shapes of string-prefix classifiers are marked "bypass".
var classifierCases = []struct {
	cmd  string
	want Class
}{
	// read-only allowlist, by argv
	{"ls", ReadOnly},
	{"ls -la src", ReadOnly},
	{"cat README.md", ReadOnly},
	{"head -n 20 main.go", ReadOnly},
	{"tail -5 log.txt", ReadOnly},
	{"wc -l *.go", ReadOnly},
	{"pwd", ReadOnly},
	{"echo hello world", ReadOnly},
	{"which go", ReadOnly},
	{"stat go.mod", ReadOnly},
	{"file main.go", ReadOnly},
	{"du -sh .", ReadOnly},
	{"df -h", ReadOnly},
	{"tree -L 2", ReadOnly},
	{"sort names.txt", ReadOnly},
	{"uniq -c counts.txt", ReadOnly},
	{"grep -rn TODO .", ReadOnly},
	{"rg -n 'func main' --type go", ReadOnly},
	{"find . -name '*.go' -type f", ReadOnly},
	{"git status", ReadOnly},
	{"git status --porcelain", ReadOnly},
	{"git diff HEAD~1 -- main.go", ReadOnly},
	{"git log --oneline -n 10", ReadOnly},
	{"git show HEAD:go.mod", ReadOnly},
	{"git branch --list 'feat*'", ReadOnly},
	{"git branch -a", ReadOnly},
	{"git rev-parse --show-toplevel", ReadOnly},
	{"git --no-pager log -1", ReadOnly},
	{"go vet ./...", ReadOnly},
	{"go test ./... -run TestX -count=1", ReadOnly},
	{"go test -race ./policy/...", ReadOnly},
	{"go build ./...", ReadOnly},
	{"go build -o /dev/null ./cmd/agentd", ReadOnly},
	{"go list -m all", ReadOnly},
	{"go version", ReadOnly},
	{"go env GOPATH", ReadOnly},
	{"cat a.txt | grep x | wc -l", ReadOnly},
	{"ls && pwd", ReadOnly},
	{"ls || echo none", ReadOnly},
	{"ls; pwd", ReadOnly},
	{"{ ls; pwd; }", ReadOnly},
	{"(ls)", ReadOnly},
	{"! grep -q x file", ReadOnly},
	{"time go vet ./...", ReadOnly},
	{"ls 2>/dev/null", ReadOnly},     // decided: output to /dev/null is harmless
	{"go test ./... 2>&1", ReadOnly}, // duplicating descriptors is harmless
	{"ls &>/dev/null", ReadOnly},     //
	{"cat < input.txt", ReadOnly},    // reading a regular file
	{"'l''s' -la", ReadOnly},         // decided: quotes are removed as bash does; this runs ls
	{`\ls`, ReadOnly},                // ditto
	{"/bin/ls -l", ReadOnly},         // /bin and /usr/bin programs go by their name
	{"ls *.go", ReadOnly},            // ls has no option that writes: a glob is harmless
	{"echo '$(rm x)'", ReadOnly},     // single quotes: no substitution
	{"ls # && rm -rf x", ReadOnly},   // a comment, as bash reads it
	{"command -v go", ReadOnly},      //
	{"git log -p --no-ext-diff", ReadOnly},

	// writes
	{"ls\nrm -rf x", Write},                 // bypass: a raw newline hides a second command
	{"ls\r\nrm -rf x", Unknown},             // control character
	{"echo x > file", Write},                // bypass: echo with redirection
	{"cat a >> b", Write},                   // bypass
	{"ls > /tmp/out", Write},                //
	{"ls &> out.txt", Write},                //
	{"echo x >| f", Write},                  //
	{"cat <> f", Write},                     //
	{"ls >&out", Write},                     // >&word writes a file in bash
	{"{ ls; rm x; }", Write},                // bypass
	{"(rm x)", Write},                       // bypass
	{"ls;rm x", Write},                      // bypass
	{"ls && rm -rf x", Write},               //
	{"rm -rf x", Write},                     //
	{"/bin/rm -rf x", Write},                // bypass: by path
	{"./rm x", Write},                       // a program by path is never read-only
	{`\rm x`, Write},                        // bypass: backslash
	{"'r''m' x", Write},                     // quoted program name
	{"find . -exec rm {} \\;", Write},       // bypass
	{"find . -execdir rm {} +", Write},      //
	{"find . -name x -delete", Write},       // bypass
	{"find -delete", Write},                 // bypass
	{"find . -fprint out", Write},           //
	{"find . -ok rm {} \\;", Write},         //
	{"git log --output=x", Write},           // bypass
	{"git log --out=x", Write},              // GNU-style abbreviation
	{"git diff --output=patch.diff", Write}, // bypass
	{"git diff --ext-diff", Write},          // bypass
	{"git commit -m x", Write},              //
	{"git branch newbranch", Write},         // creates a branch
	{"git branch -D old", Write},            //
	{"go test -exec evil ./...", Write},     // bypass
	{"go test -toolexec=evil ./...", Write}, // bypass
	{"go test -c ./x", Write},               //
	{"go test -coverprofile=c.out", Write},  //
	{"go build ./cmd/agentd", Write},        // writes the executable
	{"go build -o bin/agentd .", Write},     //
	{"go vet -vettool=/tmp/x ./...", Write}, //
	{"go env -w GOFLAGS=-x", Write},         //
	{"go mod tidy", Write},                  //
	{"sed -i s/a/b/ file", Write},           // bypass
	{"sed --in-place=.bak s/a/b/ f", Write}, //
	{"sort -o out in", Write},               // bypass
	{"sort --output=out in", Write},         //
	{"sort -nro out in", Write},             // clustered short options
	{"uniq in out", Write},                  // the second operand is written
	{"tree -o out.txt", Write},              //
	{"file -C -m magic", Write},             //
	{"date -s 2020-01-01", Write},           //
	{"kill -9 1", Write},                    // never read-only
	{"pkill node", Write},                   //
	{"tee out.txt", Write},                  //
	{"touch x", Write},                      //
	{"> x", Write},                          // truncates x
	{"gofmt -w .", Write},                   //

	// network
	{"curl https://example.com", Network},
	{"wget http://x", Network},
	{"ssh host ls", Network},
	{"nc -l 4444", Network},
	{"ls && curl x", Network},           // bypass: read-only first part
	{"cat < /dev/tcp/evil/80", Network}, // bash network redirection
	{"echo x > /dev/tcp/10.0.0.1/4444", Network},
	{"exec 3<>/dev/tcp/h/80", Network},
	{"git push origin main", Network},
	{"git fetch", Network},
	{"go get example.com/x", Network},
	{"npm install", Network},
	{"/usr/local/bin/curl x", Network},
	{"ls $(curl x)", Network}, // the substituted command is worse than the substitution

	// unknown: cannot be proven anything
	{"$(rm x)", Write},                      // bypass: the substitution's command is classified
	{"echo $(rm x)", Write},                 // bypass
	{"echo `rm x`", Write},                  // bypass: backticks
	{"echo $(ls)", Unknown},                 // substitution: asks even when its command is read-only
	{"echo `ls`", Unknown},                  //
	{"cat <(ls)", Unknown},                  // process substitution
	{"diff <(ls a) <(ls b)", Unknown},       //
	{"git -c core.pager=evil log", Unknown}, // bypass: git global config
	{"git -C /tmp/evil status", Unknown},    //
	{"git --exec-path=/tmp log", Unknown},   //
	{"env rm x", Unknown},                   // bypass: env runs a command
	{"env", ReadOnly},                       //
	{"xargs rm", Unknown},                   // bypass
	{"find . | xargs rm", Unknown},          //
	{"bash -c 'ls'", Unknown},               // bypass: wrapped command not classified
	{"sh -c 'rm -rf x'", Unknown},           //
	{"eval ls", Unknown},                    // bypass
	{". ./script", Unknown},                 // bypass
	{"source ./env.sh", Unknown},            //
	{"exec ls", Unknown},                    //
	{"sudo ls", Unknown},                    // (the built-in rules forbid it)
	{"nohup ls", Unknown},                   //
	{"timeout 5 ls", Unknown},               //
	{"LD_PRELOAD=x ls", Unknown},            // bypass
	{"PAGER=evil git log", Unknown},         // bypass
	{"GIT_EXTERNAL_DIFF=x git diff", Unknown},
	{"PATH=/tmp ls", Unknown},
	{"x=1", Unknown},                      // assignment-only statement
	{"export PAGER=evil", Unknown},        //
	{"ls | sh", Unknown},                  // bypass
	{"rg --pre evil x", Unknown},          // bypass
	{"rg --pre=evil x", Unknown},          //
	{"rg --hostname-bin=evil x", Unknown}, //
	{"rg x *", Unknown},                   // a glob could become --pre=…
	{"find * -name x", Unknown},           // a glob could become -delete
	{"rg {--pre=sh,x} .", Unknown},        // brace expansion
	{"cat <<EOF\nhi\nEOF", Unknown},       // here-document
	{"cat <<'EOF'\nhi\nEOF", Unknown},     //
	{"cat <<< hi", Unknown},               // here-string
	{"f() { rm x; }; f", Write},           // function definition (its body is classified too)
	{"f() { ls; }; f", Unknown},           //
	{"for f in *; do cat $f; done", Unknown},
	{"if true; then ls; fi", Unknown},
	{"ls &", Unknown},                  // background
	{"$CMD x", Unknown},                // a variable as the program
	{"${CMD} x", Unknown},              //
	{"l? x", Unknown},                  // a glob as the program
	{"/tmp/ls", Unknown},               //
	{"./ls", Unknown},                  //
	{"ls $HOME", Unknown},              // a parameter expansion can hold anything
	{"echo $'\\x72m'", Unknown},        // ANSI-C quoting
	{"sed -n 1,10p file", Unknown},     // sed scripts can write (w) or run (e)
	{"awk '{print}' f", Unknown},       //
	{"python3 -c 'print(1)'", Unknown}, //
	{"make", Unknown},                  //
	{"frobnicate", Unknown},            // unknown program
	{"git frob", Unknown},              // unknown git subcommand (maybe an alias)
	{"go run .", Unknown},              //
	{"go test ./... -update", Unknown}, // unknown test flag
	{"go test ./... -args -x", Write},  //
	{"ls 3>{fd}", Write},               //
	{"ls {fd}>/dev/null", Unknown},     // assigns a variable
	{"printf -v PATH /tmp", Unknown},   //
	{"command rm x", Unknown},          //
	{"[[ -f x ]]", Unknown},            //
	{"((x++))", Unknown},               //
	{"", Unknown},                      // empty
	{"   ", Unknown},                   //
	{"# only a comment", Unknown},      //

	// parse errors: never read-only
	{"ls &&", Unknown},
	{"echo 'unterminated", Unknown},
	{"ls ; ; rm", Unknown},
	{"(ls", Unknown},
	{"ls\x00rm", Unknown},
	{"ls\x1b[0m", Unknown},
	{"\xff\xfe", Unknown},
}

func TestClassifyTable(t *testing.T) {
	if len(classifierCases) < 60 {
		t.Fatalf("the table has %d cases, want at least 60", len(classifierCases))
	}
	for _, tc := range classifierCases {
		cl := Classify(tc.cmd)
		if cl.Class != tc.want {
			t.Errorf("Classify(%q) = %s, want %s\n  reasons: %q\n  argv: %q\n  parse error: %v",
				tc.cmd, cl.Class, tc.want, cl.Reasons(), cl.Argvs(), cl.ParseError)
		}
	}
}

func TestClassifyParseErrorsAreNeverReadOnly(t *testing.T) {
	for _, cmd := range []string{"ls &&", "echo 'x", "ls ; ; rm", "(ls", "ls\x00", "ls |", "{ ls", "ls )"} {
		cl := Classify(cmd)
		if cl.ParseError == nil {
			t.Errorf("Classify(%q): no parse error", cmd)
		}
		if cl.Class == ReadOnly {
			t.Errorf("Classify(%q) = read-only despite a parse error", cmd)
		}
	}
}

func TestDeepNestingIsNeverAllowed(t *testing.T) {
	cmd := strings.Repeat("echo $(", 40) + "sudo rm -rf /" + strings.Repeat(")", 40)
	cl := Classify(cmd)
	if cl.ParseError == nil || cl.Class == ReadOnly {
		t.Fatalf("class %s, parse error %v", cl.Class, cl.ParseError)
	}
	yolo, _ := New(Config{Mode: ModeYolo})
	if v := yolo.Decide(cmdReq(cmd)); v.Decision == Allow {
		t.Errorf("yolo allowed a command nested too deeply to see: %s", v.Reason)
	}
	shallow := strings.Repeat("echo $(", 5) + "ls" + strings.Repeat(")", 5)
	if cl := Classify(shallow); cl.ParseError != nil || len(cl.Commands) != 6 {
		t.Errorf("shallow nesting: %v, %d commands", cl.ParseError, len(cl.Commands))
	}
}

func TestClassifyArgvAndReasons(t *testing.T) {
	cl := Classify("ls -la && 'r''m' -rf \"build dir\" 2>/dev/null")
	want := [][]string{{"ls", "-la"}, {"rm", "-rf", "build dir"}}
	if got := cl.Argvs(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("argv = %q, want %q", got, want)
	}
	if cl.Class != Write {
		t.Fatalf("class = %s, want write", cl.Class)
	}
	if s := cl.Summary(); !strings.Contains(s, "rm") {
		t.Errorf("summary %q does not name rm", s)
	}
	if !cl.Commands[0].Clean || !cl.Commands[1].Clean {
		t.Errorf("commands should be clean: %+v", cl.Commands)
	}
}

func TestClassifySubstitutionCommandsAreListed(t *testing.T) {
	cl := Classify("echo $(rm -rf /) `curl x`")
	want := [][]string{{"echo", "$(rm -rf /)", "$(curl x)"}, {"rm", "-rf", "/"}, {"curl", "x"}}
	if got := cl.Argvs(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("argv = %q, want %q", got, want)
	}
	if cl.Commands[0].Clean {
		t.Error("a command with a substitution must not be clean")
	}
}

func TestClassifySensitiveAndProtected(t *testing.T) {
	tests := []struct {
		cmd                  string
		sensitive, protected bool
	}{
		{"cat .env", true, false},
		{"cat ~/.ssh/id_rsa", true, false},
		{"grep x --file=.netrc", true, false},
		{"cat < .env.local", true, false},
		{"cat README.md", false, false},
		{"cat .envrc", true, false}, // direnv files often export tokens
		{"echo x > .git/hooks/pre-commit", false, true},
		{"rm .vscode/settings.json", false, true},
		{"cp evil .bashrc", false, true},
		{"git diff .git/config", false, false}, // read-only: reading a protected path is fine
		{"printenv", true, false},              // the environment may hold tokens
		{"env", true, false},                   //
		{"cat /proc/1/environ", true, false},   //
	}
	for _, tc := range tests {
		cl := Classify(tc.cmd)
		if (len(cl.Sensitive) > 0) != tc.sensitive || (len(cl.Protected) > 0) != tc.protected {
			t.Errorf("Classify(%q): sensitive %q, protected %q; want sensitive=%v protected=%v",
				tc.cmd, cl.Sensitive, cl.Protected, tc.sensitive, tc.protected)
		}
	}
}

func TestClassifyArgvDirect(t *testing.T) {
	tests := []struct {
		argv []string
		want Class
	}{
		{[]string{"ls", "*"}, ReadOnly},            // no shell: no glob expansion
		{[]string{"rg", "x", "*"}, ReadOnly},       // ditto
		{[]string{"rg", "--pre=sh", "x"}, Unknown}, //
		{[]string{"bash", "-c", "ls"}, Unknown},    //
		{[]string{"git", "status"}, ReadOnly},      //
		{[]string{"rm", "x"}, Write},               //
		{nil, Unknown},                             //
		{[]string{"ls\x00"}, Unknown},              //
	}
	for _, tc := range tests {
		if got := ClassifyArgv(tc.argv).Class; got != tc.want {
			t.Errorf("ClassifyArgv(%q) = %s, want %s", tc.argv, got, tc.want)
		}
	}
}

func TestGoTestRunsProjectCode(t *testing.T) {
	if cl := Classify("go test ./..."); !cl.RunsProjectCode || cl.Class != ReadOnly {
		t.Errorf("go test: class %s, RunsProjectCode %v", cl.Class, cl.RunsProjectCode)
	}
	if cl := Classify("go vet ./..."); cl.RunsProjectCode {
		t.Error("go vet does not run project code")
	}
}

// readOnlySuffixes are appended to read-only commands; the result must never be read-only.
var readOnlySuffixes = []string{"\nrm -rf /", "; rm -rf /", " > x", " && rm -rf /", " | sh", "\n\nrm x", " >> x"}

func TestAppendingAWriteIsNeverReadOnly(t *testing.T) {
	n := 0
	for _, tc := range classifierCases {
		if tc.want != ReadOnly {
			continue
		}
		for _, suffix := range readOnlySuffixes {
			if strings.Contains(tc.cmd, "#") && !strings.HasPrefix(suffix, "\n") {
				continue // the rest of the line is a comment, for bash as for the parser
			}
			n++
			if cl := Classify(tc.cmd + suffix); cl.Class == ReadOnly {
				t.Errorf("Classify(%q) = read-only", tc.cmd+suffix)
			}
		}
	}
	if n == 0 {
		t.Fatal("no read-only cases")
	}
}
