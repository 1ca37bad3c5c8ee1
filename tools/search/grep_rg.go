package search

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// rgBaseArgs are the flags that make ripgrep apply exactly the Go engine's rules (doc.go):
// no config file; .gitignore honoured even outside a git repository; no ignore files above
// the working directory (Root) and no global excludes; no transcoding (UTF-16 files are
// binary, as in the Go engine); case handled inside the pattern.
var rgBaseArgs = []string{
	"--no-config", "--no-require-git", "--no-ignore-parent", "--no-ignore-global",
	"--no-mmap", "--encoding", "none", "--case-sensitive",
}

// rgArgs builds ripgrep's arguments for this run (without --json and the pattern).
func (g *grepRun) rgArgs() []string {
	args := append([]string(nil), rgBaseArgs...)
	if g.s.filter.hidden {
		args = append(args, "--hidden")
	}
	if g.s.filter.noIgnore {
		args = append(args, "--no-ignore")
	}
	if g.opts.MaxFileSize > 0 {
		args = append(args, "--max-filesize", strconv.FormatInt(g.opts.MaxFileSize, 10))
	}
	if g.opts.After > 0 {
		args = append(args, "--after-context", strconv.Itoa(g.opts.After))
	}
	if g.opts.Before > 0 {
		args = append(args, "--before-context", strconv.Itoa(g.opts.Before))
	}
	for _, gl := range g.globs {
		args = append(args, "--glob", gl)
	}
	// Forced exclusions come last so that they win over the user's globs: entries outside the
	// requested paths, open documents (searched from their buffers), and .git.
	for _, gl := range g.s.siblingExcludes() {
		args = append(args, "--glob", gl)
	}
	for _, rel := range g.overlayKeys {
		args = append(args, "--glob", "!"+escapeGlobLiteral(rel))
	}
	args = append(args, "--glob", "!.git")
	return args
}

// runRg runs `rg --json` in Root and feeds its results to the collector.
func (g *grepRun) runRg(ctx context.Context, rgPath string) error {
	args := append(g.rgArgs(), "--json", "--regexp", g.m.rust, ".")
	cmd := exec.CommandContext(ctx, rgPath, args...)
	cmd.Dir = g.s.root
	cmd.WaitDelay = time.Second
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	// Cancellation kills ripgrep (CommandContext); closing our end of the pipe also unblocks
	// the reader should anything else hold the write end open.
	stopClose := context.AfterFunc(ctx, func() { out.Close() })
	defer stopClose()
	sawSummary, perr := g.parseRg(out)
	if errors.Is(perr, errRgBudget) {
		cmd.Process.Kill()
		cmd.Wait()
		return perr
	}
	if perr != nil {
		io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if perr != nil {
		return perr
	}
	if werr != nil {
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			switch ee.ExitCode() {
			case 1:
				return nil // no match
			case 2:
				if sawSummary {
					return nil // some files could not be read; the Go engine skips them too
				}
			}
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = werr.Error()
			}
			return fmt.Errorf("rg: %s", msg)
		}
		return werr
	}
	return nil
}

// errRgBudget stops the ripgrep engine when its JSON output grows past rgBudget lines: for
// very broad patterns, encoding and decoding every matching line as JSON costs ~5 µs per line,
// several times what the Go engine needs, so EngineAuto hands such searches to the Go engine.
var errRgBudget = errors.New("rg: too many matching lines for JSON output")

var (
	matchPrefix   = []byte(`{"type":"match",`)
	contextPrefix = []byte(`{"type":"context",`)
)

type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// rgData is the part of a ripgrep JSON message the engine reads.
type rgData struct {
	Path         rgText `json:"path"`
	Lines        rgText `json:"lines"`
	LineNumber   int    `json:"line_number"`
	BinaryOffset *int64 `json:"binary_offset"`
	Submatches   []struct {
		Start int `json:"start"`
	} `json:"submatches"`
}

type rgText struct {
	Text  *string `json:"text"`
	Bytes *string `json:"bytes"`
}

func (t rgText) raw() ([]byte, error) {
	if t.Text != nil {
		return []byte(*t.Text), nil
	}
	if t.Bytes != nil {
		return base64.StdEncoding.DecodeString(*t.Bytes)
	}
	return nil, nil
}

type rgMessage struct {
	Type string `json:"type"`
	Data rgData `json:"data"`
}

// parseRg reads ripgrep's JSON Lines. Messages of one file are contiguous: begin, match and
// context lines, end. A file whose end message carries a binary offset (it contains a NUL
// byte) is dropped entirely, which is the Go engine's binary rule.
func (g *grepRun) parseRg(r io.Reader) (sawSummary bool, err error) {
	br := bufio.NewReaderSize(r, 256<<10)
	mode := g.opts.Mode
	keep := g.keepLines()
	maxCols := g.opts.MaxColumns
	var cur *FileMatches
	withheld := false // cur is a file Withhold names: its lines are dropped unread
	storing, stored := true, 0
	var long []byte
	lines := 0
	for {
		lines++
		if g.rgBudget > 0 && lines > g.rgBudget {
			return sawSummary, errRgBudget
		}
		line, rerr := br.ReadSlice('\n')
		if rerr == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for rerr == bufio.ErrBufferFull {
				line, rerr = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		// Fast path: a match or context line that will not be stored is only counted.
		if cur != nil && (mode != ModeContent || !storing) && bytes.HasPrefix(line, matchPrefix) {
			cur.Count++
		} else if cur != nil && (mode != ModeContent || !storing) && bytes.HasPrefix(line, contextPrefix) {
			// not stored
		} else if len(bytes.TrimSpace(line)) > 0 {
			var msg rgMessage
			if err := json.Unmarshal(line, &msg); err != nil {
				return sawSummary, fmt.Errorf("rg: bad JSON output: %v", err)
			}
			switch msg.Type {
			case "begin":
				p, err := msg.Data.Path.raw()
				if err != nil {
					return sawSummary, err
				}
				cur = &FileMatches{Path: strings.TrimPrefix(string(p), "./")}
				storing, stored = true, 0
				// Counted by the walk that follows a successful run, not here: ripgrep names
				// only files with matches, and the count must not depend on them.
				withheld = g.opts.Withhold != nil && g.opts.Withhold(cur.Path) ||
					g.opts.WithholdLinked && hardLinkedPath(filepath.Join(g.s.root, filepath.FromSlash(cur.Path)))
				if withheld {
					storing = false
				}
			case "match", "context":
				if cur == nil {
					return sawSummary, errors.New("rg: match outside a file")
				}
				isMatch := msg.Type == "match"
				if isMatch {
					cur.Count++
				}
				if mode != ModeContent || !storing {
					continue
				}
				if isMatch && keep >= 0 && stored >= keep {
					storing = false
					continue
				}
				text, err := msg.Data.Lines.raw()
				if err != nil {
					return sawSummary, err
				}
				text = bytes.TrimSuffix(text, []byte{'\n'})
				col := 0
				if isMatch && len(msg.Data.Submatches) > 0 {
					col = msg.Data.Submatches[0].Start
				}
				cur.Lines = append(cur.Lines, makeLine(msg.Data.LineNumber, text, isMatch, col, maxCols))
				if isMatch {
					stored++
				}
			case "end":
				if cur != nil && !withheld && msg.Data.BinaryOffset == nil && cur.Count > 0 {
					if mode == ModeFiles {
						cur.Count = 0
					}
					g.col.add(cur)
				}
				cur = nil
			case "summary":
				sawSummary = true
			}
		}
		if rerr == io.EOF {
			return sawSummary, nil
		}
		if rerr != nil {
			return sawSummary, rerr
		}
	}
}
