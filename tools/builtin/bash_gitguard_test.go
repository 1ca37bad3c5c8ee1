//go:build linux

package builtin_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/sandbox"
)

// forSandboxModes runs fn once per sandbox mode. A mode this machine cannot provide is skipped
// with the reason, except under CI=true, where .ci/run installs what every mode needs.
func forSandboxModes(t *testing.T, fn func(t *testing.T, sb *sandbox.Sandbox)) {
	for _, m := range []sandbox.Mode{sandbox.ModeBwrap, sandbox.ModeLandlock} {
		t.Run(m.String(), func(t *testing.T) {
			sb, err := sandbox.New(sandbox.Options{Mode: m})
			if err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("sandbox mode %s unavailable in CI: %v", m, err)
				}
				t.Skipf("SANDBOX MODE %s UNAVAILABLE on this machine, not tested: %v", m, err)
			}
			fn(t, sb)
		})
	}
}

// daemonPolicy is the sandbox policy the daemon gives commands (harness/runtime.go): only
// .git/hooks and .git/config of the top-level repository are read-only, so that git can work.
func daemonPolicy(t *testing.T) sandbox.Policy {
	return sandbox.Policy{TmpDir: t.TempDir(), ProtectedPaths: sandbox.DefaultProtectedPaths}
}

// gitFixture is a fixture over a git workspace (gitWorkspace) whose bash runs in sb under the
// daemon's policy, the git guard quarantining into quarantine ("": nowhere, it deletes).
func gitFixture(t *testing.T, sb *sandbox.Sandbox, quarantine string, more ...func(*builtin.BashConfig)) *fixture {
	t.Helper()
	f := newFixture(t, withBash(func(b *builtin.BashConfig) {
		b.Runner, b.Sandbox = nil, sb
		b.Policy = daemonPolicy(t)
		b.QuarantineDir = quarantine
		for _, m := range more {
			m(b)
		}
	}))
	gitWorkspace(t, f.dir)
	return f
}

// bwrapSandbox is the bubblewrap sandbox. A machine without it skips the test with the reason,
// except under CI=true, where .ci/run installs it.
func bwrapSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeBwrap})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bubblewrap unavailable in CI: %v", err)
		}
		t.Skipf("BUBBLEWRAP UNAVAILABLE on this machine, not tested: %v", err)
	}
	return sb
}

// userGit runs the user's own git, unsandboxed, as the user would after the command; its
// failure is returned, not fatal (a repository the guard took apart may make git complain).
func userGit(dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@u", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@u")
	out, err := cmd.CombinedOutput()
	return fmt.Sprintf("$ git %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
}

func mustUserGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out := userGit(dir, args...); !strings.Contains(out, "): <nil>\n") {
		t.Fatal(out)
	}
}

// gitWorkspace makes a repository with a commit, the extensions a sparse checkout turns on
// (so that config.worktree is read), and an existing nested repository nested/.
func gitWorkspace(t *testing.T, dir string) {
	t.Helper()
	mustUserGit(t, dir, "init", "-q")
	mustUserGit(t, dir, "config", "core.repositoryformatversion", "1")
	mustUserGit(t, dir, "config", "extensions.worktreeConfig", "true")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustUserGit(t, dir, "add", "a.txt")
	mustUserGit(t, dir, "commit", "-qm", "one")
	mustUserGit(t, dir, "init", "-q", "nested")
	mustUserGit(t, filepath.Join(dir, "nested"), "commit", "-q", "--allow-empty", "-m", "one")
}

// gitAttacks are commands that plant git metadata naming a program (evil.sh, which touches
// a marker), and the directories where the user's git then runs it.
var gitAttacks = []struct {
	name, script string
	dirs         []string // where the user runs git status (and commit) afterwards
	undone       string   // a path the report must name
}{
	{"commondir", `mkdir planted && cp -a .git/objects .git/refs .git/HEAD planted/ &&
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = %s\n' "$PWD/evil.sh" > planted/config &&
echo ../planted > .git/commondir`, []string{"."}, ".git/commondir"},
	{"config.worktree", `printf '[core]\n\tfsmonitor = %s\n' "$PWD/evil.sh" > .git/config.worktree`, []string{"."}, ".git/config.worktree"},
	{"nested repository", `git init -q sub && git -C sub config core.fsmonitor "$PWD/evil.sh"`, []string{".", "sub"}, "sub/.git"},
	{"gitdir file", `git init -q --separate-git-dir="$PWD/gd" d && git -C d config core.fsmonitor "$PWD/evil.sh"`, []string{".", "d"}, "d/.git"},
	{"hooksPath in an existing nested repository", `mkdir -p hk && cp evil.sh hk/pre-commit && cp evil.sh hk/post-checkout &&
git -C nested config core.hooksPath "$PWD/hk" && git -C nested config core.fsmonitor "$PWD/evil.sh"`, []string{"nested"}, "nested/.git/config"},
}

// evilScript is the command that writes evil.sh, which touches marker when run.
func evilScript(marker string) string {
	return fmt.Sprintf("printf '#!/bin/sh\\ntouch %s\\necho\\n' > evil.sh && chmod +x evil.sh && ", marker)
}

// TestGitAttackPayloadsAreLive checks the attacks themselves: planted directly, without agentd,
// each one makes the user's git run evil.sh. (Otherwise the guard test below proves nothing.)
func TestGitAttackPayloadsAreLive(t *testing.T) {
	for _, a := range gitAttacks {
		t.Run(a.name, func(t *testing.T) {
			ws, _ := filepath.EvalSymlinks(t.TempDir())
			gitWorkspace(t, ws)
			marker := filepath.Join(t.TempDir(), "ran")
			cmd := exec.Command("bash", "-c", evilScript(marker)+a.script)
			cmd.Dir = ws
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("planting: %v\n%s", err, out)
			}
			var log strings.Builder
			for _, d := range a.dirs {
				log.WriteString(userGit(filepath.Join(ws, d), "status"))
				log.WriteString(userGit(filepath.Join(ws, d), "commit", "-q", "--allow-empty", "-m", "x"))
			}
			if _, err := os.Stat(marker); err != nil {
				t.Errorf("the attack does not run its program without the guard:\n%s", log.String())
			}
		})
	}
}

// TestBashUndoesPlantedGitMetadata is the attack through the real tool and the real sandbox, in
// every sandbox mode: whatever the command planted, the user's git runs nothing of it, and the
// result says what was undone.
func TestBashUndoesPlantedGitMetadata(t *testing.T) {
	forSandboxModes(t, func(t *testing.T, sb *sandbox.Sandbox) {
		for _, a := range gitAttacks {
			t.Run(a.name, func(t *testing.T) {
				quarantine := t.TempDir()
				f := gitFixture(t, sb, quarantine)
				marker := filepath.Join(t.TempDir(), "ran")
				r := f.call("bash", bash(evilScript(marker)+a.script))
				var log strings.Builder
				for _, d := range a.dirs {
					log.WriteString(userGit(filepath.Join(f.dir, d), "status"))
					log.WriteString(userGit(filepath.Join(f.dir, d), "commit", "-q", "--allow-empty", "-m", "x"))
				}
				if _, err := os.Stat(marker); err == nil {
					t.Errorf("the user's git ran the program the command planted:\n%s\n%s", r.Text(), log.String())
				}
				wantType(t, r, tools.PermissionDenied, "agentd undid", " "+a.undone+" ")
				if !strings.Contains(r.Text(), "moved to "+quarantine) && !strings.Contains(r.Text(), "restored") {
					t.Errorf("neither quarantined nor restored:\n%s", r.Text())
				}
				if d, ok := r.Details.(builtin.BashDetails); !ok || len(d.GitUndone) == 0 {
					t.Errorf("details do not list what was undone: %+v", r.Details)
				}
			})
		}
	})
}

// TestBashGitGuardRunsWhenTheCommandTimesOut: the undo happens however the command ends.
func TestBashGitGuardRunsWhenTheCommandTimesOut(t *testing.T) {
	forSandboxModes(t, func(t *testing.T, sb *sandbox.Sandbox) {
		f := gitFixture(t, sb, "", func(b *builtin.BashConfig) { b.Grace = 200 * time.Millisecond })
		r := f.call("bash", map[string]any{"command": "git init -q sub && exec sleep 1000", "timeout": 1})
		wantType(t, r, tools.Timeout, "timed out", "created sub/.git (a nested git repository): deleted")
		if _, err := os.Lstat(filepath.Join(f.dir, "sub/.git")); !os.IsNotExist(err) {
			t.Errorf("sub/.git survived a timed-out command: %v", err)
		}
	})
}

// TestBashOrdinaryGitIsLeftAlone: git's own writes (index, objects, refs, logs, stash, a
// scratch repository under $TMPDIR) are not reported.
func TestBashOrdinaryGitIsLeftAlone(t *testing.T) {
	forSandboxModes(t, func(t *testing.T, sb *sandbox.Sandbox) {
		f := gitFixture(t, sb, t.TempDir())
		script := `set -e
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@a GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@a
echo b > a.txt && git add a.txt && git commit -qm two
git switch -q -c feature && echo c > a.txt && git stash -q && git stash pop -q && git commit -qam three
git tag v1 && git log --oneline | wc -l && git status --short
git -C nested commit -q --allow-empty -m two
git init -q "$TMPDIR/scratch" && git -C "$TMPDIR/scratch" commit -q --allow-empty -m x && echo scratch ok`
		r := f.call("bash", bash(script))
		wantType(t, r, tools.OK, "3\n", "scratch ok", "[exit status 0]")
		if strings.Contains(r.Text(), "agentd") || len(r.Details.(builtin.BashDetails).GitUndone) > 0 {
			t.Errorf("ordinary git reported:\n%s", r.Text())
		}
		mustUserGit(t, f.dir, "status")
	})
}

// TestBashStoppedWhenTheUsersGitReplacesItsConfig: the user's git saves .git/config by renaming
// config.lock over it, which detaches the sandbox's read-only mount on it; the command is stopped
// before it can write there, the result says why, and the user's change stays.
func TestBashStoppedWhenTheUsersGitReplacesItsConfig(t *testing.T) {
	quarantine := t.TempDir()
	f := gitFixture(t, bwrapSandbox(t), quarantine)
	ready, gate := filepath.Join(f.dir, "ready"), filepath.Join(f.dir, "gate")
	for _, p := range []string{ready, gate} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	results := make(chan tools.Result, 1)
	go func() {
		results <- f.call("bash", bash(`echo ready > ready; read x < gate
			echo '[core] fsmonitor = "touch /tmp/x"' >> .git/config && echo "WROTE config"`))
	}()
	// The command's mounts are in place once it writes to the FIFO.
	if b, err := os.ReadFile(ready); err != nil || string(b) != "ready\n" {
		t.Fatalf("the command did not start: %q %v", b, err)
	}
	mustUserGit(t, f.dir, "config", "user.name", "the user")
	var r tools.Result
	select {
	case r = <-results:
	case <-time.After(30 * time.Second):
		g, err := os.OpenFile(gate, os.O_RDWR, 0) // lets the command go on: the escape
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		g.WriteString("go\n")
		r = <-results
		t.Errorf("the command kept running after the user's git replaced .git/config:\n%s", r.Text())
	}
	wantType(t, r, tools.ExecFailed, "stopped by agentd: "+filepath.Join(f.dir, ".git/config")+" changed outside the sandbox")
	if d, ok := r.Details.(builtin.BashDetails); !ok || len(d.Unprotected) != 1 {
		t.Errorf("details: %+v", r.Details)
	}
	// The git guard cannot tell the user's change from one the command might have slipped in
	// before it was stopped: it restores the version from before the command and keeps the one
	// it found in the quarantine, where the user's change is not lost.
	b, _ := os.ReadFile(filepath.Join(f.dir, ".git/config"))
	if strings.Contains(string(b), "fsmonitor") || strings.Contains(string(b), "the user") {
		t.Errorf(".git/config after the command:\n%s", b)
	}
	found, _ := filepath.Glob(filepath.Join(quarantine, "*", "root0", ".git", "config"))
	if len(found) != 1 {
		t.Fatalf("the version found is not in the quarantine: %q\n%s", found, r.Text())
	}
	if q, _ := os.ReadFile(found[0]); !strings.Contains(string(q), "the user") || strings.Contains(string(q), "fsmonitor") {
		t.Errorf("quarantined .git/config:\n%s", q)
	}
	if !strings.Contains(r.Text(), "the version found moved to "+found[0]) {
		t.Errorf("the result does not say where the version found is:\n%s", r.Text())
	}
}
