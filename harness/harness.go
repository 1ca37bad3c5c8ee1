package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/ollama"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/fsafe"
	buildcache "github.com/agentd/agentd/tools/gocache"
	"github.com/agentd/agentd/tools/mcp"
	"github.com/agentd/agentd/tools/sandbox"
	"github.com/agentd/agentd/tools/search"
)

// SessionSpec describes a session to open: a new one (ID empty) or a stored one to resume.
type SessionSpec struct {
	ID        string
	Workspace string // new sessions: the workspace root
	Model     string
	Mode      string
	Title     string
	// Overlay is the documents open in the editors (nil: none, the disk only): tools read them
	// from the buffers, and a change to a document with unsaved changes gets a note for the model.
	Overlay Overlay
	// Writer routes writes of documents open in an editor (nil: disk).
	Writer fsafe.Writer
	// Diagnostics asks the editors for a file's problems after an edit (nil: not asked).
	Diagnostics Diagnostics
	// OllamaHost and ContextCap override the runtime's for this session (the editor's settings).
	OllamaHost string
	ContextCap int
	// MCPServers are extra MCP servers for this session only (a front end's, e.g. ACP's
	// session/new mcpServers): started like the servers of mcp.json, which win a name clash.
	MCPServers []mcp.ServerConfig
}

// Overlay is the editors' open documents, as the tools read them (fsafe and grep).
type Overlay interface {
	fsafe.Overlay
	search.Overlay
}

// Harness is a session's parts before and around its agent loop: journal, tools, policy,
// checkpoints, audit and model. The frontend (editor daemon or terminal) supplies the gate's
// asking half and the event sink, then calls Start.
type Harness struct {
	rt *Runtime
	// settings are written by SetMode and Start while front ends read them (Settings): under mu.
	mu       sync.Mutex
	settings agent.SessionSettings
	// planned is the window PlanWindow foresaw before Start chose it (under mu).
	planned     int
	Replayed    agent.Replayed
	Title       string
	ws          *workspace
	journal     *store.SessionFile
	fs          *fsafe.FS
	registry    *tools.Registry
	Policy      *policy.Policy
	checkpoints *store.Checkpoints
	audit       *store.Audit
	model       ModelClient
	tmpDir      string
	contextCap  int
	overlay     Overlay
	diags       Diagnostics
	// holdMu guards stopHold, which ends the lease that keeps the model loaded during a turn
	// (holdModel).
	holdMu   sync.Mutex
	stopHold context.CancelFunc
	// host is the model server's address for this session (SessionSpec.OllamaHost, or the
	// runtime's); restart, when set, is the history a loop restarted by SetModel resumes from.
	host    string
	restart *restartPoint
	// mcp holds the session's MCP servers (tools/mcp), started in build, shut down in Close.
	mcp *mcp.Set
	// clientMCP are the front end's servers for this session (SessionSpec.MCPServers);
	// mcpNotes says which of them were not started, and why (MCPNotes).
	clientMCP []mcp.ServerConfig
	mcpNotes  []string
	// factsOnce fixes the workspace facts and project instructions for the session: they go into
	// every request, so they are read once.
	factsOnce sync.Once
	factsVal  agent.WorkspaceFacts
	instr     instructionsState
	// turnMu guards prompts (each turn's prompt, for Turns) and undoNotes (what the model is
	// told about undone changes when the next turn starts): see turns.go.
	turnMu    sync.Mutex
	prompts   map[string]string
	undoNotes []string
}

// Open creates or resumes a session's harness.
func (rt *Runtime) Open(spec SessionSpec) (*Harness, error) {
	h := &Harness{rt: rt}
	var err error
	if spec.ID == "" {
		if spec.Workspace == "" {
			return nil, errors.New("a new session needs a workspace")
		}
		model, mode := spec.Model, spec.Mode
		if model == "" {
			model = rt.opts.Model
		}
		if mode == "" {
			mode = rt.opts.ApprovalMode
		}
		if _, err := policy.ParseMode(mode); err != nil {
			return nil, err
		}
		if h.ws, err = rt.workspace(spec.Workspace); err != nil {
			return nil, err
		}
		h.settings = agent.SessionSettings{ID: store.NewSessionID(), Workspace: h.ws.root, Model: model,
			ApprovalMode: mode, Created: time.Now().UTC()}
		if h.journal, err = rt.store.Create(h.settings); err != nil {
			return nil, err
		}
		h.Title = spec.Title
		if spec.Title != "" {
			h.journal.Append(agent.Entry{Type: agent.EntryTitle, Time: time.Now().UTC(), Title: spec.Title})
		}
	} else {
		if h.journal, h.Replayed, err = rt.store.Resume(spec.ID); err != nil {
			return nil, err
		}
		h.settings, h.Title = h.Replayed.Settings, h.Replayed.Title
		if h.Replayed.Mode != "" {
			h.settings.ApprovalMode = h.Replayed.Mode
		}
		if spec.Model != "" {
			h.settings.Model = spec.Model
		}
		if h.ws, err = rt.workspace(h.settings.Workspace); err != nil {
			h.journal.Close()
			return nil, err
		}
	}
	h.contextCap = spec.ContextCap
	if h.contextCap == 0 {
		h.contextCap = rt.opts.ContextCap
	}
	h.overlay = spec.Overlay
	h.diags = spec.Diagnostics
	h.clientMCP = spec.MCPServers
	if err := h.build(spec.Writer, spec.OllamaHost); err != nil {
		if h.mcp != nil {
			h.mcp.Close()
		}
		h.journal.Close()
		return nil, err
	}
	return h, nil
}

func (h *Harness) build(writer fsafe.Writer, host string) error {
	rt := h.rt
	rt.probe()
	h.fs = fsafe.New(h.ws.fs, fsafe.Options{Overlay: h.overlay, Writer: writer, Queue: h.ws.queue})
	h.tmpDir = filepath.Join(rt.store.Dir(), "tmp", h.settings.ID)
	if err := os.MkdirAll(h.tmpDir, 0o700); err != nil {
		return err
	}
	// Commands get agentd's own Go build cache, separate from the user's (a command cannot plant
	// objects the user's own builds would use), one per workspace (nor objects another
	// workspace's builds would use), shared by the workspace's sessions so builds stay warm.
	cacheDir := rt.opts.BuildCache
	if cacheDir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = filepath.Join(rt.store.Dir(), "cache")
		}
		cacheDir = filepath.Join(cache, "agentd", "go-build")
	}
	gocache, err := buildcache.OpenLayer(cacheDir, h.ws.root, time.Now())
	if err != nil {
		return err
	}
	// Layered over the user's own cache, read-only (tools/gocache): the first build of a session
	// starts warm, and still writes only agentd's cache.
	cacheEnv := []string{"GOCACHE=" + gocache}
	if rt.sandbox != nil {
		user, err := buildcache.UserDir()
		var note string
		cacheEnv, note = buildcache.SandboxEnv(rt.sandbox.HelperPath(), gocache, user, []string{h.ws.root, h.tmpDir})
		if note != "" {
			slog.Debug("sandboxed go commands do not read the user's build cache", "why", note, "err", err)
		}
	}
	bash := builtin.BashConfig{Sandbox: rt.sandbox, SpillDir: filepath.Join(h.tmpDir, "spill"),
		Policy: sandbox.Policy{
			TmpDir:       h.tmpDir,
			WritableDirs: []string{gocache},
			SetEnv:       cacheEnv,
			StateDir:     rt.store.Dir(), // masked: other sessions' journals and output
		}}
	switch {
	case rt.sandbox == nil:
		bash.Runner = unavailableRunner{rt}
	case rt.sandbox.Mode() == sandbox.ModeNone:
		// No sandbox works here. Commands may still run, unconfined, but only one by one with
		// the user's explicit approval: the preview says "sandbox: none", which the policy asks
		// about in every mode and never lets a grant cover.
		p := bash.Policy
		p.Unsandboxed = true
		bash.Runner = builtin.NewSandboxRunner(rt.sandbox, p, h.ws.fs)
	}
	ts, err := builtin.New(builtin.Config{FS: h.fs, Bash: bash, Search: builtin.SearchConfig{Overlay: h.overlay}})
	if err != nil {
		return err
	}
	if err := h.startMCP(); err != nil {
		return err
	}
	if h.registry, err = tools.NewRegistry(append(ts, h.mcp.Tools()...)...); err != nil {
		return err
	}
	pcfg, err := policy.Load(rt.opts.Policy, h.ws.root)
	if err != nil {
		return err
	}
	for _, w := range pcfg.Warnings {
		slog.Warn("config", "warning", w)
	}
	if h.Policy, err = policy.New(*pcfg); err != nil {
		return err
	}
	mode, _ := policy.ParseMode(h.settings.ApprovalMode)
	if err := h.Policy.SetMode(mode); err != nil {
		return err
	}
	if h.checkpoints, err = rt.store.Checkpoints(h.ws.fs, h.settings.ID, store.CheckpointOptions{Queue: h.ws.queue}); err != nil {
		return err
	}
	h.audit = rt.store.Audit(h.settings.ID)
	if host == "" {
		host = rt.opts.OllamaHost
	}
	h.host = host
	if h.model, err = rt.opts.Models(host, h.settings.Model); err != nil {
		return err
	}
	return nil
}

// ID returns the session ID.
func (h *Harness) ID() string { return h.settings.ID }

// Settings returns a copy of the session's settings (SetMode and Start change them).
func (h *Harness) Settings() agent.SessionSettings {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.settings
}

// Workspace returns the session's workspace root.
func (h *Harness) Workspace() string { return h.ws.root }

// Model returns the model client.
func (h *Harness) Model() ModelClient { return h.model }

// Registry returns the session's tools.
func (h *Harness) Registry() *tools.Registry { return h.registry }

// SetMode changes the approval mode and records it.
func (h *Harness) SetMode(mode string) error {
	m, err := policy.ParseMode(mode)
	if err != nil {
		return err
	}
	if err := h.Policy.SetMode(m); err != nil {
		return err
	}
	h.mu.Lock()
	h.settings.ApprovalMode = m.String()
	h.mu.Unlock()
	return h.journal.Append(agent.Entry{Type: agent.EntryMode, Time: time.Now().UTC(), Mode: m.String()})
}

// Revert restores the files a turn changed ("" : the last turn that changed files).
func (h *Harness) Revert(turnID string) (string, store.RevertResult, error) {
	if turnID == "" {
		turns, err := h.checkpoints.Turns()
		if err != nil {
			return "", store.RevertResult{}, err
		}
		for _, t := range turns {
			if t.Reverted == nil {
				turnID = t.ID
				break
			}
		}
		if turnID == "" {
			return "", store.RevertResult{}, errors.New("no turn of this session changed files")
		}
	}
	res, err := h.checkpoints.Revert(turnID)
	return turnID, res, err
}

// Close closes the journal and shuts the MCP servers down.
func (h *Harness) Close() error {
	h.holdModel(nil)
	h.rt.observeChat(h, nil)
	if h.mcp != nil {
		h.mcp.Close()
	}
	return h.journal.Close()
}

// holdModel keeps the model loaded from a turn's start to its end (ollama.Client.KeepLoaded), so
// a long review or command does not cost a reload; any other event (nil: Close) leaves it be.
func (h *Harness) holdModel(e agent.Event) {
	var start bool
	switch e.(type) {
	case agent.TurnStart:
		start = true
	case agent.TurnEnd, nil:
	default:
		return
	}
	h.holdMu.Lock()
	defer h.holdMu.Unlock()
	if h.stopHold != nil {
		h.stopHold()
		h.stopHold = nil
	}
	k, ok := h.model.(interface{ KeepLoaded(context.Context) })
	if !start || !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stopHold = cancel
	go k.KeepLoaded(ctx)
}

// Start builds the agent loop. ask answers the calls the policy wants the user to decide; sink
// receives every event. The model is asked for its capabilities and the context window is chosen
// here, once.
func (h *Harness) Start(ctx context.Context, ask Asker, sink agent.Sink) (*agent.Session, error) {
	info, err := h.model.Info(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	numCtx := h.settings.NumCtx
	h.mu.Unlock()
	if numCtx == 0 {
		numCtx = PlanNumCtx(info, h.registry.Definitions(), h.contextCap)
		h.mu.Lock()
		h.settings.NumCtx = numCtx
		settings := h.settings
		h.mu.Unlock()
		h.journal.Append(agent.Entry{Type: agent.EntrySession, Time: time.Now().UTC(), Session: &settings})
	}
	if w := h.ToolShare().Warning; w != "" {
		// `agentd run` prints it on stderr; editors get it as a log message, and in the session's
		// info from now on.
		slog.Warn(w, "session", h.settings.ID)
	}
	history, historyTurns, turns := h.Replayed.History, h.Replayed.HistoryTurns, len(h.Replayed.Turns)
	if r := h.restart; r != nil {
		history, historyTurns, turns = r.history, r.turnOf, r.turns
	}
	g := newGate(h, ask)
	gate := h.audit.WrapGate(g.Decide)
	cp := h.checkpoints
	cfg := agent.SessionConfig{
		ID: h.settings.ID, Model: h.model, Info: info, NumCtx: numCtx, Think: h.rt.opts.Think,
		Journal: h.journal, Facts: h.facts(), History: history, HistoryTurns: historyTurns, Turns: turns,
		TurnNote: h.turnNote,
		Kernel: agent.Config{
			Registry:   h.registry,
			Gate:       gate,
			Middleware: []agent.Middleware{cp.Middleware(), h.diagnosticsMiddleware},
			After:      h.afterCall,
			// An editor shows every file change of a reply at once; a terminal asks in turn.
			ReviewTogether: asksTogether(ask),
		},
		Sink: func(e agent.Event) {
			cp.Observe(e)
			h.observeTurn(e)
			h.holdModel(e)
			h.rt.observeChat(h, e)
			h.audit.Observe(e)
			if sink != nil {
				sink(e)
			}
		},
	}
	sess, err := agent.NewSession(cfg)
	if err != nil {
		return nil, err
	}
	g.cancelTurn = func() { sess.Cancel() }
	return sess, nil
}

func asksTogether(ask Asker) bool {
	t, ok := ask.(TogetherAsker)
	return ok && t.AsksTogether()
}

// PlanNumCtx is the context window a session chooses for a model, its tools and the configured
// cap. The estimate does not depend on the workspace: the context block counts at its largest
// (instructions at their cap, and room for the path and the git summary), so sessions with the
// same model and tools choose the same window in every folder, and a session never reloads the
// model that the one before it, elsewhere, left loaded.
func PlanNumCtx(info agent.ModelInfo, defs []tools.Definition, contextCap int) int {
	sys := agent.SystemPrompt(defs, !info.Tools)
	estimate := (len(sys) + agent.MaxInstructionsBytes + 1024) / 3
	for _, d := range defs {
		estimate += (len(d.Description) + len(d.Parameters)) / 3
	}
	return ollama.ChooseNumCtx(info.ContextLength, contextCap, estimate+8192, 8192)
}

// facts describe the workspace for the context block of the prompt (agent.ContextBlock): read
// once per harness, so every request of the session carries the same bytes.
func (h *Harness) facts() agent.WorkspaceFacts {
	h.factsOnce.Do(func() {
		h.instr = readInstructions(h.rt.opts.Policy, h.ws.root)
		h.factsVal = agent.WorkspaceFacts{Root: h.ws.root, OS: runtime.GOOS + "/" + runtime.GOARCH,
			Git: gitSummary(h.ws.root), Instructions: h.instr.In}
	})
	return h.factsVal
}

// gitSummary describes the repository at root in a few words, or "" outside a repository.
func gitSummary(root string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain=v1", "--branch", "--untracked-files=no")
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	branch := strings.TrimPrefix(lines[0], "## ")
	if i := strings.Index(branch, "..."); i >= 0 {
		branch = branch[:i]
	}
	changed := len(lines) - 1
	if changed == 0 {
		return "a git repository, branch " + branch + ", no uncommitted changes"
	}
	return fmt.Sprintf("a git repository, branch %s, %d changed files", branch, changed)
}

// afterCall tells the model when a file it changed differs between the editor's buffer and the
// disk (an edit of a document with unsaved changes lands in the buffer only).
func (h *Harness) afterCall(ctx context.Context, call *tools.Call, res *tools.Result) (*agent.ResultPatch, error) {
	if res.IsError {
		return nil, nil
	}
	t, ok := h.registry.Lookup(call.Name)
	if !ok {
		return nil, nil
	}
	pm, ok := t.(tools.PermissionMetadata)
	if !ok {
		return nil, nil
	}
	perm := pm.Permission(call)
	if perm.Access != tools.AccessWrite {
		return nil, nil
	}
	var notes []string
	if h.overlay == nil {
		return nil, nil
	}
	for _, p := range perm.Paths {
		doc, open := h.overlay.Document(p)
		if !open {
			continue
		}
		disk, err := os.ReadFile(p)
		if err != nil || string(disk) != string(doc.Content) {
			rel, _ := filepath.Rel(h.ws.root, p)
			notes = append(notes, fmt.Sprintf("Note: %s is open in the editor with unsaved changes; your change is in the editor's buffer, not yet on disk (commands see the old file until the user saves).", filepath.ToSlash(rel)))
		}
	}
	if len(notes) == 0 {
		return nil, nil
	}
	content := append(append([]tools.Block(nil), res.Content...), tools.Block{Type: "text", Text: "\n" + strings.Join(notes, "\n")})
	return &agent.ResultPatch{Content: content}, nil
}
