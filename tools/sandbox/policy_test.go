package sandbox

import (
	"slices"
	"strings"
	"testing"
)

func TestPolicyEnv(t *testing.T) {
	p := Policy{
		Env: []string{
			"PATH=/usr/bin", "HOME=/home/u", "LC_ALL=C", "LC_CTYPE=UTF-8", "SECRET_TOKEN=x",
			"SSH_AUTH_SOCK=/run/user/1/ssh", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1/bus",
			"GIT_TERMINAL_PROMPT=1", "PAGER=less", "XDG_RUNTIME_DIR=/run/user/1", "GOPATH=/home/u/go", "noequals",
		},
		SetEnv: []string{"FOO=bar", "PAGER=more"},
		TmpDir: "/tmp/session",
	}
	got := p.env()
	want := []string{"PATH=/usr/bin", "HOME=/home/u", "LC_ALL=C", "LC_CTYPE=UTF-8", "GOPATH=/home/u/go",
		"GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "FOO=bar", "PAGER=more", "TMPDIR=/tmp/session"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("env:\n got %q\nwant %q", got, want)
	}
	if rd := p.runtimeDir(); rd != "/run/user/1" {
		t.Errorf("runtimeDir = %q", rd)
	}
	sec := p.secretPaths()
	for _, w := range []string{"/home/u/.ssh", "/home/u/.config/gh", "/home/u/.netrc", "/run/user/1"} {
		if !slices.Contains(sec, w) {
			t.Errorf("secret paths lack %s: %q", w, sec)
		}
	}

	p = Policy{Env: []string{"PATH=/bin", "HOME=/h"}, EnvAllow: []string{}, SecretPaths: []string{}}
	if got := p.env(); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "PATH=") }) {
		t.Errorf("empty allow list kept PATH: %q", got)
	}
	if got := p.secretPaths(); len(got) != 0 {
		t.Errorf("empty secret list: %q", got)
	}
}
