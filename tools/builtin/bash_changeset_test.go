//go:build linux

package builtin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/preview"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/changeset"
	"github.com/agentd/agentd/tools/sandbox"
)

// daemonPolicy is the sandbox policy the daemon gives commands (harness/runtime.go), with a
// state directory of the test's own (the layers live there).
func daemonPolicy(t *testing.T) sandbox.Policy {
	return sandbox.Policy{TmpDir: t.TempDir(), StateDir: t.TempDir()}
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

// layerFixture is a fixture whose bash runs in the bubblewrap sandbox under the daemon's policy.
func layerFixture(t *testing.T, more ...func(*builtin.BashConfig)) *fixture {
	t.Helper()
	sb := bwrapSandbox(t)
	return newFixture(t, withBash(func(b *builtin.BashConfig) {
		b.Runner, b.Sandbox = nil, sb
		b.Policy = daemonPolicy(t)
		for _, m := range more {
			m(b)
		}
	}))
}

// userGit runs the user's own git, unsandboxed, as the user would after the command; its
// failure is returned, not fatal.
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

// gitAttacks are commands that plant git metadata naming a program (evil.sh, which touches a
// marker), and the directories where the user's git then runs it. The last four are the shapes
// the git guard did not recognise (issue 22): objects/refs as a symlink or an executable file
// next to HEAD and a config with core.fsmonitor, in a subdirectory or at the root of a
// workspace that is not a repository.
var gitAttacks = []struct {
	name, script string
	plain        bool     // the workspace is not a git repository
	dirs         []string // where the user runs git status (and commit) afterwards
	held         string   // a change the result must hold
}{
	{"commondir", `mkdir planted && cp -a .git/objects .git/refs .git/HEAD planted/ &&
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = %s\n' "$PWD/evil.sh" > planted/config &&
echo ../planted > .git/commondir`, false, []string{"."}, ".git/commondir"},
	{"config.worktree", `printf '[core]\n\tfsmonitor = %s\n' "$PWD/evil.sh" > .git/config.worktree`, false, []string{"."}, ".git/config.worktree"},
	{"nested repository", `git init -q sub && git -C sub config core.fsmonitor "$PWD/evil.sh"`, false, []string{".", "sub"}, "sub/.git"},
	{"gitdir file", `git init -q --separate-git-dir="$PWD/gd" d && git -C d config core.fsmonitor "$PWD/evil.sh"`, false, []string{".", "d"}, "d/.git"},
	{"hooksPath in an existing nested repository", `mkdir -p hk && cp evil.sh hk/pre-commit && cp evil.sh hk/post-checkout &&
git -C nested config core.hooksPath "$PWD/hk" && git -C nested config core.fsmonitor "$PWD/evil.sh"`, false, []string{"nested"}, "nested/.git/config"},
	{"symlinked objects in a subdirectory", `mkdir -p s/refs && ln -s ../.git/objects s/objects && echo 'ref: refs/heads/main' > s/HEAD &&
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = %s\n' "$PWD/evil.sh" > s/config`, false, []string{"s"}, "s/HEAD"},
	{"executable objects in a subdirectory", `mkdir -p s/refs && cp evil.sh s/objects && echo 'ref: refs/heads/main' > s/HEAD &&
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = %s\n' "$PWD/evil.sh" > s/config`, false, []string{"s"}, "s/HEAD"},
	{"symlinked objects at the root", `git init -q --bare /tmp/b && ln -s /tmp/b/objects objects && mkdir refs && echo 'ref: refs/heads/main' > HEAD &&
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = %s\n' "$PWD/evil.sh" > config`, true, []string{"."}, "HEAD"},
	{"executable objects at the root", `mkdir refs && cp evil.sh objects && echo 'ref: refs/heads/main' > HEAD &&
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = %s\n' "$PWD/evil.sh" > config`, true, []string{"."}, "HEAD"},
}

// evilScript is the command that writes evil.sh, which touches marker when run.
func evilScript(marker string) string {
	return fmt.Sprintf("printf '#!/bin/sh\\ntouch %s\\necho\\n' > evil.sh && chmod +x evil.sh && ", marker)
}

// runsEvil runs the user's git where the attack expects it and reports whether evil.sh ran.
func runsEvil(ws string, dirs []string, marker string) (bool, string) {
	var log strings.Builder
	for _, d := range dirs {
		log.WriteString(userGit(filepath.Join(ws, d), "status"))
		log.WriteString(userGit(filepath.Join(ws, d), "commit", "-q", "--allow-empty", "-m", "x"))
	}
	_, err := os.Stat(marker)
	return err == nil, log.String()
}

// TestGitAttackPayloadsAreLive checks the attacks themselves: planted directly, without agentd,
// each one makes the user's git run evil.sh. (Otherwise the test below proves nothing.)
func TestGitAttackPayloadsAreLive(t *testing.T) {
	for _, a := range gitAttacks {
		t.Run(a.name, func(t *testing.T) {
			ws, _ := filepath.EvalSymlinks(t.TempDir())
			if !a.plain {
				gitWorkspace(t, ws)
			}
			marker := filepath.Join(t.TempDir(), "ran")
			script := strings.ReplaceAll(evilScript(marker)+a.script, "/tmp/b", filepath.Join(t.TempDir(), "b"))
			cmd := exec.Command("bash", "-c", script)
			cmd.Dir = ws
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("planting: %v\n%s", err, out)
			}
			if ran, log := runsEvil(ws, a.dirs, marker); !ran {
				t.Errorf("the attack does not run its program when planted directly:\n%s", log)
			}
		})
	}
}

// TestBashHoldsPlantedRepositories is each attack through the real tool and the real sandbox:
// the command writes to its layer, the repository shape is held or offered for review (and no
// one approved it), the user's git runs nothing, and the result says what was not applied and why.
func TestBashHoldsPlantedRepositories(t *testing.T) {
	for _, a := range gitAttacks {
		t.Run(a.name, func(t *testing.T) {
			f := layerFixture(t)
			if !a.plain {
				gitWorkspace(t, f.dir)
			}
			marker := filepath.Join(t.TempDir(), "ran")
			r := f.call("bash", bash(evilScript(marker)+a.script))
			if ran, log := runsEvil(f.dir, a.dirs, marker); ran {
				t.Errorf("the user's git ran the program the command planted:\n%s\n%s", r.Text(), log)
			}
			wantType(t, r, tools.OK, "NOT applied", " "+a.held+": ")
			d := r.Details.(builtin.BashDetails)
			// A new repository is held; a change to an existing one's configuration is offered
			// for review as a file change (and, with no gate, not applied).
			is := func(c changeset.CommandChange) bool { return c.Path == a.held }
			if d.Changes == nil || !slices.ContainsFunc(d.Changes.Held, is) && !slices.ContainsFunc(d.Changes.Proposed, is) {
				t.Errorf("details neither hold nor propose %s: %+v", a.held, d.Changes)
			}
		})
	}
}

// TestBashAppliesOrdinaryWork: git's own writes for ordinary commands (index, objects, refs,
// logs, stash, tags, a nested repository's commit), sources and build outputs apply without a
// question, and the user's git sees the commits.
func TestBashAppliesOrdinaryWork(t *testing.T) {
	f := layerFixture(t)
	gitWorkspace(t, f.dir)
	script := `set -e
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@a GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@a
echo b > a.txt && git add a.txt && git commit -qm two
git switch -q -c feature && echo c > a.txt && git stash -q && git stash pop -q && git commit -qam three
git tag v1 && git log --oneline | wc -l && git status --short
git -C nested commit -q --allow-empty -m two
mkdir -p build/.cache node_modules/.bin && echo out > build/app && chmod +x build/app && ln -s ../x node_modules/.bin/x
echo '*.o' > .gitignore
git init -q "$TMPDIR/scratch" && git -C "$TMPDIR/scratch" commit -q --allow-empty -m x && echo scratch ok`
	r := f.call("bash", bash(script))
	wantType(t, r, tools.OK, "3\n", "scratch ok", "[exit status 0]", "Changes applied")
	if strings.Contains(r.Text(), "NOT applied") {
		t.Errorf("ordinary work held:\n%s", r.Text())
	}
	if out := userGit(f.dir, "log", "--oneline", "feature"); strings.Count(out, "\n") != 4 {
		t.Errorf("the user's git does not see the three commits:\n%s", out)
	}
	if out := userGit(filepath.Join(f.dir, "nested"), "log", "--oneline"); strings.Count(out, "\n") != 3 {
		t.Errorf("the nested repository's commit did not apply:\n%s", out)
	}
	if fi, err := os.Stat(filepath.Join(f.dir, "build/app")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("build output: %v %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(f.dir, "node_modules/.bin/x")); err != nil || l != "../x" {
		t.Errorf("symlink: %q %v", l, err)
	}
	mustUserGit(t, f.dir, "status")
}

// TestBashHoldsHooksAndToolConfigs: hook managers and the configurations editors and tools run
// (at any depth, including those no list protected before) are held; ordinary files apply.
func TestBashHoldsHooksAndToolConfigs(t *testing.T) {
	f := layerFixture(t)
	held := []string{".husky/pre-commit", ".pre-commit-config.yaml", "sub/.envrc", "sub/.nvim.lua", "sub/.exrc",
		"sub/.vscode/tasks.json", ".zed/settings.json", ".helix/config.toml", ".devcontainer/devcontainer.json",
		".vimrc", ".npmrc", ".claude/settings.json", "AGENTS.md", ".agentd/mcp.json", "deep/a/b/.nvim.lua"}
	var script strings.Builder
	script.WriteString("set -e\nmkdir -p src && echo 'package x' > src/x.go\n")
	for _, p := range held {
		fmt.Fprintf(&script, "mkdir -p %s && echo planted > %s\n", filepath.Dir(p), p)
	}
	r := f.call("bash", bash(script.String()))
	wantType(t, r, tools.OK, "created src/x.go")
	d := r.Details.(builtin.BashDetails)
	for _, p := range held {
		if _, err := os.Lstat(filepath.Join(f.dir, p)); err == nil {
			t.Errorf("%s reached the workspace", p)
		}
		// Each is offered for review (a file change with its diff); with no gate, none applies.
		if !slices.ContainsFunc(d.Changes.Proposed, func(c changeset.CommandChange) bool { return c.Path == p }) {
			t.Errorf("%s is not listed as proposed for review", p)
		}
	}
	if f.content("src/x.go") != "package x\n" {
		t.Error("the ordinary file did not apply")
	}
}

// recorder is a tools.ChangeRecorder that remembers what it was told.
type recorder struct {
	mu            sync.Mutex
	before, after []string
}

func (r *recorder) BeforeChange(p []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.before = append(r.before, p...)
	return nil
}

func (r *recorder) AfterChange(p []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.after = append(r.after, p...)
}

// TestBashChangesAreRecorded: what a command changes is recorded for the turn's checkpoint
// before it is applied, including what skip-worktree hides from git; .git/info/exclude, which
// hides files from git, is held.
func TestBashChangesAreRecorded(t *testing.T) {
	f := layerFixture(t)
	gitWorkspace(t, f.dir)
	rec := &recorder{}
	ctx := tools.WithChangeRecorder(context.Background(), rec)
	r := f.runCtx(ctx, nil, "bash", bash(`set -e
echo evil >> a.txt && git update-index --skip-worktree a.txt
echo x > hidden.txt && echo hidden.txt >> .git/info/exclude
rm nested/.git/description 2>/dev/null || true`))
	wantType(t, r, tools.OK, "modified a.txt", "created hidden.txt", " .git/info/exclude: ")
	for _, p := range []string{"a.txt", "hidden.txt"} {
		abs := filepath.Join(f.dir, p)
		if !slices.Contains(rec.before, abs) || !slices.Contains(rec.after, abs) {
			t.Errorf("%s not recorded: before %q after %q", p, rec.before, rec.after)
		}
	}
	if f.content("a.txt") != "a\nevil\n" {
		t.Errorf("a.txt = %q", f.content("a.txt"))
	}
}

// TestBashNeverOverwritesTheUsersChange: a file the user changes while the command runs is a
// conflict: the user's version stays, the command's is held and reported.
func TestBashNeverOverwritesTheUsersChange(t *testing.T) {
	var tmp string
	f := layerFixture(t, func(b *builtin.BashConfig) { tmp = b.Policy.TmpDir })
	f.write("a.txt", "one\n")
	f.write("b.txt", "one\n")
	// The FIFOs are in the session's tmp dir: a FIFO in the workspace would be the layer's.
	ready, gate := filepath.Join(tmp, "ready"), filepath.Join(tmp, "gate")
	for _, p := range []string{ready, gate} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	results := make(chan tools.Result, 1)
	go func() {
		results <- f.call("bash", bash(fmt.Sprintf(`echo cmd > a.txt; echo cmd > b.txt; echo ready > %s; read x < %s`, ready, gate)))
	}()
	// The command changed both files once it writes to the FIFO.
	if b, err := os.ReadFile(ready); err != nil || string(b) != "ready\n" {
		t.Fatalf("the command did not start: %q %v", b, err)
	}
	f.write("a.txt", "user\n")
	if err := os.WriteFile(gate, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	r := <-results
	wantType(t, r, tools.OK, " a.txt: the file also changed in the workspace while the command ran", "modified b.txt")
	if f.content("a.txt") != "user\n" || f.content("b.txt") != "cmd\n" {
		t.Errorf("a.txt %q (want the user's), b.txt %q (want the command's)", f.content("a.txt"), f.content("b.txt"))
	}
}

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

// TestBashProposesHeldChangesForReview: what a command changed that needs review and can be
// shown as a file change — a hook it created, a conflict with the user's own change — is put to
// the gate after the command ran, like an edit: with its diff, marked protected (so the policy
// asks in every approval mode) and named as the command's. Accepted, it is written (with the
// command's permission bits) and recorded for the turn's checkpoint; rejected, unavailable, a
// failing gate or no gate at all, it is not written; the model is told each outcome. Ordinary
// changes apply without a question in every case.
func TestBashProposesHeldChangesForReview(t *testing.T) {
	const script = `mkdir -p .husky && printf '#!/bin/sh\nnpm test\n' > .husky/pre-commit && chmod 755 .husky/pre-commit && echo x > ordinary.txt`
	for _, tc := range []struct {
		name    string
		decide  func(req agent.GateRequest) (agent.GateDecision, error)
		noGate  bool
		written bool
		content string // what is written, when not the command's version
		told    string
	}{
		{name: "the user's version", written: true, content: "#!/bin/sh\necho mine\n",
			told: "accepted by the user, who edited it first: the user's version was written",
			decide: func(agent.GateRequest) (agent.GateDecision, error) {
				mine := "#!/bin/sh\necho mine\n"
				return agent.GateDecision{Allow: true, Approval: &tools.Approval{Content: &mine}}, nil
			}},
		{name: "no hunk accepted", told: "the user accepted it, but it was NOT applied: the user accepted none of its hunks",
			decide: func(agent.GateRequest) (agent.GateDecision, error) {
				return agent.GateDecision{Allow: true, Approval: &tools.Approval{Hunks: []string{}}}, nil
			}},
		{name: "accept", written: true, told: "Review of the created .husky/pre-commit: accepted by the user and written]",
			decide: func(agent.GateRequest) (agent.GateDecision, error) { return agent.GateDecision{Allow: true}, nil }},
		{name: "reject", told: "Review of the created .husky/pre-commit: NOT applied: the user rejected it (not my hook)",
			decide: func(agent.GateRequest) (agent.GateDecision, error) {
				return agent.GateDecision{Type: tools.RejectedByUser, Reason: "not my hook"}, nil
			}},
		{name: "unavailable", told: "NOT applied: no one could review it (no editor is attached)",
			decide: func(agent.GateRequest) (agent.GateDecision, error) {
				return agent.GateDecision{Type: tools.ApprovalUnavailable, EndTurn: true, Reason: "no editor is attached"}, nil
			}},
		{name: "gate fails", told: "NOT applied: the user's review could not be obtained (the editor went away)",
			decide: func(agent.GateRequest) (agent.GateDecision, error) {
				return agent.GateDecision{}, errors.New("the editor went away")
			}},
		{name: "no gate", noGate: true, told: "NOT applied: nobody can review changes here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := layerFixture(t)
			rec := &recorder{}
			ctx := tools.WithChangeRecorder(context.Background(), rec)
			var mu sync.Mutex
			var asked []agent.GateRequest
			var gate agent.Gate
			if !tc.noGate {
				gate = func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
					if !req.FollowUp {
						return agent.GateDecision{Allow: true}, nil // the command itself
					}
					mu.Lock()
					asked = append(asked, req)
					mu.Unlock()
					return tc.decide(req)
				}
			}
			r := f.runCtx(ctx, gate, "bash", bash(script))
			wantType(t, r, tools.OK, "created ordinary.txt", "Offered to the user for review", tc.told)
			if f.content("ordinary.txt") != "x\n" {
				t.Error("the ordinary file did not apply")
			}
			hook := filepath.Join(f.dir, ".husky/pre-commit")
			fi, err := os.Stat(hook)
			if got := err == nil; got != tc.written {
				t.Fatalf("the hook written: %v, want %v\n%s", got, tc.written, r.Text())
			}
			if tc.content == "" {
				tc.content = "#!/bin/sh\nnpm test\n"
			}
			if tc.written {
				if f.content(".husky/pre-commit") != tc.content || fi.Mode().Perm()&0o100 == 0 {
					t.Errorf("the hook = %q, mode %v", f.content(".husky/pre-commit"), fi.Mode())
				}
				if !slices.Contains(rec.before, hook) || !slices.Contains(rec.after, hook) {
					t.Errorf("the accepted hook was not recorded for the checkpoint: before %q after %q", rec.before, rec.after)
				}
			} else if slices.Contains(rec.before, hook) {
				t.Errorf("a hook not written was recorded: %q", rec.before)
			}
			d := r.Details.(builtin.BashDetails)
			if !slices.ContainsFunc(d.Changes.Proposed, func(c changeset.CommandChange) bool { return c.Path == ".husky/pre-commit" }) ||
				slices.ContainsFunc(d.Changes.Held, func(c changeset.CommandChange) bool { return strings.HasPrefix(c.Path, ".husky") }) {
				t.Errorf("the hook is not listed as proposed (only): %+v", d.Changes)
			}
			if tc.noGate {
				return
			}
			if len(asked) != 1 {
				t.Fatalf("the gate was asked %d times about the command's changes, want 1", len(asked))
			}
			q := asked[0]
			perm := q.Tool.(tools.PermissionMetadata).Permission(q.Call)
			if q.Call.ID != "c1" || q.Call.Name != "bash" || q.Preview == nil || q.Preview.Diff == nil ||
				q.Preview.Diff.Path != ".husky/pre-commit" || !q.Preview.Diff.Created || len(q.Preview.Diff.Hunks) != 1 ||
				!strings.Contains(strings.Join(q.Preview.Diff.Hunks[0].Added, ""), "npm test") {
				t.Errorf("the question is not the hook's file change: %+v %+v", q.Call, q.Preview)
			}
			if perm.Access != tools.AccessWrite || !perm.Protected || !slices.Equal(perm.Paths, []string{hook}) ||
				!strings.Contains(perm.Reason, "the command `mkdir -p .husky") || !strings.Contains(perm.Reason, "hook") ||
				!strings.Contains(perm.Reason, "it is created executable (-rwxr-xr-x)") {
				t.Errorf("the permission does not make the policy ask in every mode: %+v", perm)
			}
			if !strings.HasPrefix(q.Label, ".husky/pre-commit, from the command `mkdir -p .husky") {
				t.Errorf("label %q", q.Label)
			}
		})
	}
}

// TestBashConflictIsProposedWithTheUsersVersion: a file the user changed while the command ran
// is proposed as the diff from the user's version to the command's; the accepted hunks are
// what is written, and a later change of the file while the review waits makes it stale.
func TestBashConflictIsProposedWithTheUsersVersion(t *testing.T) {
	var tmp string
	f := layerFixture(t, func(b *builtin.BashConfig) { tmp = b.Policy.TmpDir })
	f.write("a.txt", "one\ntwo\n")
	ready, gateFIFO := filepath.Join(tmp, "ready"), filepath.Join(tmp, "gate")
	for _, p := range []string{ready, gateFIFO} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var diff *preview.Diff
	gate := func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		if !req.FollowUp {
			return agent.GateDecision{Allow: true}, nil
		}
		diff = req.Preview.Diff
		return agent.GateDecision{Allow: true}, nil
	}
	results := make(chan tools.Result, 1)
	go func() {
		results <- f.run(gate, "bash", bash(fmt.Sprintf(`printf 'one\nTWO\n' > a.txt; echo ready > %s; read x < %s`, ready, gateFIFO)))
	}()
	if b, err := os.ReadFile(ready); err != nil || string(b) != "ready\n" {
		t.Fatalf("the command did not start: %q %v", b, err)
	}
	f.write("a.txt", "user\ntwo\n")
	if err := os.WriteFile(gateFIFO, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	r := <-results
	wantType(t, r, tools.OK, "modified a.txt: the file also changed in the workspace while the command ran", "accepted by the user and written")
	if diff == nil || diff.Old != "user\ntwo\n" || diff.New != "one\nTWO\n" {
		t.Fatalf("the review's diff is not from the user's version to the command's: %+v", diff)
	}
	if f.content("a.txt") != "one\nTWO\n" {
		t.Errorf("a.txt = %q", f.content("a.txt"))
	}
}

// lockProbe is a tools.ChangeRecorder that, for each change it is told of (right before the
// write), tries to take the apply lock of the workspace root as another agentd process would:
// once, without waiting.
type lockProbe struct {
	try func() error

	mu    sync.Mutex
	tried map[string]error
}

func (p *lockProbe) BeforeChange(paths []string) error {
	err := p.try()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, path := range paths {
		p.tried[path] = err
	}
	return nil
}

func (p *lockProbe) AfterChange([]string) {}

// TestBashAcceptedFollowUpIsWrittenUnderTheApplyLock: a command's change the user accepts is
// checked against the workspace and written under the workspace root's apply lock — the one
// every agentd process on this workspace (a terminal `agentd run`, the daemon) takes to apply a
// change set —, so no other process's change set lands between its base check and its write;
// and the lock is not held while the user decides.
func TestBashAcceptedFollowUpIsWrittenUnderTheApplyLock(t *testing.T) {
	var layers string
	f := layerFixture(t, func(b *builtin.BashConfig) { layers = b.Policy.Layers() })
	// Another process's attempt, on a lock file of its own: it does not wait.
	try := func() error {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		unlock, err := sandbox.LockApplyRoots(ctx, layers, []string{f.dir})
		if err == nil {
			unlock()
		}
		return err
	}
	probe := &lockProbe{try: try, tried: map[string]error{}}
	var whileDeciding error = errors.New("the gate was not asked about the hook")
	gate := func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		if req.FollowUp {
			whileDeciding = try()
		}
		return agent.GateDecision{Allow: true}, nil
	}
	r := f.runCtx(tools.WithChangeRecorder(context.Background(), probe), gate, "bash",
		bash(`mkdir -p .husky && printf '#!/bin/sh\nnpm test\n' > .husky/pre-commit && echo x > ordinary.txt`))
	wantType(t, r, tools.OK, "created ordinary.txt", "Review of the created .husky/pre-commit: accepted by the user and written]")
	if whileDeciding != nil {
		t.Errorf("another process could not take the apply lock while the user decided: %v", whileDeciding)
	}
	for _, p := range []string{"ordinary.txt", ".husky/pre-commit"} {
		err, ok := probe.tried[filepath.Join(f.dir, p)]
		if !ok {
			t.Errorf("%s was not recorded before its write", p)
			continue
		}
		if !errors.Is(err, sandbox.ErrApplyLock) || !errors.Is(err, context.Canceled) {
			t.Errorf("%s: another process's attempt to take the apply lock right before the write: %v, want it held (ErrApplyLock)", p, err)
		}
	}
	if f.content(".husky/pre-commit") != "#!/bin/sh\nnpm test\n" {
		t.Errorf("the hook = %q", f.content(".husky/pre-commit"))
	}
}
