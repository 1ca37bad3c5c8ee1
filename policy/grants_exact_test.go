package policy

import (
	"slices"
	"testing"
)

// TestExactCommandGrant: the narrowest scope Suggest offers, "this exact command", covers that
// command only, not the same command with more arguments (a prefix grant would).
func TestExactCommandGrant(t *testing.T) {
	p := newTestPolicy(t, ModeAsk, "")
	req := cmdReq("npm test -- --ci")
	got := p.Suggest(req, p.Decide(req))
	if len(got) == 0 || !got[0].Exact || !slices.Equal(got[0].Prefix, []string{"npm", "test", "--", "--ci"}) {
		t.Fatalf("Suggest(npm test -- --ci)[0] = %+v, want the exact command", got)
	}
	if got[1].Exact {
		t.Errorf("the program-and-subcommand scope is marked exact: %+v", got[1])
	}
	if s := got[0].String(); s != "exact command `npm test -- --ci`" {
		t.Errorf("String() = %q", s)
	}
	if _, err := p.Grants().Add(got[0]); err != nil {
		t.Fatal(err)
	}
	if v := p.Decide(req); v.Decision != Allow {
		t.Errorf("the exact command after its grant: %+v", v)
	}
	for _, line := range []string{"npm test -- --ci --watch", "npm test -- --ci; rm -rf x", "npm test"} {
		if v := p.Decide(cmdReq(line)); v.Decision == Allow {
			t.Errorf("%q is allowed by the exact grant of `npm test -- --ci`: %+v", line, v)
		}
	}
}
