package search

import (
	"cmp"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// OutputMode selects what Grep reports.
type OutputMode string

const (
	// ModeContent reports matching lines (and context lines): "path:line:text".
	ModeContent OutputMode = "content"
	// ModeFiles reports the paths of files with at least one match.
	ModeFiles OutputMode = "files"
	// ModeCount reports the number of matching lines per file: "path:count".
	ModeCount OutputMode = "count"
)

// Engine selects the grep implementation.
type Engine string

const (
	// EngineAuto uses ripgrep when it is on PATH and falls back to the Go engine when it is
	// missing or fails to run.
	EngineAuto Engine = ""
	// EngineRipgrep requires ripgrep.
	EngineRipgrep Engine = "rg"
	// EngineGo uses the pure-Go engine.
	EngineGo Engine = "go"
)

// Defaults for the caps.
const (
	DefaultMaxResults = 100
	DefaultMaxColumns = 300
)

// Overlay gives access to unsaved editor buffers. Grep searches an open document's content
// instead of the file on disk (in both engines).
type Overlay interface {
	// Open returns the absolute paths of the open documents.
	Open() []string
	// Content returns the current content of an open document.
	Content(abs string) ([]byte, bool)
}

// GrepOptions describes one search. Zero values are the defaults.
type GrepOptions struct {
	// Root is the absolute workspace root. Ignore files are read from Root downwards (never
	// above it), globs are matched against Root-relative paths, and result paths are
	// Root-relative.
	Root string
	// Paths restricts the search to these files or directories (relative to Root, or absolute
	// inside it). Empty means Root. A path that is itself hidden or ignored is searched anyway
	// (Hidden / NoIgnore are switched on, and the result carries a note).
	Paths []string
	// Pattern is a regular expression (Go RE2 syntax; see doc.go), or a fixed string when
	// Literal is set.
	Pattern string
	Literal bool
	// IgnoreCase matches case-insensitively. SmartCase does so only when the pattern has no
	// uppercase letter.
	IgnoreCase bool
	SmartCase  bool
	// Include and Exclude are ripgrep -g globs matched against Root-relative paths: Include
	// entries are passed in order (an entry starting with "!" excludes), then every Exclude
	// entry as "!glob". The last matching glob wins; once there is an including glob, files
	// must match one. A matching glob overrides ignore files and the hidden rule (ripgrep's
	// semantics).
	Include []string
	Exclude []string
	// Before and After are context lines (content mode).
	Before, After int
	Mode          OutputMode
	// MaxResults caps matching lines (content mode) or files (files and count modes).
	// 0 means DefaultMaxResults; negative means no cap.
	MaxResults int
	// MaxColumns caps the bytes shown per line (longer lines show a window around the first
	// match). 0 means DefaultMaxColumns; negative means no cap.
	MaxColumns int
	// Hidden includes hidden files and directories (names starting with ".").
	Hidden bool
	// NoIgnore disregards .gitignore, .ignore, .rgignore and .git/info/exclude.
	NoIgnore bool
	// MaxFileSize skips files larger than this many bytes (0: no limit).
	MaxFileSize int64
	Engine      Engine
	// RgPath is the ripgrep binary (default: "rg" looked up on PATH).
	RgPath  string
	Overlay Overlay
	// Withhold, when set, names files that must not be searched because they may hold secrets
	// (the caller's rule, e.g. fsafe.Classify): it gets a Root-relative slash-separated path
	// of a file the search would visit. Such files are never read by the Go engine; ripgrep
	// reads them but their lines are dropped before they reach the result. Every withheld
	// file the search would have visited is counted, whatever it holds, so the count says
	// nothing about the content (no match oracle), and it is the same in both engines.
	Withhold func(rel string) bool
	// WithholdLinked withholds, the same way, every regular file that has other hard links: its
	// content is also another file's, which may be a secret (a link to .env) or lie outside Root,
	// where no name tells. Both engines look at every file the search would visit (a link count
	// per file, nothing read), so the count does not depend on the pattern either.
	WithholdLinked bool
}

// Line is one line of output in content mode.
type Line struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
	// Match is false for a context line.
	Match bool `json:"match"`
	// Truncated is the number of bytes of the line not shown (MaxColumns).
	Truncated int `json:"truncated,omitzero"`
}

// FileMatches is the result for one file.
type FileMatches struct {
	// Path is slash-separated and relative to Root.
	Path string `json:"path"`
	// Count is the number of matching lines in the file (content and count modes; 0 in files
	// mode).
	Count int `json:"count,omitzero"`
	// Lines holds the shown lines (content mode), sorted by number.
	Lines []Line `json:"lines,omitzero"`
	// Omitted is the number of matching lines of this file not shown because of MaxResults.
	Omitted int `json:"omitted,omitzero"`
	// Unsaved is set when the content came from an unsaved editor buffer.
	Unsaved bool `json:"unsaved,omitzero"`
}

// GrepResult is the outcome of Grep.
type GrepResult struct {
	Mode OutputMode `json:"mode"`
	// Files are the shown files, sorted by path.
	Files []FileMatches `json:"files"`
	// TotalFiles is the number of files with a match; TotalMatches the number of matching
	// lines (not computed in files mode).
	TotalFiles   int `json:"totalFiles"`
	TotalMatches int `json:"totalMatches"`
	// OmittedFiles and OmittedMatches count what MaxResults cut.
	OmittedFiles   int `json:"omittedFiles,omitzero"`
	OmittedMatches int `json:"omittedMatches,omitzero"`
	// Context is true when context lines were requested (Render separates groups with "--").
	Context bool `json:"context,omitzero"`
	// Engine is "rg" or "go".
	Engine string `json:"engine"`
	// Notes are remarks for the model (a hidden path was searched, ripgrep failed, …).
	Notes []string `json:"notes,omitzero"`
	// Withheld is the number of files not searched because Withhold named them (whether or
	// not they match); WithheldSample lists the first few of them by path.
	Withheld       int      `json:"withheld,omitzero"`
	WithheldSample []string `json:"withheldSample,omitzero"`
	// WithheldLinks is how many of the withheld files were withheld for their hard links.
	WithheldLinks int `json:"withheldLinks,omitzero"`
}

// withheldSample is how many withheld paths a result names.
const withheldSample = 5

// Grep searches files under opts.Root. See doc.go for the exact semantics.
func Grep(ctx context.Context, opts GrepOptions) (*GrepResult, error) {
	root, err := resolveRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	switch opts.Mode {
	case "":
		opts.Mode = ModeContent
	case ModeContent, ModeFiles, ModeCount:
	default:
		return nil, invalidArgs("unknown output mode %q (want content, files or count)", opts.Mode)
	}
	switch opts.Engine {
	case EngineAuto, EngineRipgrep, EngineGo:
	default:
		return nil, invalidArgs("unknown engine %q (want rg or go)", opts.Engine)
	}
	if opts.Before < 0 || opts.After < 0 {
		return nil, invalidArgs("context lines must not be negative")
	}
	if opts.Mode != ModeContent {
		opts.Before, opts.After = 0, 0
	}
	if opts.MaxResults == 0 {
		opts.MaxResults = DefaultMaxResults
	}
	if opts.MaxColumns == 0 {
		opts.MaxColumns = DefaultMaxColumns
	}
	m, err := compileMatcher(opts.Pattern, opts.Literal, opts.IgnoreCase, opts.SmartCase)
	if err != nil {
		return nil, err
	}
	globs := append([]string(nil), opts.Include...)
	for _, g := range opts.Exclude {
		if g == "" {
			return nil, invalidArgs("empty exclude glob")
		}
		globs = append(globs, "!"+g)
	}
	ov, err := compileOverrides(globs)
	if err != nil {
		return nil, err
	}
	var virtual func(string) bool
	if opts.Overlay != nil {
		virtual = func(abs string) bool {
			for _, d := range opts.Overlay.Open() {
				if filepath.Clean(d) == abs {
					return true
				}
			}
			return false
		}
	}
	targets, err := resolveTargets(root, opts.Paths, false, virtual)
	if err != nil {
		return nil, err
	}
	s := &scope{root: root, targets: targets, filter: filter{overrides: ov, noIgnore: opts.NoIgnore, hidden: opts.Hidden}}
	s.adjustForTargets()
	g := &grepRun{opts: opts, m: m, s: s, globs: globs, withheld: &withheldSet{}}
	g.col = newCollector(opts.Mode, opts.MaxResults)
	g.loadOverlay()

	engine := opts.Engine
	rgPath := ""
	if engine == EngineAuto || engine == EngineRipgrep {
		rgPath, err = findRg(opts.RgPath)
		if err != nil && engine == EngineRipgrep {
			return nil, err
		}
		if err != nil {
			engine = EngineGo
		} else {
			engine = EngineRipgrep
		}
	}
	res := &GrepResult{Mode: opts.Mode, Context: opts.Before > 0 || opts.After > 0}
	if engine == EngineRipgrep {
		res.Engine = "rg"
		if opts.Engine == EngineAuto {
			g.rgBudget = autoRgBudget
		}
		err = g.runRg(ctx, rgPath)
		if errors.Is(err, errRgBudget) && ctx.Err() == nil {
			// A very broad pattern: the Go engine is faster than JSON for this much output.
			g.col = newCollector(opts.Mode, opts.MaxResults)
			g.withheld.reset()
			engine = EngineGo
		} else if err != nil && ctx.Err() == nil && opts.Engine == EngineAuto {
			// ripgrep failed: start over with the Go engine.
			s.notes = append(s.notes, "ripgrep failed ("+err.Error()+"); used the built-in engine")
			g.col = newCollector(opts.Mode, opts.MaxResults)
			g.withheld.reset()
			engine = EngineGo
		} else if err != nil {
			return nil, err
		} else if opts.Withhold != nil || opts.WithholdLinked {
			// ripgrep's output names only files with matches: count the withheld files the
			// walk visits (names only, nothing is read), as the Go engine does.
			if err := g.walkFiles(ctx, func(int, string, string) {}); err != nil {
				return nil, err
			}
		}
	}
	if engine == EngineGo {
		res.Engine = "go"
		if err := g.runGo(ctx); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := g.searchOverlay(ctx); err != nil {
		return nil, err
	}
	g.col.finish(res, opts.After)
	res.Notes = s.notes
	res.Withheld, res.WithheldSample, res.WithheldLinks = g.withheld.result()
	return res, nil
}

var rgLookup struct {
	sync.Mutex
	paths map[string]string
}

// findRg resolves the ripgrep binary (cached per name).
func findRg(name string) (string, error) {
	if name == "" {
		name = "rg"
	}
	rgLookup.Lock()
	defer rgLookup.Unlock()
	if p, ok := rgLookup.paths[name]; ok {
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", errors.New("ripgrep (" + name + ") is not installed")
	}
	if rgLookup.paths == nil {
		rgLookup.paths = map[string]string{}
	}
	rgLookup.paths[name] = p
	return p, nil
}

// grepRun is the state of one Grep call shared by the engines.
type grepRun struct {
	opts  GrepOptions
	m     *matcher
	s     *scope
	globs []string
	col   *collector

	// overlay documents in scope: Root-relative path -> content (nil when not searchable)
	overlay     map[string][]byte
	overlayKeys []string
	// rgBudget > 0 limits ripgrep's output lines (EngineAuto); see errRgBudget.
	rgBudget int
	// withheld collects the files Withhold named.
	withheld *withheldSet
}

// withholds reports whether the file rel must not be searched by its name, and counts it if so.
func (g *grepRun) withholds(rel string) bool {
	if g.opts.Withhold == nil || !g.opts.Withhold(rel) {
		return false
	}
	g.withheld.add(rel, false)
	return true
}

// withholdsLinked reports whether the file at abs (rel) must not be searched for its hard links,
// and counts it if so.
func (g *grepRun) withholdsLinked(abs, rel string) bool {
	if !g.opts.WithholdLinked || !hardLinkedPath(abs) {
		return false
	}
	g.withheld.add(rel, true)
	return true
}

// withheldSet gathers withheld paths from any number of goroutines.
type withheldSet struct {
	mu     sync.Mutex
	paths  []string
	linked map[string]bool
}

func (w *withheldSet) add(rel string, linked bool) {
	w.mu.Lock()
	w.paths = append(w.paths, rel)
	if linked {
		if w.linked == nil {
			w.linked = map[string]bool{}
		}
		w.linked[rel] = true
	}
	w.mu.Unlock()
}

func (w *withheldSet) reset() {
	w.mu.Lock()
	w.paths, w.linked = nil, nil
	w.mu.Unlock()
}

// result returns the count, the first paths in byte order (a path counts once) and how many were
// withheld for their hard links.
func (w *withheldSet) result() (int, []string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	slices.Sort(w.paths)
	w.paths = slices.Compact(w.paths)
	return len(w.paths), slices.Clone(w.paths[:min(len(w.paths), withheldSample)]), len(w.linked)
}

// autoRgBudget is the ripgrep output budget of EngineAuto (about 0.1 s of JSON).
const autoRgBudget = 25000

// loadOverlay collects the open documents that lie in the search scope. Their disk versions
// are skipped by both engines; the accepted ones are searched from the buffer.
func (g *grepRun) loadOverlay() {
	if g.opts.Overlay == nil {
		return
	}
	for _, abs := range g.opts.Overlay.Open() {
		if !filepath.IsAbs(abs) {
			continue
		}
		abs = filepath.Clean(abs)
		rel, err := filepath.Rel(g.s.root, abs)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		rel = filepath.ToSlash(rel)
		if !g.s.inScope(rel) {
			continue
		}
		if g.overlay == nil {
			g.overlay = map[string][]byte{}
		}
		if _, dup := g.overlay[rel]; dup {
			continue
		}
		g.overlay[rel] = nil
		g.overlayKeys = append(g.overlayKeys, rel)
		// A path that exists on disk as something else than a regular file is not searched.
		if fi, err := os.Lstat(abs); err == nil && !fi.Mode().IsRegular() {
			continue
		}
		comps := strings.Split(rel, "/")
		if !g.s.pathAccepted(&g.s.filter, comps, false) {
			continue
		}
		if g.withholds(rel) || g.withholdsLinked(abs, rel) {
			continue
		}
		if content, ok := g.opts.Overlay.Content(abs); ok {
			if content == nil {
				content = []byte{}
			}
			if g.opts.MaxFileSize > 0 && int64(len(content)) > g.opts.MaxFileSize {
				continue
			}
			g.overlay[rel] = content
		}
	}
	slices.Sort(g.overlayKeys)
}

func (g *grepRun) skipSet() map[string]bool {
	if len(g.overlayKeys) == 0 {
		return nil
	}
	m := make(map[string]bool, len(g.overlayKeys))
	for _, k := range g.overlayKeys {
		m[k] = true
	}
	return m
}

func (g *grepRun) searchOverlay(ctx context.Context) error {
	if len(g.overlayKeys) == 0 {
		return nil
	}
	var sc scanner
	for _, rel := range g.overlayKeys {
		if err := ctx.Err(); err != nil {
			return err
		}
		content := g.overlay[rel]
		if content == nil {
			continue
		}
		if fm := sc.search(g, rel, content); fm != nil {
			fm.Unsaved = true
			g.col.add(fm)
		}
	}
	return nil
}

// keepLines is how many matching lines one file may store (the rest is only counted).
func (g *grepRun) keepLines() int {
	if g.opts.MaxResults < 0 {
		return -1
	}
	return g.opts.MaxResults
}

// makeLine builds a shown line from raw line bytes (without '\n'): one trailing '\r' is
// dropped, invalid UTF-8 becomes U+FFFD, and long lines are cut around col (the first match).
func makeLine(num int, raw []byte, match bool, col, maxCols int) Line {
	raw = trimCR(raw)
	l := Line{Number: num, Match: match}
	if maxCols < 0 || len(raw) <= maxCols {
		l.Text = strings.ToValidUTF8(string(raw), "\uFFFD")
		return l
	}
	start := 0
	if col > maxCols/4 {
		start = col - maxCols/4
	}
	if start > len(raw)-maxCols {
		start = len(raw) - maxCols
	}
	end := start + maxCols
	for start > 0 && !utf8.RuneStart(raw[start]) {
		start--
	}
	for end < len(raw) && !utf8.RuneStart(raw[end]) {
		end--
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	b.WriteString(strings.ToValidUTF8(string(raw[start:end]), "\uFFFD"))
	if end < len(raw) {
		b.WriteString("…")
	}
	l.Text = b.String()
	l.Truncated = len(raw) - (end - start)
	return l
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// collector gathers per-file results from any number of goroutines and keeps only what can
// be shown: the files with the smallest paths that hold MaxResults units (matching lines in
// content mode, files otherwise), plus totals.
type collector struct {
	mu     sync.Mutex
	mode   OutputMode
	limit  int // < 0: no limit
	kept   []*FileMatches
	units  int
	total  int
	files  int
	maxIdx int // index of the kept file with the largest path, or -1
}

func newCollector(mode OutputMode, limit int) *collector {
	return &collector{mode: mode, limit: limit, maxIdx: -1}
}

func (c *collector) unitsOf(fm *FileMatches) int {
	if c.mode == ModeContent {
		return fm.Count
	}
	return 1
}

func (c *collector) add(fm *FileMatches) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files++
	c.total += fm.Count
	if c.limit < 0 {
		c.kept = append(c.kept, fm)
		return
	}
	if c.units >= c.limit && c.maxIdx >= 0 && fm.Path > c.kept[c.maxIdx].Path {
		return // would never be shown
	}
	c.kept = append(c.kept, fm)
	c.units += c.unitsOf(fm)
	if c.maxIdx < 0 || fm.Path > c.kept[c.maxIdx].Path {
		c.maxIdx = len(c.kept) - 1
	}
	// Evict the largest path while the others still hold enough units.
	for c.maxIdx >= 0 && c.units-c.unitsOf(c.kept[c.maxIdx]) >= c.limit {
		c.units -= c.unitsOf(c.kept[c.maxIdx])
		last := len(c.kept) - 1
		c.kept[c.maxIdx] = c.kept[last]
		c.kept = c.kept[:last]
		c.maxIdx = -1
		for i, k := range c.kept {
			if c.maxIdx < 0 || k.Path > c.kept[c.maxIdx].Path {
				c.maxIdx = i
			}
		}
	}
}

// finish sorts, applies the cap and fills res.
func (c *collector) finish(res *GrepResult, after int) {
	slices.SortFunc(c.kept, func(a, b *FileMatches) int { return cmp.Compare(a.Path, b.Path) })
	res.TotalFiles = c.files
	if c.mode != ModeFiles {
		res.TotalMatches = c.total
	}
	shownUnits := 0
	shownMatches := 0
	for _, fm := range c.kept {
		if c.limit >= 0 && shownUnits >= c.limit {
			break
		}
		if c.mode == ModeContent && c.limit >= 0 && shownUnits+fm.Count > c.limit {
			cutLines(fm, c.limit-shownUnits, after)
		}
		if c.mode == ModeContent {
			shown := fm.Count - fm.Omitted
			shownUnits += shown
			shownMatches += shown
		} else {
			shownUnits++
			shownMatches += fm.Count
		}
		res.Files = append(res.Files, *fm)
	}
	if res.Files == nil {
		res.Files = []FileMatches{}
	}
	res.OmittedFiles = c.files - len(res.Files)
	if c.mode != ModeFiles {
		res.OmittedMatches = c.total - shownMatches
	}
}

// cutLines keeps the first n matching lines of fm (n >= 1), their context, and the
// after-context of the last one up to the next matching line.
func cutLines(fm *FileMatches, n, after int) {
	seen := 0
	end := len(fm.Lines)
	for i, l := range fm.Lines {
		if !l.Match {
			continue
		}
		if seen == n {
			end = i
			break
		}
		seen++
	}
	// Drop trailing context that belongs to the next (not shown) match's before-context,
	// keeping at most `after` lines after the last shown match.
	lastMatch := -1
	for i := 0; i < end; i++ {
		if fm.Lines[i].Match {
			lastMatch = i
		}
	}
	if lastMatch >= 0 && end-lastMatch-1 > after {
		end = lastMatch + 1 + after
	}
	fm.Lines = fm.Lines[:end]
	fm.Omitted = fm.Count - n
}
