package sandbox

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// gitCredEnv is a workspace whose repository has a token in its remote URL and a CI-style
// extraHeader, under a user whose global configuration rewrites URLs to carry another token.
func gitCredEnv(t *testing.T) (env, Policy) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("no git: %v", err)
	}
	e := newEnv(t)
	mustWrite(t, e.ws+"/.git/config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"+
		"[remote \"origin\"]\n\turl = https://me:ghp_wsToken0123@github.com/o/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"+
		"[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic Y2ktaGVhZGVyLXNlY3JldA==\n")
	os.MkdirAll(e.ws+"/.git/objects", 0o755)
	os.MkdirAll(e.ws+"/.git/refs/heads", 0o755)
	mustWrite(t, e.home+"/.gitconfig", "[user]\n\tname = t\n[url \"https://x-access-token:ghs_homeToken4567@github.com/\"]\n\tinsteadOf = https://github.com/\n")
	p := e.policy()
	p.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.home}
	p.EnvAllow = []string{"PATH", "HOME"}
	return e, p
}

var gitCredSecrets = []string{"ghp_wsToken0123", "Y2ktaGVhZGVyLXNlY3JldA", "ghs_homeToken4567"}

const gitCredScript = `cat .git/config ~/.gitconfig; git config --get remote.origin.url; git config --get-regexp '^url\.'; git config --get-regexp extraheader; git status --short >/dev/null && echo git-works`

// Issue 23: commands read the tokens in git remote URLs (.git/config, ~/.gitconfig's insteadOf)
// and CI's extraHeader. Under bubblewrap they see a redacted copy, and git still works.
func TestGitCredentialsRedactedInTheSandbox(t *testing.T) {
	sb := requireMode(t, ModeBwrap)
	e, p := gitCredEnv(t)
	r := runBash(t, sb, p, gitCredScript)
	for _, s := range gitCredSecrets {
		if strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("credential %q readable inside the sandbox\n%s", s, r)
		}
	}
	for _, want := range []string{"https://REDACTED@github.com/o/r.git", "url.https://REDACTED@github.com/.insteadof https://github.com/", "extraheader REDACTED", "git-works"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("sandbox output lacks %q\n%s", want, r)
		}
	}
	if b, _ := os.ReadFile(e.ws + "/.git/config"); !strings.Contains(string(b), "ghp_wsToken0123") {
		t.Errorf("the host's .git/config changed: %q", b)
	}
}

// Without bubblewrap the files cannot be redacted: they are named among the sensitive files not
// masked, so the policy asks for every command.
func TestGitCredentialsNamedInLandlockMode(t *testing.T) {
	sb := requireMode(t, ModeLandlock)
	_, p := gitCredEnv(t)
	sum := sb.Describe(p)
	for _, want := range []string{SensitiveUnmasked, ".git/config", "~/.gitconfig"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q: %s", want, sum)
		}
	}
}
