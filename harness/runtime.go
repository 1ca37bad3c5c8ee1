// Package harness builds and runs agent sessions for every front end: the editor daemon
// (package daemon), the terminal (`agentd run`) and ACP. It owns the session's assembly — the
// journal, tools, sandbox and build cache, MCP servers, policy and grants, the gate, the context
// window, the workspace facts and project instructions, and keeping the model loaded — while a
// front end supplies only the asking half of the gate (Asker), the event sink, and for editors
// the open documents (Overlay) and the writer of open documents.
package harness

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/sandbox"
)

// Options configure the runtime. cmd/agentd resolves them: flags > environment > config file >
// defaults.
type Options struct {
	Version string
	// Engine is the model server's API: EngineOllama ("" too) or EngineOpenAI.
	Engine string
	// OllamaHost is the Ollama server (engine ollama).
	OllamaHost string
	// EngineURL is the OpenAI-compatible API's base URL (engine openai; "" : openai.DefaultURL).
	// A session's OllamaHost (an editor's setting) does not change it.
	EngineURL string
	// EngineAPIKey is sent as a bearer token (engine openai). cmd/agentd reads it from the
	// environment variable the config names; it is never written anywhere.
	EngineAPIKey string
	Model        string // default model for new sessions
	ApprovalMode string // default approval mode for new sessions
	// ContextCap caps the context window chosen for a session (0: no cap but the model's).
	ContextCap int
	// Think turns thinking on for models that have it.
	Think bool
	// StateDir holds sessions, checkpoints and the audit log ("" : store.DefaultDir()).
	StateDir string
	// Policy locates the user's config and trust list (zero: policy.DefaultLocations()).
	Policy policy.Locations
	// ReviewTimeout rejects a review nobody answered (0: wait as long as the turn lives).
	ReviewTimeout time.Duration
	// KeepAlive is how long Ollama keeps the model loaded after each request (nil: none is sent,
	// the server's own keep-alive applies and the model is held loaded while a turn runs, see
	// ollama.Client.KeepLoaded; 0 unloads after every reply; negative: until Ollama stops).
	KeepAlive *time.Duration
	// Models makes model clients (nil: EngineModels(), the engine's).
	Models ModelFactory
	// CompletionModel is the inline completion model ("" : DefaultCompletionModel, and not
	// configured); Infillers makes its clients (nil: Ollama with CompletionKeepAlive).
	CompletionModel string
	Infillers       InfillerFactory
	// Sandbox forces a sandbox mode (ModeAuto: the strongest available).
	Sandbox sandbox.Mode
	// SandboxLimits are every command's memory and process limits (zero fields:
	// sandbox.DefaultLimits; negative: none).
	SandboxLimits sandbox.Limits
	// SandboxFeatures replaces the probe of this machine (tests).
	SandboxFeatures *sandbox.Features
	// BuildCache is agentd's Go build cache directory ("" : $XDG_CACHE_HOME/agentd/go-build),
	// which holds one writable layer per workspace for sandboxed commands (tools/gocache.Layer).
	// It is agentd's own, never the user's: a command must not plant objects the user's builds
	// use, nor objects another workspace's builds use.
	BuildCache string
}

// Runtime is the process-wide state: stores, workspaces and the sandbox. Sessions are built from
// it (Open).
type Runtime struct {
	opts  Options
	store *store.Store
	// sandbox, sandboxErr and features are set by the probe, before probed is closed.
	probed     chan struct{}
	sandbox    *sandbox.Sandbox
	sandboxErr error
	features   sandbox.Features

	mu         sync.Mutex
	workspaces map[string]*workspace // by canonical root
	infillers  map[string]Infiller   // completion clients by host and model (completion.go)

	// chat is which sessions are streaming a reply (completion.go).
	chat chatState
}

// workspace is what sessions of one root share.
type workspace struct {
	root  string
	fs    *fsafe.Workspace
	queue *tools.MutationQueue
}

// NewRuntime opens the state directory and probes the sandbox.
func NewRuntime(opts Options) (*Runtime, error) {
	var err error
	if opts.Engine, err = ParseEngine(opts.Engine); err != nil {
		return nil, err
	}
	if opts.Model == "" && opts.Engine == EngineOllama {
		// An OpenAI-compatible server names its own model (openai.Config.Model).
		opts.Model = DefaultModel
	}
	if opts.ApprovalMode == "" {
		opts.ApprovalMode = "ask"
	}
	if _, err := policy.ParseMode(opts.ApprovalMode); err != nil {
		return nil, err
	}
	if opts.Models == nil {
		opts.Models = opts.EngineModels()
	}
	if opts.Infillers == nil {
		opts.Infillers = ollamaInfillers
	}
	if opts.StateDir == "" {
		dir, err := store.DefaultDir()
		if err != nil {
			return nil, err
		}
		opts.StateDir = dir
	}
	if opts.Policy == (policy.Locations{}) {
		loc, err := policy.DefaultLocations()
		if err != nil {
			return nil, err
		}
		opts.Policy = loc
	}
	st, err := store.Open(opts.StateDir)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{opts: opts, store: st, workspaces: map[string]*workspace{},
		probed: make(chan struct{})}
	// Probing the sandbox starts processes (tens of milliseconds): do it in the background so
	// the daemon answers initialize at once. Sessions wait for it (probe).
	go func() {
		defer close(rt.probed)
		start := time.Now()
		if opts.SandboxFeatures != nil {
			rt.features = *opts.SandboxFeatures
		} else {
			rt.features = sandbox.Detect()
		}
		rt.sandbox, rt.sandboxErr = sandbox.New(sandbox.Options{Mode: opts.Sandbox, Features: &rt.features, HelperPath: helperBinary(), Limits: opts.SandboxLimits})
		slog.Debug("sandbox probed", "took", time.Since(start), "features", rt.features.Describe())
		if rt.sandboxErr != nil {
			slog.Warn("no sandbox: commands cannot run", "err", rt.sandboxErr, "features", rt.features.Describe())
		}
	}()
	return rt, nil
}

// helperBinary is the dedicated sandbox helper next to this executable (agentd-sandbox), which
// starts faster than agentd itself; "" (agentd's own helper mode) when it is not there.
func helperBinary() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(exe), "agentd-sandbox")
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return p
	}
	return ""
}

// probe waits for the sandbox probe.
func (rt *Runtime) probe() { <-rt.probed }

// Close closes the stores. Nothing is sent to the model server: a model stays loaded for the
// server's own keep-alive (or the configured one), with the runner options the next session sends
// too, so that session finds it warm.
func (rt *Runtime) Close() error {
	return rt.store.Close()
}

// Store returns the session store.
func (rt *Runtime) Store() *store.Store { return rt.store }

// Options returns the runtime's options.
func (rt *Runtime) Options() Options { return rt.opts }

// SandboxSummary says how commands are confined, for prompts and status.
func (rt *Runtime) SandboxSummary() string {
	rt.probe()
	if rt.sandbox == nil {
		return "unavailable: " + strings.Join(rt.features.Missing(), "; ")
	}
	return rt.sandbox.Describe(sandbox.Policy{})
}

// Features returns the sandbox features of this machine.
func (rt *Runtime) Features() sandbox.Features {
	rt.probe()
	return rt.features
}

// Sandbox waits for the sandbox probe and returns the sandbox, or why there is none.
func (rt *Runtime) Sandbox() (*sandbox.Sandbox, error) {
	rt.probe()
	return rt.sandbox, rt.sandboxErr
}

// SandboxSummaryNow is SandboxSummary without waiting: "probing" while the probe runs.
func (rt *Runtime) SandboxSummaryNow() string {
	select {
	case <-rt.probed:
		return rt.SandboxSummary()
	default:
		return "probing (ask daemon/status)"
	}
}

func (rt *Runtime) workspace(root string) (*workspace, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	canon := tools.Canonical(abs)
	st, err := os.Stat(canon)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", abs, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory", abs)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if w := rt.workspaces[canon]; w != nil {
		return w, nil
	}
	fws, err := fsafe.NewWorkspace(canon)
	if err != nil {
		return nil, err
	}
	w := &workspace{root: canon, fs: fws, queue: &tools.MutationQueue{}}
	rt.workspaces[canon] = w
	go func() {
		// Temp files a crash left behind; in the background, it walks the tree.
		if _, err := fsafe.SweepTemps(context.Background(), fws, 10*time.Minute); err != nil {
			slog.Warn("sweeping stale temp files", "workspace", canon, "err", err)
		}
	}()
	return w, nil
}
