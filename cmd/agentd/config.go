package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/openai"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools/sandbox"
)

// settings are the options every command shares. Precedence: flags > environment > the user
// config file ($XDG_CONFIG_HOME/agentd/config) > defaults.
type settings struct {
	engine        string
	engineURL     string
	ollamaHost    string
	model         string
	approval      string
	contextLength int
	think         bool
	stateDir      string
	reviewTimeout time.Duration
	keepAlive     string
	completion    string
}

func (s *settings) register(fs *flag.FlagSet) {
	fs.StringVar(&s.engine, "engine", "", "model server API: ollama, or openai for OpenAI-compatible servers such as llama-server and vLLM (default $AGENTD_ENGINE or ollama)")
	fs.StringVar(&s.engineURL, "engine-url", "", "base URL of the OpenAI-compatible API, with /v1 (default $AGENTD_ENGINE_URL or "+openai.DefaultURL+")")
	fs.StringVar(&s.ollamaHost, "ollama-host", "", "Ollama server (default $OLLAMA_HOST or 127.0.0.1:11434)")
	fs.StringVar(&s.model, "model", "", "model for new sessions (default $AGENTD_MODEL or "+harness.DefaultModel+")")
	fs.StringVar(&s.approval, "approval", "", "approval mode: ask, auto-edit, plan or yolo (default $AGENTD_APPROVAL or ask)")
	fs.IntVar(&s.contextLength, "context-length", 0, "cap on the context window in tokens (default: the model's)")
	fs.BoolVar(&s.think, "think", false, "turn thinking on for models that have it")
	fs.StringVar(&s.stateDir, "state-dir", "", "where sessions, checkpoints and the audit log live (default $XDG_STATE_HOME/agentd)")
	fs.DurationVar(&s.reviewTimeout, "review-timeout", 0, "reject a review nobody answered after this long (default: never)")
	fs.StringVar(&s.completion, "completion-model", "", "model for inline completion in the editors, one that fills in the middle (default $AGENTD_COMPLETION_MODEL or "+harness.DefaultCompletionModel+")")
	fs.StringVar(&s.keepAlive, "keep-alive", "", "keep the model loaded this long after each request: a duration, 0 to unload after every reply, -1 for ever (default $AGENTD_KEEP_ALIVE, else the Ollama server's own, with the model held loaded while a turn runs)")
}

// resolve fills what the flags left empty from the environment and the config file.
func (s *settings) resolve() (harness.Options, []string, error) {
	loc, err := policy.DefaultLocations()
	if err != nil {
		return harness.Options{}, nil, err
	}
	cfg, err := policy.Load(loc, "")
	if err != nil {
		return harness.Options{}, nil, err
	}
	file := cfg.Settings
	pick := func(flagVal, env, key string) string {
		if flagVal != "" {
			return flagVal
		}
		if v := os.Getenv(env); v != "" {
			return v
		}
		return file[key]
	}
	opts := harness.Options{
		Version:    version,
		OllamaHost: pick(s.ollamaHost, "OLLAMA_HOST", "ollama-host"),
		Model:      pick(s.model, "AGENTD_MODEL", "model"),
		// Empty when nobody chose one: the default applies and the editors leave completion off.
		CompletionModel: pick(s.completion, "AGENTD_COMPLETION_MODEL", "completion-model"),
		StateDir:        s.stateDir,
		Think:           s.think || file["think"] == "on" || file["think"] == "true",
		Policy:          loc,
	}
	if opts.Engine, err = harness.ParseEngine(pick(s.engine, "AGENTD_ENGINE", "engine")); err != nil {
		return opts, nil, err
	}
	if opts.Engine == harness.EngineOpenAI {
		opts.EngineURL = pick(s.engineURL, "AGENTD_ENGINE_URL", "engine-url")
		if _, err := openai.ParseURL(opts.EngineURL); err != nil {
			return opts, nil, err
		}
		// The key itself is never in a file: the config names the variable that holds it.
		if name := file["engine-api-key-env"]; name != "" {
			if opts.EngineAPIKey = os.Getenv(name); opts.EngineAPIKey == "" {
				return opts, nil, fmt.Errorf("engine-api-key-env names %s, which is not set", name)
			}
		}
	}
	opts.ApprovalMode = s.approval
	if opts.ApprovalMode == "" {
		opts.ApprovalMode = os.Getenv("AGENTD_APPROVAL")
	}
	if opts.ApprovalMode == "" {
		opts.ApprovalMode = cfg.Mode.String()
	}
	if _, err := policy.ParseMode(opts.ApprovalMode); err != nil {
		return opts, nil, err
	}
	ctxLen := strconv.Itoa(s.contextLength)
	if s.contextLength == 0 {
		ctxLen = pick("", "AGENTD_CONTEXT_LENGTH", "context-length")
	}
	if ctxLen != "" {
		n, err := strconv.Atoi(ctxLen)
		if err != nil || n < 0 {
			return opts, nil, fmt.Errorf("context length %q is not a number of tokens", ctxLen)
		}
		opts.ContextCap = n
	}
	opts.ReviewTimeout = s.reviewTimeout
	if opts.ReviewTimeout == 0 && file["review-timeout"] != "" {
		d, err := time.ParseDuration(file["review-timeout"])
		if err != nil {
			return opts, nil, fmt.Errorf("review-timeout %q: %v", file["review-timeout"], err)
		}
		opts.ReviewTimeout = d
	}
	if ka := pick(s.keepAlive, "AGENTD_KEEP_ALIVE", "keep-alive"); ka != "" {
		d, err := parseKeepAlive(ka)
		if err != nil {
			return opts, nil, err
		}
		opts.KeepAlive = &d
	}
	if v := file["command-memory"]; v != "" {
		n, err := sandbox.ParseBytes(v)
		if err != nil {
			return opts, nil, fmt.Errorf("command-memory: %v", err)
		}
		opts.SandboxLimits.MemoryBytes = n
	}
	if v := file["command-pids"]; v != "" {
		n, err := strconv.Atoi(v)
		if v == "off" || v == "none" || v == "unlimited" {
			n, err = -1, nil
		}
		if err != nil || n == 0 {
			return opts, nil, fmt.Errorf("command-pids %q is neither a number of processes nor off", v)
		}
		opts.SandboxLimits.Pids = n
	}
	return opts, cfg.Warnings, nil
}

// parseKeepAlive reads a keep-alive as Ollama does: a duration ("30m"), or a number of seconds
// ("0", "-1").
func parseKeepAlive(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("keep-alive %q is neither a duration (30m) nor a number of seconds (0, -1)", v)
	}
	return d, nil
}
