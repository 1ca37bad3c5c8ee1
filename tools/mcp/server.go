package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/changeset"
	"github.com/agentd/agentd/tools/fsafe"
	"github.com/agentd/agentd/tools/sandbox"
)

// State is where a server is in its life.
type State string

const (
	StateReady   State = "ready"
	StateFailed  State = "failed"  // could not start, or stopped and out of restarts
	StateStopped State = "stopped" // exited; the next call starts it again
	StateClosed  State = "closed"
)

// Options are what a Set needs from the harness.
type Options struct {
	// Workspace is the session's workspace root (absolute, canonical): writable for stdio
	// servers, and their default working directory.
	Workspace string
	// Sandbox runs stdio servers. Nil, or a sandbox in ModeNone: stdio servers do not start (an
	// MCP server never runs unsandboxed without the user deciding so, which is not offered yet).
	Sandbox *sandbox.Sandbox
	// Policy is the base sandbox policy (TmpDir, StateDir, ProtectedPaths, …). The workspace,
	// the server's cache directory, its writable directories, its network setting and its
	// environment are added per server.
	Policy sandbox.Policy
	// CacheDir is the parent of each stdio server's own writable cache directory
	// (<CacheDir>/<server>, exported as XDG_CACHE_HOME and npm_config_cache). Required for stdio
	// servers.
	CacheDir string
	// Env is the environment the minimal set (MinimalEnv) is taken from (nil: os.Environ()).
	Env []string
	// MaxResultBytes caps the text of one result (0: DefaultMaxResultBytes).
	MaxResultBytes int
	// FS is the session's file-safety facade: a stdio server writes to a copy-on-write layer
	// over the workspace (like a command), and after each call the allowlisted part of what it
	// changed is applied through FS (package changeset); the rest is held and the result says
	// so. Nil: nothing a server writes in the workspace is ever applied.
	FS *fsafe.FS
}

// server is one configured MCP server in one session: its process or HTTP connection, its tools
// (fixed at start) and its restart budget.
type server struct {
	cfg  ServerConfig
	opts *Options

	mu       sync.Mutex
	state    State
	err      error // why the server is not ready
	conn     *conn
	restarts int
	closed   bool
	tools    []*sdk.Tool
	version  string
	filtered []string // tools the configuration leaves out (tools, disabledTools)

	// progress routes notifications/progress to the running call that sent the token.
	progress sync.Map // token string → tools.ProgressFunc-like func(string)
	nextTok  atomic.Int64
	listed   atomic.Bool // the session's tool list has been read
}

// conn is one running instance of a server.
type conn struct {
	cs     *sdk.ClientSession
	done   chan struct{} // closed when the instance has ended (process reaped, session closed)
	exit   error         // why it ended; set before done is closed
	stop   context.CancelFunc
	stderr *tail
	pid    int
	// applyMu orders applying the layer's changes (after a call) with Release (when the
	// process ended), which discards the layer; released is set then.
	applyMu  sync.Mutex
	cmd      *sandbox.Cmd
	released bool
	// offered are the changes put to the user's review after earlier calls (changeset.Once),
	// under applyMu.
	offered map[string]bool
}

func (c *conn) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// start starts a new instance. The caller holds s.mu.
func (s *server) start(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout())
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "agentd", Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{}, // no roots, sampling or elicitation
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			if !s.listed.Load() {
				return // before the session's list was read: that list has the change
			}
			slog.Info("an MCP server changed its tool list; the change applies to the next session (the tool list of a session is fixed)", "server", s.cfg.Name)
		},
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			tok, ok := req.Params.ProgressToken.(string)
			if !ok {
				return
			}
			if fn, ok := s.progress.Load(tok); ok {
				fn.(func(*sdk.ProgressNotificationParams))(req.Params)
			}
		},
	})
	if s.cfg.Stdio() {
		return s.startStdio(ctx, client)
	}
	return s.startHTTP(ctx, client)
}

func (s *server) startHTTP(ctx context.Context, client *sdk.Client) (*conn, error) {
	hc := &http.Client{Transport: headerTransport{headers: s.cfg.Headers, base: http.DefaultTransport},
		// Never follow a redirect off the loopback server.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxRetries: 1}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", s.cfg.URL, err)
	}
	c := &conn{cs: cs, done: make(chan struct{}), stop: func() {}}
	go func() {
		err := cs.Wait()
		c.exit = fmt.Errorf("the connection to %s closed", s.cfg.URL)
		if err != nil {
			c.exit = fmt.Errorf("the connection to %s closed: %v", s.cfg.URL, err)
		}
		close(c.done)
	}()
	return c, nil
}

type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// sandboxPolicy is the policy a stdio server runs under.
func (s *server) sandboxPolicy() (sandbox.Policy, error) {
	o := s.opts
	p := o.Policy
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	p.Env = env
	p.EnvAllow = MinimalEnv
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if o.CacheDir == "" {
		return p, errors.New("no cache directory for MCP servers")
	}
	cache := filepath.Join(o.CacheDir, s.cfg.Name)
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return p, err
	}
	p.WorkspaceRoots = []string{o.Workspace}
	p.WritableDirs = append(append([]string(nil), p.WritableDirs...), cache)
	for _, w := range s.cfg.Writable {
		p.WritableDirs = append(p.WritableDirs, expandHome(w, home))
	}
	p.Network = s.cfg.Network
	set := []string{"XDG_CACHE_HOME=" + cache, "npm_config_cache=" + filepath.Join(cache, "npm"),
		"npm_config_update_notifier=false"}
	p.SetEnv = append(append(append([]string(nil), p.SetEnv...), set...), sortedEnv(s.cfg.Env)...)
	return p, nil
}

func (s *server) startStdio(ctx context.Context, client *sdk.Client) (*conn, error) {
	sb := s.opts.Sandbox
	if sb == nil || sb.Mode() == sandbox.ModeNone {
		return nil, errors.New("no sandbox works on this machine, and MCP servers do not run unsandboxed (see `agentd doctor`)")
	}
	pol, err := s.sandboxPolicy()
	if err != nil {
		return nil, err
	}
	dir := s.cfg.Cwd
	if dir == "" {
		dir = s.opts.Workspace
	}
	// The instance lives until the server is closed or restarted, not just for ctx (start-up).
	life, stop := context.WithCancel(context.Background())
	cmd, err := sb.Command(life, pol, append([]string{s.cfg.Command}, s.cfg.Args...), dir)
	if err != nil {
		stop()
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		stop()
		cmd.Release()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stop()
		cmd.Release()
		inR.Close()
		inW.Close()
		return nil, err
	}
	errTail := &tail{max: 8 << 10}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errTail
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		stop()
		cmd.Release()
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("starting %s: %w", s.cfg.Command, err)
	}
	inR.Close()
	outW.Close()
	c := &conn{done: make(chan struct{}), stop: stop, stderr: errTail, pid: cmd.Process.Pid, cmd: cmd}
	go func() {
		werr := cmd.Wait()
		c.applyMu.Lock()
		cmd.Release()
		c.released = true
		c.applyMu.Unlock()
		switch {
		case werr != nil:
			c.exit = fmt.Errorf("the server process ended: %v%s", werr, errTail.suffix())
		default:
			c.exit = fmt.Errorf("the server process exited%s", errTail.suffix())
		}
		stop()
		// Closing our ends makes every pending call fail at once.
		outR.Close()
		inW.Close()
		close(c.done)
	}()
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		stop()
		<-c.done
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s did not complete the MCP handshake within %s%s", s.cfg.Command, s.cfg.StartTimeout(), errTail.suffix())
		}
		return nil, fmt.Errorf("%v (handshake: %v)", c.exit, err)
	}
	c.cs = cs
	go func() {
		// The connection can end while the process lives (a frame over the size limit, garbage
		// on stdout): then the instance is over, and the process is killed.
		_ = cs.Wait()
		stop()
	}()
	slog.Debug("MCP server started", "server", s.cfg.Name, "sandbox", cmd.Summary, "pid", c.pid)
	return c, nil
}

// close ends an instance: the session closes (stdin closes, the server should exit), then, after
// a grace period, the sandbox kills what is left.
func (c *conn) close() {
	if c.cs != nil {
		go c.cs.Close() // may wait for the server; the kill below bounds it
	}
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
	}
	c.stop()
	<-c.done
}

// open starts the server and lists its tools (once per session).
func (s *server) open(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.start(ctx)
	if err != nil {
		s.state, s.err = StateFailed, err
		return
	}
	lctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout())
	defer cancel()
	var list []*sdk.Tool
	for t, err := range c.cs.Tools(lctx, nil) {
		if err != nil {
			c.close()
			s.state, s.err = StateFailed, fmt.Errorf("listing tools: %w", err)
			return
		}
		list = append(list, t)
	}
	if ir := c.cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		s.version = ir.ServerInfo.Name + " " + ir.ServerInfo.Version
	}
	s.conn, s.tools, s.state = c, list, StateReady
	s.listed.Store(true)
}

// session returns a live instance, starting the server again when it exited and the restart
// budget allows.
func (s *server) session(ctx context.Context) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, tools.Errorf(tools.Cancelled, "MCP server %s is shut down (its session ended)", s.cfg.Name)
	}
	if s.conn != nil && s.conn.alive() {
		return s.conn, nil
	}
	if s.conn != nil {
		s.err = s.conn.exit
		s.conn = nil
	}
	if s.restarts >= s.cfg.Restarts() {
		s.state = StateFailed
		return nil, tools.Errorf(tools.ExecFailed, "MCP server %s is not running (%v) and was already restarted %d time(s) in this session; it is not started again until the next session",
			s.cfg.Name, s.err, s.restarts)
	}
	s.restarts++
	slog.Warn("restarting an MCP server", "server", s.cfg.Name, "restart", s.restarts, "why", s.err)
	c, err := s.start(ctx)
	if err != nil {
		s.state, s.err = StateStopped, err
		return nil, tools.Errorf(tools.ExecFailed, "MCP server %s could not be started again: %v", s.cfg.Name, err)
	}
	s.conn, s.state = c, StateReady
	return c, nil
}

// call runs one tool call.
// call calls a tool. note tells the model what became of the changes the call made in the
// workspace (see applyChanges).
// What needs the user's review and can be shown as a file change is put in *fus (the
// kernel gates it like an edit).
func (s *server) call(ctx context.Context, tool string, args map[string]any, fus *[]tools.FollowUp) (_ *sdk.CallToolResult, note string, _ error) {
	c, err := s.session(ctx)
	if err != nil {
		return nil, "", err
	}
	if c.cmd != nil {
		// What the call wrote lands in the server's layer; it reaches the workspace through
		// the gate's allowlist when the call returns, whatever the call's result.
		defer func() { note, *fus = s.applyChanges(ctx, c, tool) }()
	}
	timeout := s.cfg.CallTimeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type out struct {
		res *sdk.CallToolResult
		err error
	}
	ch := make(chan out, 1)
	params := &sdk.CallToolParams{Name: tool, Arguments: args}
	tok := fmt.Sprintf("agentd-%s-%d", s.cfg.Name, s.nextTok.Add(1))
	params.SetProgressToken(tok)
	s.progress.Store(tok, func(p *sdk.ProgressNotificationParams) {
		msg := fmt.Sprintf("%s: progress %g", tool, p.Progress)
		if p.Total > 0 {
			msg += fmt.Sprintf("/%g", p.Total)
		}
		if p.Message != "" {
			msg += " " + p.Message
		}
		tools.ReportProgress(ctx, tools.Progress{Text: msg, Details: p})
	})
	defer s.progress.Delete(tok)
	go func() {
		res, err := c.cs.CallTool(cctx, params)
		ch <- out{res, err}
	}()
	var o out
	select {
	case o = <-ch:
	case <-c.done:
		// The server died mid-call: do not wait for the SDK to notice.
		return nil, "", s.died(c, tool)
	}
	if o.err == nil {
		return o.res, "", nil
	}
	switch {
	case ctx.Err() != nil:
		return nil, "", tools.Errorf(tools.Cancelled, "the call of %s on MCP server %s was cancelled (the server was told: notifications/cancelled)", tool, s.cfg.Name)
	case cctx.Err() != nil:
		return nil, "", tools.Errorf(tools.Timeout, "MCP server %s did not answer %s within %s; the call was cancelled (the server was told: notifications/cancelled)", s.cfg.Name, tool, timeout)
	case !c.alive() || errors.Is(o.err, sdk.ErrConnectionClosed) || errors.Is(o.err, io.EOF) || errors.Is(o.err, io.ErrUnexpectedEOF):
		// The connection ended: the process is being reaped (or the HTTP session is gone).
		select {
		case <-c.done:
		case <-time.After(2 * time.Second):
		}
		return nil, "", s.died(c, tool)
	}
	return nil, "", tools.Errorf(tools.ExecFailed, "MCP server %s failed the call of %s: %v", s.cfg.Name, tool, o.err)
}

func (s *server) died(c *conn, tool string) error {
	why := c.exit
	if why == nil {
		why = errors.New("the connection closed")
	}
	s.mu.Lock()
	left := s.cfg.Restarts() - s.restarts
	if s.conn == c {
		s.state, s.err = StateStopped, why
	}
	s.mu.Unlock()
	next := "it is started again at the next call"
	if left <= 0 {
		next = "it is not started again in this session"
	}
	return tools.Errorf(tools.ExecFailed, "MCP server %s stopped during the call of %s: %v; %s", s.cfg.Name, tool, why, next)
}

// shutdown ends the server for good.
func (s *server) shutdown() {
	s.mu.Lock()
	s.closed = true
	c := s.conn
	s.conn, s.state = nil, StateClosed
	s.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// tail keeps the last max bytes written to it (a server's stderr: a flood costs nothing).
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
	n   int64
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n += int64(len(p))
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// suffix is "; stderr: …last lines…" or "".
func (t *tail) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	s = strings.Join(lines, " | ")
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return "; stderr: " + s
}

// applyChanges applies what the server changed in its layer since the last call (package
// changeset) and returns the text that tells the model, and the changes offered for review.
func (s *server) applyChanges(ctx context.Context, c *conn, tool string) (string, []tools.FollowUp) {
	c.applyMu.Lock()
	defer c.applyMu.Unlock()
	if c.released {
		return "", nil
	}
	if s.opts.FS == nil {
		if chs, _ := c.cmd.Changes(); len(chs) > 0 {
			return "[NOT applied: what the server changed in the workspace (agentd has no workspace to apply it to here).]\n", nil
		}
		return "", nil
	}
	cs, err := changeset.Apply(context.WithoutCancel(ctx), s.opts.FS, c.cmd)
	if err != nil {
		return fmt.Sprintf("[None of the server's changes were applied: agentd could not read them (%v).]\n", err), nil
	}
	if c.offered == nil {
		c.offered = map[string]bool{}
	}
	cs.Once(c.offered)
	return cs.Text(), cs.FollowUps(s.opts.FS, "the MCP server "+s.cfg.Name+" (tool "+tool+")")
}
