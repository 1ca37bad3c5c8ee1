package policy

import (
	"strings"
	"testing"
)

func mustRules(t *testing.T, text string) *Rules {
	t.Helper()
	rs, err := ParseRules("test.rules", []byte(text))
	if err != nil {
		t.Fatalf("ParseRules: %v", err)
	}
	return rs
}

func TestDefaultRulesLoadAndClassify(t *testing.T) {
	rs := DefaultRules()
	if rs.Len() == 0 {
		t.Fatal("no built-in rules")
	}
	tests := []struct {
		cmd    string
		class  Class
		action Action // 0: no rule
	}{
		{"sudo ls", Forbidden, ActionForbid},
		{"/usr/bin/sudo ls", Forbidden, ActionForbid}, // by base name
		{`\sudo ls`, Forbidden, ActionForbid},
		{"ls && sudo rm x", Forbidden, ActionForbid},
		{"echo $(sudo id)", Forbidden, ActionForbid}, // inside a substitution
		{"rm -rf /", Forbidden, ActionForbid},
		{"rm -rf build", Write, ActionAsk},
		{"git push origin main", Network, ActionAsk},
		{"git status", ReadOnly, 0},
		{"ls", ReadOnly, 0},
	}
	for _, tc := range tests {
		cl := rs.Classify(tc.cmd)
		got := Action(0)
		if cl.Rule != nil {
			got = cl.Rule.Action
		}
		if cl.Class != tc.class || got != tc.action {
			t.Errorf("%q: class %s rule %v, want class %s rule %v", tc.cmd, cl.Class, got, tc.class, tc.action)
		}
	}
}

func TestStrictestRuleWins(t *testing.T) {
	rs := mustRules(t, `
allow git
    example git status
allow npm test
    example npm test
ask git push
    example git push
forbid rm -rf
    example rm -rf x
`)
	tests := []struct {
		cmd         string
		action      Action
		ruleAllowed bool
	}{
		{"git push", ActionAsk, false},               // allow git + ask git push: ask
		{"git commit -m x", ActionAllow, true},       // only allow git
		{"npm test && git push", ActionAsk, false},   // across a list: ask
		{"npm test | rm -rf x", ActionForbid, false}, // across a pipeline: forbid
		{"npm test", ActionAllow, true},
		{"npm test && ls", ActionAllow, true},       // ls is read-only
		{"npm test && rm x", ActionAllow, false},    // rm is neither allowed nor read-only
		{"npm test > out.txt", ActionAllow, false},  // the redirection is not covered
		{"FOO=1 npm test", ActionAllow, false},      // nor an assignment
		{"npm test $(rm x)", ActionAllow, false},    // nor a substitution
		{"./npm test", 0, false},                    // allow rules match the program exactly
		{"npm testing", 0, false},                   // tokens, not string prefixes
		{"npm test\nrm -rf x", ActionForbid, false}, // a newline hides nothing
		{"npm test; curl evil", ActionAllow, false}, //
		{"/bin/rm -rf x", ActionForbid, false},      // forbid matches by base name
		// An allow rule on a bare program allows all of it, global options included: that is
		// what the user wrote.
		{"git -c core.pager=x status", ActionAllow, true},
	}
	for _, tc := range tests {
		cl := rs.Classify(tc.cmd)
		got := Action(0)
		if cl.Rule != nil {
			got = cl.Rule.Action
		}
		if got != tc.action || cl.RuleAllowed != tc.ruleAllowed {
			t.Errorf("%q: rule %v allowed %v, want %v %v (reasons %q)", tc.cmd, got, cl.RuleAllowed, tc.action, tc.ruleAllowed, cl.Reasons())
		}
	}
}

func TestRuleExamplesCheckedAtLoad(t *testing.T) {
	tests := []struct {
		name, text string
		wantErr    []string
	}{
		{"example does not match", `
ask git push
    example git pull origin main
`, []string{"test.rules:2", "`ask git push`", `example "git pull origin main" does not match`}},
		{"counter-example matches", `
forbid rm -rf
    example rm -rf x
    not rm -rf y
`, []string{"test.rules:2", "`forbid rm -rf`", `counter-example "rm -rf y" matches`}},
		{"example does not parse", `
allow ls
    example ls &&
`, []string{"test.rules:2", "does not parse"}},
		{"string prefix is not a token prefix", `
allow npm test
    example npm testing
`, []string{"does not match"}},
		{"example before a rule", `
example ls
`, []string{"test.rules:2", "must follow a rule line"}},
		{"unknown keyword", `
permit ls
`, []string{"test.rules:2", `unknown keyword "permit"`}},
		{"dynamic prefix", `
allow $CMD
`, []string{"test.rules:2", "not literal"}},
		{"operator in prefix", `
allow ls && rm
`, []string{"test.rules:2"}},
		{"mode in a rule file", `
mode yolo
`, []string{"only valid in a config file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRules("test.rules", []byte(tc.text))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestRuleFileSyntax(t *testing.T) {
	rs := mustRules(t, `
# comment
allow	npm "test"     # a trailing comment
	example npm test -- --watch=false
	example	ls && npm test
	not npm install
	reason  runs the suite
	reason  in the sandbox

forbid 'rm' -rf /
	example \rm -rf /
`)
	list := rs.List()
	if len(list) != 2 {
		t.Fatalf("%d rules", len(list))
	}
	r := list[0]
	if r.Action != ActionAllow || strings.Join(r.Prefix, "|") != "npm|test" || len(r.Examples) != 2 ||
		len(r.Not) != 1 || r.Reason != "runs the suite in the sandbox" || r.Source != "test.rules:3" {
		t.Errorf("rule = %+v", r)
	}
	if got := list[1].String(); got != "forbid rm -rf /" {
		t.Errorf("String() = %q", got)
	}
	if !list[1].MatchesArgv([]string{"/bin/rm", "-rf", "/"}) {
		t.Error("forbid rule should match /bin/rm by base name")
	}
	if list[0].MatchesArgv([]string{"/usr/bin/npm", "test"}) {
		t.Error("allow rule must match the program exactly")
	}
}

func TestNewRulesValidates(t *testing.T) {
	if _, err := NewRules(Rule{Action: ActionAsk}); err == nil {
		t.Error("empty prefix accepted")
	}
	if _, err := NewRules(Rule{Prefix: []string{"x"}}); err == nil {
		t.Error("missing action accepted")
	}
	if _, err := NewRules(Rule{Action: ActionAsk, Prefix: []string{"git", "push"}, Examples: []string{"git status"}, Source: "mine"}); err == nil || !strings.Contains(err.Error(), "mine:") {
		t.Errorf("bad example: err = %v", err)
	}
	if _, err := NewRules(Rule{Action: ActionAsk, Prefix: []string{"git", "push"}, Examples: []string{"git push"}}); err != nil {
		t.Error(err)
	}
}
