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

// TestEngineSettings: engine and engine-url come from the flags, then AGENTD_ENGINE and
// AGENTD_ENGINE_URL, then the config; the API key only from the environment variable the config
// names (fail closed when it is unset); a bad engine or URL is an error naming it.
func TestEngineSettings(t *testing.T) {
	cases := []struct {
		name      string
		config    string
		env       map[string]string
		flags     settings
		engine    string
		url       string
		key       string
		errSubstr string
	}{
		{name: "default", engine: "ollama"},
		{name: "config", config: "engine openai\nengine-url http://gpu:8000/v1\n", engine: "openai", url: "http://gpu:8000/v1"},
		{name: "environment over config", config: "engine ollama\nengine-url http://a/v1\n",
			env: map[string]string{"AGENTD_ENGINE": "openai", "AGENTD_ENGINE_URL": "http://b:8080/v1"}, engine: "openai", url: "http://b:8080/v1"},
		{name: "flags over environment", env: map[string]string{"AGENTD_ENGINE": "ollama", "AGENTD_ENGINE_URL": "http://b/v1"},
			flags: settings{engine: "openai", engineURL: "http://c/v1"}, engine: "openai", url: "http://c/v1"},
		{name: "key from the named variable", config: "engine openai\nengine-api-key-env TEAM_GPU_KEY\n",
			env: map[string]string{"TEAM_GPU_KEY": "sk-123"}, engine: "openai", key: "sk-123"},
		{name: "named variable unset", config: "engine openai\nengine-api-key-env TEAM_GPU_KEY\n", errSubstr: "TEAM_GPU_KEY"},
		{name: "unknown engine", config: "engine tgi\n", errSubstr: `engine "tgi"`},
		{name: "bad URL", config: "engine openai\nengine-url gpu:8000\n", errSubstr: "gpu:8000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
			t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
			for _, k := range []string{"AGENTD_ENGINE", "AGENTD_ENGINE_URL", "TEAM_GPU_KEY"} {
				t.Setenv(k, tc.env[k])
			}
			if err := os.MkdirAll(filepath.Join(home, "config", "agentd"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, "config", "agentd", "config"), []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			opts, _, err := tc.flags.resolve()
			if tc.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
					t.Fatalf("err %v, want one naming %s", err, tc.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.Engine != tc.engine || opts.EngineURL != tc.url || opts.EngineAPIKey != tc.key {
				t.Errorf("engine %q url %q key %q, want %q %q %q", opts.Engine, opts.EngineURL, opts.EngineAPIKey, tc.engine, tc.url, tc.key)
			}
		})
	}
}
