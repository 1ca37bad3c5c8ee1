package policy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/agentd/agentd/internal/atomicfile"
)

// Config is the policy configuration: the built-in rules, the user's config and, for a trusted
// workspace, the workspace's config (which can only tighten).
type Config struct {
	// Mode is the default approval mode.
	Mode Mode
	// Rules are all rules in force (built-in unless disabled, user, workspace). Nil means the
	// built-in rules.
	Rules *Rules
	// Protect and Sensitive are extra path patterns (see the package documentation).
	Protect   []string
	Sensitive []string
	// ProtectedDirs are directories whose files are always write-protected: agentd's own config
	// and state directories (Load sets them).
	ProtectedDirs []string
	// Warnings are problems that were ignored (a workspace config that tried to loosen the
	// policy, an untrusted workspace's config). Show them to the user.
	Warnings []string
	// Files lists the config files that were read, in order.
	Files []string
	// Settings are the daemon settings of the user config (model, ollama-host, engine,
	// engine-url, engine-api-key-env, context-length, think, review-timeout, keep-alive,
	// command-memory, command-pids, completion-model), by keyword. A workspace config cannot set them: it could point
	// agentd at another model server.
	Settings map[string]string
}

// SettingKeys are the daemon settings a user config may hold, one per line: `model qwen3:8b`.
var SettingKeys = []string{"model", "ollama-host", "engine", "engine-url", "engine-api-key-env", "context-length",
	"think", "review-timeout", "keep-alive", "command-memory", "command-pids", "completion-model"}

// Locations are where agentd keeps the user's configuration and state, outside any workspace.
type Locations struct {
	// ConfigDir holds the user config file "config" ($XDG_CONFIG_HOME/agentd).
	ConfigDir string
	// StateDir holds the trusted-workspace list "trusted-workspaces" ($XDG_STATE_HOME/agentd).
	StateDir string
}

// DefaultLocations returns $XDG_CONFIG_HOME/agentd (default ~/.config/agentd) and
// $XDG_STATE_HOME/agentd (default ~/.local/state/agentd).
func DefaultLocations() (Locations, error) {
	cfg, err := os.UserConfigDir()
	if err != nil {
		return Locations{}, fmt.Errorf("policy: config dir: %w", err)
	}
	state := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(state) {
		home, err := os.UserHomeDir()
		if err != nil {
			return Locations{}, fmt.Errorf("policy: state dir: %w", err)
		}
		state = filepath.Join(home, ".local", "state")
	}
	return Locations{ConfigDir: filepath.Join(cfg, "agentd"), StateDir: filepath.Join(state, "agentd")}, nil
}

// UserConfigFile is the user's config file.
func (l Locations) UserConfigFile() string { return filepath.Join(l.ConfigDir, "config") }

// TrustFile is the list of trusted workspaces.
func (l Locations) TrustFile() string { return filepath.Join(l.StateDir, "trusted-workspaces") }

// WorkspaceConfigName is the workspace config file, relative to the workspace root.
const WorkspaceConfigName = ".agentd/config"

// maxConfigSize bounds a config file.
const maxConfigSize = 1 << 20

var errEmptyPattern = errors.New("empty pattern")

// Load builds the configuration: the built-in rules, then the user config file (if it exists),
// then — only when workspace is non-empty and trusted in the trust file — the workspace config,
// which may only tighten (stricter mode, ask and forbid rules, protect and sensitive patterns).
// A syntax error or a failing rule example in any file read is an error; loosening attempts in
// the workspace config are warnings.
func Load(loc Locations, workspace string) (*Config, error) {
	cfg := &Config{Mode: ModeAsk}
	for _, d := range []string{loc.ConfigDir, loc.StateDir} {
		if d != "" {
			cfg.ProtectedDirs = append(cfg.ProtectedDirs, d)
		}
	}
	useDefaults := true
	var userRules, wsRules *Rules

	if loc.ConfigDir != "" {
		name := loc.UserConfigFile()
		data, err := readConfigFile(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			f, err := parseFile(name, data, true)
			if err != nil {
				return nil, err
			}
			cfg.Files = append(cfg.Files, name)
			if f.mode != nil {
				cfg.Mode = *f.mode
			}
			if f.defaultsOff {
				useDefaults = false
			}
			userRules = f.rules
			cfg.Protect = append(cfg.Protect, f.protect...)
			cfg.Sensitive = append(cfg.Sensitive, f.sensitive...)
			cfg.Settings = f.settings
		}
	}

	if workspace != "" {
		rules, err := cfg.loadWorkspace(loc, workspace)
		if err != nil {
			return nil, err
		}
		wsRules = rules
	}

	if useDefaults {
		cfg.Rules = Merge(DefaultRules(), userRules, wsRules)
	} else {
		cfg.Rules = Merge(userRules, wsRules)
	}
	return cfg, nil
}

func (cfg *Config) warn(format string, args ...any) {
	cfg.Warnings = append(cfg.Warnings, fmt.Sprintf(format, args...))
}

// loadWorkspace reads a trusted workspace's config and applies it as a tightening.
func (cfg *Config) loadWorkspace(loc Locations, workspace string) (*Rules, error) {
	ws := canonicalPath(workspace)
	name := filepath.Join(ws, WorkspaceConfigName)
	trusted := false
	if loc.StateDir != "" {
		ts, err := OpenTrust(loc.TrustFile())
		if err != nil {
			return nil, err
		}
		trusted = ts.Trusted(ws)
	}
	if !trusted {
		if _, err := os.Lstat(name); err == nil {
			cfg.warn("%s ignored: the workspace is not trusted", name)
		}
		return nil, nil
	}
	data, err := readWorkspaceConfig(ws)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := parseFile(name, data, true)
	if err != nil {
		return nil, err
	}
	cfg.Files = append(cfg.Files, name)
	if f.mode != nil {
		switch {
		case f.mode.StricterThan(cfg.Mode):
			cfg.Mode = *f.mode
		case *f.mode != cfg.Mode:
			cfg.warn("%s: mode %s ignored: it is looser than %s, and workspace config can only tighten",
				f.modeSource, f.mode, cfg.Mode)
		}
	}
	if f.defaultsOff {
		cfg.warn("%s: defaults off ignored: workspace config can only tighten", f.defaultsSource)
	}
	for _, src := range f.settingSources {
		cfg.warn("%s ignored: only the user config may set it", src)
	}
	var kept []Rule
	for _, r := range f.rules.List() {
		if r.Action == ActionAllow {
			cfg.warn("%s: rule `%s` ignored: workspace config cannot add allow rules", r.Source, r.String())
			continue
		}
		if len(r.Sockets) > 0 {
			cfg.warn("%s: socket lines of rule `%s` ignored: only the user config can open unix sockets", r.Source, r.String())
			r.Sockets = nil
		}
		kept = append(kept, r)
	}
	cfg.Protect = append(cfg.Protect, f.protect...)
	cfg.Sensitive = append(cfg.Sensitive, f.sensitive...)
	return NewRules(kept...)
}

// readConfigFile reads a user-owned config file, refusing non-regular files and large ones.
func readConfigFile(name string) ([]byte, error) {
	st, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("policy: %s is not a regular file", name)
	}
	f, err := os.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, name)
}

// readWorkspaceConfig reads <ws>/.agentd/config through os.Root, so that a symlink cannot lead
// outside the workspace, and refuses anything but a regular file (a FIFO would block).
func readWorkspaceConfig(ws string) ([]byte, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	st, err := root.Lstat(WorkspaceConfigName)
	if err != nil {
		return nil, err
	}
	name := filepath.Join(ws, WorkspaceConfigName)
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("policy: %s is not a regular file", name)
	}
	f, err := root.OpenFile(WorkspaceConfigName, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, name)
}

func readLimited(f *os.File, name string) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("policy: %s is not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfigSize {
		return nil, fmt.Errorf("policy: %s is larger than %d bytes", name, maxConfigSize)
	}
	return data, nil
}

// fileContents is one parsed config or rule file.
type fileContents struct {
	mode           *Mode
	modeSource     string
	defaultsOff    bool
	defaultsSource string
	rules          *Rules
	protect        []string
	sensitive      []string
	settings       map[string]string
	settingSources []string
}

// parseFile parses the line format shared by rule files and config files. With config false only
// rule lines are accepted. Every rule's examples are checked.
func parseFile(name string, data []byte, config bool) (*fileContents, error) {
	f := &fileContents{}
	var rules []Rule
	cur := -1 // index of the rule that example, not and reason lines belong to
	var errs []error
	fail := func(src, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", src, fmt.Sprintf(format, args...)))
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxConfigSize)
	ln := 0
	for sc.Scan() {
		ln++
		src := fmt.Sprintf("%s:%d", name, ln)
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kw, rest := line, ""
		if i := strings.IndexAny(line, " \t"); i >= 0 {
			kw, rest = line[:i], strings.TrimSpace(line[i+1:])
		}
		switch kw {
		case "allow", "ask", "forbid":
			action, _ := ParseAction(kw)
			words, err := parseWords(rest)
			if err != nil {
				fail(src, "%s rule: %v", kw, err)
				cur = -1
				continue
			}
			rules = append(rules, Rule{Action: action, Prefix: words, Source: src})
			cur = len(rules) - 1
		case "socket":
			if cur < 0 || rules[cur].Action == ActionForbid {
				fail(src, "%q must follow an allow or ask rule line", kw)
				continue
			}
			words, err := parseWords(rest)
			if err != nil || len(words) != 1 || !filepath.IsAbs(words[0]) || filepath.Clean(words[0]) == "/" {
				fail(src, "%q takes one absolute path (socket /run/docker.sock)", kw)
				continue
			}
			rules[cur].Sockets = append(rules[cur].Sockets, filepath.Clean(words[0]))
		case "example", "not", "reason":
			if cur < 0 {
				fail(src, "%q must follow a rule line (allow, ask or forbid)", kw)
				continue
			}
			if rest == "" {
				fail(src, "%q needs a value", kw)
				continue
			}
			r := &rules[cur]
			switch kw {
			case "example":
				r.Examples = append(r.Examples, rest)
			case "not":
				r.Not = append(r.Not, rest)
			case "reason":
				if r.Reason != "" {
					r.Reason += " "
				}
				r.Reason += rest
			}
		case "mode", "defaults", "protect", "sensitive":
			cur = -1
			if !config {
				fail(src, "%q is only valid in a config file", kw)
				continue
			}
			words, err := parseWords(rest)
			if err != nil || len(words) != 1 {
				fail(src, "%q takes exactly one value", kw)
				continue
			}
			v := words[0]
			switch kw {
			case "mode":
				m, err := ParseMode(v)
				if err != nil {
					fail(src, "%v", err)
					continue
				}
				f.mode, f.modeSource = &m, src
			case "defaults":
				switch v {
				case "on":
					f.defaultsOff = false
				case "off":
					f.defaultsOff, f.defaultsSource = true, src
				default:
					fail(src, "defaults takes on or off, not %q", v)
				}
			case "protect", "sensitive":
				if _, err := newPathPattern(v); err != nil {
					fail(src, "%s pattern %q: %v", kw, v, err)
					continue
				}
				if kw == "protect" {
					f.protect = append(f.protect, v)
				} else {
					f.sensitive = append(f.sensitive, v)
				}
			}
		case "model", "ollama-host", "engine", "engine-url", "engine-api-key-env", "context-length", "think",
			"review-timeout", "keep-alive", "command-memory", "command-pids", "completion-model":
			if !config {
				fail(src, "%s is a config setting, not a rule", kw)
				continue
			}
			if rest == "" {
				fail(src, "%s needs a value", kw)
				continue
			}
			if f.settings == nil {
				f.settings = map[string]string{}
			}
			f.settings[kw] = rest
			f.settingSources = append(f.settingSources, fmt.Sprintf("%s: %s", src, kw))
		default:
			want := "allow, ask, forbid, example, not, reason"
			if config {
				want += ", mode, defaults, protect, sensitive, " + strings.Join(SettingKeys, ", ")
			}
			fail(src, "unknown keyword %q (want one of: %s)", kw, want)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	rs, err := NewRules(rules...)
	if err != nil {
		return nil, err
	}
	f.rules = rs
	return f, nil
}

// parseWords parses one line of shell words (a rule prefix or a value): a single simple command
// of static words, without operators, redirections, assignments or expansions. Quotes work as in
// the shell; a trailing # comment is ignored.
func parseWords(src string) ([]string, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("no words given")
	}
	if err := checkSource(src); err != nil {
		return nil, err
	}
	file, err := parse(src)
	if err != nil {
		return nil, err
	}
	if len(file.Stmts) != 1 {
		return nil, errors.New("expected one command's words, without ; or newlines")
	}
	st := file.Stmts[0]
	ce, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(st.Redirs) > 0 || len(ce.Assigns) > 0 || st.Negated || st.Background {
		return nil, errors.New("expected plain words (no operators, redirections or assignments)")
	}
	scratch := classifier{out: &Classification{}}
	var words []string
	for _, w := range ce.Args {
		wi := scratch.word(w)
		if !wi.static {
			return nil, fmt.Errorf("word %s is not literal: %s", wi.value, wi.reason)
		}
		words = append(words, wi.value)
	}
	if len(words) == 0 {
		return nil, errors.New("no words given")
	}
	return words, nil
}

// TrustStore is the list of trusted workspaces, kept in the user's state directory (never in a
// workspace). Entries are canonical absolute paths, one per line; trust is exact (a trusted
// workspace's subdirectories are not trusted workspaces themselves). Safe for concurrent use.
type TrustStore struct {
	path string

	mu   sync.Mutex
	dirs []string
}

// OpenTrust reads the trust file; a missing file is an empty list.
func OpenTrust(file string) (*TrustStore, error) {
	t := &TrustStore{path: file}
	data, err := readConfigFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || !filepath.IsAbs(line) {
			continue
		}
		if line = filepath.Clean(line); !slices.Contains(t.dirs, line) {
			t.dirs = append(t.dirs, line)
		}
	}
	return t, nil
}

// Trusted reports whether the workspace (made canonical) is trusted.
func (t *TrustStore) Trusted(workspace string) bool {
	ws := canonicalPath(workspace)
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Contains(t.dirs, ws)
}

// List returns the trusted workspaces.
func (t *TrustStore) List() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.dirs)
}

// Trust adds a workspace (made canonical) and saves the file.
func (t *TrustStore) Trust(workspace string) error {
	ws := canonicalPath(workspace)
	t.mu.Lock()
	defer t.mu.Unlock()
	if slices.Contains(t.dirs, ws) {
		return nil
	}
	dirs := append(slices.Clone(t.dirs), ws)
	if err := t.save(dirs); err != nil {
		return err
	}
	t.dirs = dirs
	return nil
}

// Untrust removes a workspace and saves the file.
func (t *TrustStore) Untrust(workspace string) error {
	ws := canonicalPath(workspace)
	t.mu.Lock()
	defer t.mu.Unlock()
	i := slices.Index(t.dirs, ws)
	if i < 0 {
		return nil
	}
	dirs := slices.Delete(slices.Clone(t.dirs), i, i+1)
	if err := t.save(dirs); err != nil {
		return err
	}
	t.dirs = dirs
	return nil
}

// save writes the list atomically (atomicfile: a temp file in the same directory, fsync, rename).
func (t *TrustStore) save(dirs []string) error {
	dir := filepath.Dir(t.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Workspaces trusted by agentd: their .agentd/config is read (it can only tighten).\n")
	for _, d := range dirs {
		b.WriteString(d)
		b.WriteByte('\n')
	}
	return atomicfile.Write(t.path, []byte(b.String()))
}
