package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type configFixture struct {
	loc Locations
	ws  string
}

func newConfigFixture(t *testing.T, user, workspace string) configFixture {
	t.Helper()
	home := t.TempDir()
	f := configFixture{
		loc: Locations{ConfigDir: filepath.Join(home, "config", "agentd"), StateDir: filepath.Join(home, "state", "agentd")},
		ws:  filepath.Join(t.TempDir(), "ws"),
	}
	if user != "" {
		writeFile(t, f.loc.UserConfigFile(), user)
	}
	if workspace != "" {
		writeFile(t, filepath.Join(f.ws, ".agentd", "config"), workspace)
	}
	if err := os.MkdirAll(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f configFixture) trust(t *testing.T) {
	t.Helper()
	ts, err := OpenTrust(f.loc.TrustFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Trust(f.ws); err != nil {
		t.Fatal(err)
	}
}

func hasWarning(cfg *Config, sub string) bool {
	for _, w := range cfg.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

const looseWorkspace = `
mode yolo
defaults off
allow rm
    example rm -rf /
forbid make
    example make install
ask go test
    example go test ./...
protect generated
sensitive "*.tfstate"
`

func TestLoadDefaults(t *testing.T) {
	f := newConfigFixture(t, "", "")
	cfg, err := Load(f.loc, f.ws)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != ModeAsk || cfg.Rules.Len() != DefaultRules().Len() || len(cfg.Files) != 0 || len(cfg.Warnings) != 0 {
		t.Errorf("defaults: %+v", cfg)
	}
}

func TestLoadUserConfig(t *testing.T) {
	f := newConfigFixture(t, `
mode auto-edit
allow npm test
    example npm test
protect secrets
`, "")
	cfg, err := Load(f.loc, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != ModeAutoEdit || cfg.Rules.Len() != DefaultRules().Len()+1 || len(cfg.Protect) != 1 {
		t.Fatalf("user config: %+v", cfg)
	}
	p, err := New(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v := p.Decide(cmdReq("npm test")); v.Decision != Allow {
		t.Errorf("user allow rule: %+v", v)
	}
	if v := p.Decide(writeReq("/ws/secrets/k.txt")); v.Decision != Ask {
		t.Errorf("user protect pattern: %+v", v)
	}
	// agentd's own config is write-protected, in every mode.
	_ = p.SetMode(ModeYolo)
	if v := p.Decide(writeReq(f.loc.UserConfigFile())); v.Decision != Ask {
		t.Errorf("write to agentd's config: %+v", v)
	}
	if v := p.Decide(writeReq(f.loc.TrustFile())); v.Decision != Ask {
		t.Errorf("write to the trust list: %+v", v)
	}
}

func TestLoadUserConfigDefaultsOff(t *testing.T) {
	f := newConfigFixture(t, "defaults off\n", "")
	cfg, err := Load(f.loc, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Rules.Len() != 0 {
		t.Errorf("defaults off left %d rules", cfg.Rules.Len())
	}
}

func TestLoadBadExampleNamesTheRule(t *testing.T) {
	f := newConfigFixture(t, "mode ask\n\nask git push\n    example git pull\n", "")
	_, err := Load(f.loc, "")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{f.loc.UserConfigFile() + ":3", "`ask git push`", `"git pull"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestLoadConfigSyntaxErrors(t *testing.T) {
	for _, text := range []string{"mode turbo\n", "mode\n", "defaults maybe\n", "protect\n", "protect a b\n", "protect [\n", "frob x\n"} {
		f := newConfigFixture(t, text, "")
		if _, err := Load(f.loc, ""); err == nil {
			t.Errorf("%q: no error", text)
		}
	}
}

func TestUntrustedWorkspaceConfigIgnored(t *testing.T) {
	f := newConfigFixture(t, "mode auto-edit\n", "mode plan\nforbid ls\n    example ls\n")
	cfg, err := Load(f.loc, f.ws)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != ModeAutoEdit || cfg.Rules.Len() != DefaultRules().Len() || len(cfg.Files) != 1 {
		t.Errorf("untrusted workspace config was applied: mode %s, %d rules, files %v", cfg.Mode, cfg.Rules.Len(), cfg.Files)
	}
	if !hasWarning(cfg, "not trusted") {
		t.Errorf("no warning: %q", cfg.Warnings)
	}
	// Even a broken config in an untrusted workspace is not read.
	writeFile(t, filepath.Join(f.ws, ".agentd", "config"), "this is not valid\n")
	if _, err := Load(f.loc, f.ws); err != nil {
		t.Errorf("untrusted broken config was parsed: %v", err)
	}
}

func TestWorkspaceConfigOnlyTightens(t *testing.T) {
	f := newConfigFixture(t, "mode auto-edit\n", looseWorkspace)
	f.trust(t)
	cfg, err := Load(f.loc, f.ws)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != ModeAutoEdit {
		t.Errorf("a looser workspace mode was applied: %s", cfg.Mode)
	}
	for _, w := range []string{"mode yolo ignored", "defaults off ignored", "`allow rm` ignored"} {
		if !hasWarning(cfg, w) {
			t.Errorf("no warning %q in %q", w, cfg.Warnings)
		}
	}
	if cfg.Rules.Len() != DefaultRules().Len()+2 {
		t.Errorf("%d rules, want the defaults plus forbid make and ask go test", cfg.Rules.Len())
	}
	p, err := New(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]Decision{
		"rm x":          Ask,  // the workspace allow rule is ignored
		"sudo ls":       Deny, // defaults stay on
		"make install":  Deny, // the workspace forbid rule applies
		"go test ./...": Ask,  // the workspace ask rule applies (read-only would auto-run)
		"go vet ./...":  Allow,
	} {
		if v := p.Decide(cmdReq(cmd)); v.Decision != want {
			t.Errorf("%q: %s (%s), want %s", cmd, v.Decision, v.Reason, want)
		}
	}
	if v := p.Decide(writeReq(filepath.Join(f.ws, "generated", "x.go"))); v.Decision != Ask {
		t.Errorf("workspace protect pattern: %+v", v)
	}
	if v := p.Decide(readReq(filepath.Join(f.ws, "prod.tfstate"))); v.Decision != Ask {
		t.Errorf("workspace sensitive pattern: %+v", v)
	}
}

func TestWorkspaceStricterModeApplies(t *testing.T) {
	f := newConfigFixture(t, "mode yolo\n", "mode plan\n")
	f.trust(t)
	cfg, err := Load(f.loc, f.ws)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != ModePlan || len(cfg.Warnings) != 0 || len(cfg.Files) != 2 {
		t.Errorf("mode %s, warnings %q, files %v", cfg.Mode, cfg.Warnings, cfg.Files)
	}
}

func TestWorkspaceConfigBadExampleIsAnError(t *testing.T) {
	f := newConfigFixture(t, "", "forbid make\n    example cmake\n")
	f.trust(t)
	if _, err := Load(f.loc, f.ws); err == nil || !strings.Contains(err.Error(), "`forbid make`") {
		t.Errorf("err = %v", err)
	}
}

func TestWorkspaceConfigSymlinkEscapeRefused(t *testing.T) {
	f := newConfigFixture(t, "", "")
	outside := filepath.Join(t.TempDir(), "evil")
	writeFile(t, outside, "forbid ls\n    example ls\n")
	if err := os.MkdirAll(filepath.Join(f.ws, ".agentd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(f.ws, ".agentd", "config")); err != nil {
		t.Fatal(err)
	}
	f.trust(t)
	if _, err := Load(f.loc, f.ws); err == nil {
		t.Error("a workspace config symlinked outside the workspace was read")
	}
}

func TestTrustStore(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "state", "trusted-workspaces")
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	ts, err := OpenTrust(file)
	if err != nil {
		t.Fatal(err)
	}
	if ts.Trusted(ws) {
		t.Fatal("trusted before Trust")
	}
	if err := ts.Trust(link); err != nil { // stored canonical
		t.Fatal(err)
	}
	if err := ts.Trust(ws); err != nil {
		t.Fatal(err)
	}
	if !ts.Trusted(ws) || !ts.Trusted(link) || ts.Trusted(filepath.Join(ws, "sub")) || ts.Trusted(ws+"2") {
		t.Error("trust is exact, by canonical path")
	}
	again, err := OpenTrust(file)
	if err != nil {
		t.Fatal(err)
	}
	if l := again.List(); len(l) != 1 || l[0] != canonicalPath(ws) {
		t.Errorf("reloaded list = %q", l)
	}
	if err := again.Untrust(ws); err != nil {
		t.Fatal(err)
	}
	third, _ := OpenTrust(file)
	if third.Trusted(ws) {
		t.Error("still trusted after Untrust")
	}
}

func TestDefaultLocations(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/x/config")
	t.Setenv("XDG_STATE_HOME", "/x/state")
	loc, err := DefaultLocations()
	if err != nil {
		t.Fatal(err)
	}
	if loc.UserConfigFile() != "/x/config/agentd/config" || loc.TrustFile() != "/x/state/agentd/trusted-workspaces" {
		t.Errorf("%+v", loc)
	}
}

func TestSettingsOnlyFromTheUserConfig(t *testing.T) {
	loc := Locations{ConfigDir: t.TempDir(), StateDir: t.TempDir()}
	ws := t.TempDir()
	if err := os.WriteFile(loc.UserConfigFile(), []byte("model qwen2.5-coder:7b\nollama-host 127.0.0.1:11500\ncontext-length 16384\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, ".agentd"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, WorkspaceConfigName), []byte("ollama-host evil.example:80\nmodel other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts, err := OpenTrust(loc.TrustFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Trust(ws); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(loc, ws)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"model": "qwen2.5-coder:7b", "ollama-host": "127.0.0.1:11500", "context-length": "16384"}
	if !reflect.DeepEqual(cfg.Settings, want) {
		t.Errorf("settings = %v, want %v", cfg.Settings, want)
	}
	if len(cfg.Warnings) != 2 || !strings.Contains(cfg.Warnings[0], "only the user config") {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
	if _, err := ParseRules("r", []byte("model x\n")); err == nil {
		t.Error("a rule file accepted a setting")
	}
}
