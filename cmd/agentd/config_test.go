package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseKeepAlive(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "30m", want: 30 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "0", want: 0},
		{in: "-1", want: -time.Second},
		{in: "600", want: 10 * time.Minute},
		{in: "soon", bad: true},
		{in: "10 minutes", bad: true},
	}
	for _, tc := range cases {
		got, err := parseKeepAlive(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("parseKeepAlive(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseKeepAlive(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestCommandLimitsFromTheConfig: command-memory and command-pids in the user config set every
// sandboxed command's limits; "off" lifts one; a bad value is an error that names the setting.
func TestCommandLimitsFromTheConfig(t *testing.T) {
	cases := []struct {
		config    string
		mem       int64
		pids      int
		errSubstr string
	}{
		{config: "command-memory 256M\ncommand-pids 64\n", mem: 256 << 20, pids: 64},
		{config: "command-memory off\ncommand-pids off\n", mem: -1, pids: -1},
		{config: "", mem: 0, pids: 0}, // the sandbox's defaults
		{config: "command-memory lots\n", errSubstr: "command-memory"},
		{config: "command-pids 0\n", errSubstr: "command-pids"},
	}
	for _, tc := range cases {
		home := t.TempDir()
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
		t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
		if err := os.MkdirAll(filepath.Join(home, "config", "agentd"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "config", "agentd", "config"), []byte(tc.config), 0o600); err != nil {
			t.Fatal(err)
		}
		opts, _, err := (&settings{}).resolve()
		if tc.errSubstr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
				t.Errorf("config %q: err %v, want one naming %s", tc.config, err, tc.errSubstr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("config %q: %v", tc.config, err)
		}
		if opts.SandboxLimits.MemoryBytes != tc.mem || opts.SandboxLimits.Pids != tc.pids {
			t.Errorf("config %q: limits %+v, want memory %d, pids %d", tc.config, opts.SandboxLimits, tc.mem, tc.pids)
		}
	}
}

// TestCompletionModelSetting: the flag beats the environment, which beats the config file; with
// none of them the model is left empty (the default, not configured).
func TestCompletionModelSetting(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("AGENTD_COMPLETION_MODEL", "")
	os.MkdirAll(filepath.Join(home, "config", "agentd"), 0o700)
	cfg := filepath.Join(home, "config", "agentd", "config")
	check := func(s settings, want string) {
		t.Helper()
		opts, _, err := s.resolve()
		if err != nil || opts.CompletionModel != want {
			t.Errorf("completion model %q, %v; want %q", opts.CompletionModel, err, want)
		}
	}
	check(settings{}, "")
	os.WriteFile(cfg, []byte("completion-model codegemma:2b\n"), 0o600)
	check(settings{}, "codegemma:2b")
	t.Setenv("AGENTD_COMPLETION_MODEL", "starcoder2:3b")
	check(settings{}, "starcoder2:3b")
	check(settings{completion: "qwen2.5-coder:7b-base"}, "qwen2.5-coder:7b-base")
}
