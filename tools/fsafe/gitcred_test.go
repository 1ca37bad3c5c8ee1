package fsafe

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/tools"
)

func TestRedactGitCredentials(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"\turl = https://user:ghp_secret@github.com/o/r.git\n", "\turl = https://REDACTED@github.com/o/r.git\n"},
		{"\turl = https://ghp_tokenonly@github.com/o/r\n", "\turl = https://REDACTED@github.com/o/r\n"},
		{`[url "https://x-access-token:ghs_abc@github.com/"]` + "\n\tinsteadOf = https://github.com/\n", `[url "https://REDACTED@github.com/"]` + "\n\tinsteadOf = https://github.com/\n"},
		{"[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3M=\n", "[http \"https://github.com/\"]\n\textraheader = REDACTED\n"},
		{"\tExtraHeader=Authorization: Bearer abc\n", "\tExtraHeader=REDACTED\n"},
		{"\turl = ssh://git:hunter2@host/r\n", "\turl = ssh://REDACTED@host/r\n"},
	} {
		got, found := RedactGitCredentials([]byte(c.in))
		if string(got) != c.want || !found {
			t.Errorf("RedactGitCredentials(%q) = %q, %v; want %q", c.in, got, found, c.want)
		}
	}
	for _, clean := range []string{
		"[remote \"origin\"]\n\turl = https://github.com/o/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
		"\turl = ssh://git@github.com/o/r\n\turl = git@github.com:o/r.git\n\temail = me@example.com\n",
		"\textraheader = " + Redacted + "\n",
	} {
		if got, found := RedactGitCredentials([]byte(clean)); found || string(got) != clean {
			t.Errorf("RedactGitCredentials(%q) = %q, %v: nothing to redact", clean, got, found)
		}
	}
}

func TestGitConfigName(t *testing.T) {
	for rel, want := range map[string]bool{
		".git/config": true, "sub/.git/config": true, ".git/modules/lib/config": true, ".git/worktrees/w/config.worktree": true,
		".gitmodules": true, "vendor/x/.gitmodules": true, ".GITCONFIG": true, "home/.config/git/config": true,
		"config": false, "app/config": false, ".config/app/config": false, "config.worktree": false, ".gitignore": false,
	} {
		if got := GitConfigName(rel); got != want {
			t.Errorf("GitConfigName(%q) = %v, want %v", rel, got, want)
		}
	}
}

// A git configuration that holds a credential is read like .netrc: the read asks. Without one,
// reading it is free; a bare repository's config counts by its shape.
func TestGitConfigWithACredentialIsSensitive(t *testing.T) {
	e := newEnv(t, Options{})
	files := map[string]string{
		".git/config":             "[remote \"origin\"]\n\turl = https://me:ghp_0123@github.com/o/r.git\n",
		"clean/.git/config":       "[remote \"origin\"]\n\turl = https://github.com/o/r.git\n",
		"mirror.git/config":       "[url \"https://ghp_4567@github.com/\"]\n\tinsteadOf = https://github.com/\n",
		"mirror.git/HEAD":         "ref: refs/heads/main\n",
		"app/config":              "url = https://me:pw@db.example/\n", // not a git configuration
		".gitmodules":             "[submodule \"x\"]\n\turl = https://ghp_89@github.com/o/x\n",
		"ci/.git/config.worktree": "[http]\n\textraHeader = AUTHORIZATION: basic abc\n",
	}
	for rel, content := range files {
		mustWrite(t, filepath.Join(e.ws, rel), content)
	}
	for rel, want := range map[string]bool{".git/config": true, "clean/.git/config": false, "mirror.git/config": true,
		"app/config": false, ".gitmodules": true, "ci/.git/config.worktree": true} {
		p, err := e.w.Resolve(rel)
		if err != nil {
			t.Fatal(err)
		}
		perm := p.Permission(tools.AccessRead)
		if perm.Sensitive != want || want && !strings.Contains(perm.Reason, "credential") {
			t.Errorf("%s: read permission %+v, want sensitive %v", rel, perm, want)
		}
	}
}

// A git configuration that now holds a credential is stale without its content: the model reads
// it again, which asks.
func TestStaleWithholdsAGitCredential(t *testing.T) {
	e := newEnv(t, Options{})
	cfg := filepath.Join(e.ws, ".git", "config")
	mustWrite(t, cfg, "[core]\n\tbare = false\n")
	if _, err := e.fs.Read(bg, ".git/config"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, cfg, "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://me:ghp_0123@github.com/o/r\n")
	_, err := e.fs.PrepareWrite(bg, ".git/config")
	if d := staleDetails(t, err); !d.Withheld || strings.Contains(err.Error(), "ghp_0123") || !strings.Contains(err.Error(), "holds a credential") {
		t.Errorf("PrepareWrite after a credential appeared: %+v, %v", d, err)
	}
}
