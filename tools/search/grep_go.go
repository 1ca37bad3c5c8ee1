package search

import (
	"bytes"
	"context"
	"sync"
)

// runGo is the pure-Go engine: a parallel walk with the shared filter, each file read into a
// pooled buffer and scanned with the matcher's literal prefilter.
func (g *grepRun) runGo(ctx context.Context) error {
	scanners := make([]scanner, defaultWorkers())
	return g.walkFiles(ctx, func(id int, abs, rel string) {
		sc := &scanners[id]
		if fm := sc.searchFile(g, abs, rel); fm != nil {
			g.col.add(fm)
		}
	})
}

// walkFiles calls visit for every file the search covers (concurrently, worker in
// [0, defaultWorkers())), except open documents (searched from their buffers) and the files
// Withhold names or WithholdLinked keeps out, which are counted instead.
func (g *grepRun) walkFiles(ctx context.Context, visit func(worker int, abs, rel string)) error {
	var files, dirs []target
	for _, t := range g.s.targets {
		if t.isDir {
			dirs = append(dirs, t)
		} else if _, isDoc := g.overlay[t.rel]; !isDoc {
			files = append(files, t) // an open document is searched from its buffer
		}
	}
	w := &walker{root: g.s.root, filter: &g.s.filter, skip: g.skipSet()}
	w.workers = defaultWorkers()
	w.visit = func(id int, abs, rel string) {
		if !g.withholds(rel) {
			visit(id, abs, rel)
		}
	}
	if g.opts.WithholdLinked {
		w.linked = func(rel string) { g.withheld.add(rel, true) }
	}
	for _, t := range files {
		// A file target was already checked against the filter by pathAccepted.
		if g.s.pathAccepted(&g.s.filter, t.comps, false) && !g.withholdsLinked(t.abs, t.rel) {
			w.visit(0, t.abs, t.rel)
		}
	}
	if len(dirs) == 0 {
		return ctx.Err()
	}
	return w.run(ctx, g.s, dirs)
}

// scanner is per-worker search state.
type scanner struct {
	buf  []byte
	fold foldScan
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

const maxPooledBuf = 4 << 20

// searchFile reads and searches one file; nil means no (reportable) match.
func (sc *scanner) searchFile(g *grepRun, abs, rel string) *FileMatches {
	if sc.buf == nil {
		sc.buf = *(bufPool.Get().(*[]byte))
	}
	buf, ok := readFileInto(abs, sc.buf, g.opts.MaxFileSize)
	if cap(buf) <= maxPooledBuf {
		sc.buf = buf[:0]
	} else {
		sc.buf = nil // do not keep huge buffers
	}
	if !ok {
		return nil
	}
	return sc.search(g, rel, buf)
}

// search scans buf (the whole content of file rel). A file containing a NUL byte anywhere is
// binary and yields nil, like a file without matches.
func (sc *scanner) search(g *grepRun, rel string, buf []byte) *FileMatches {
	m := g.m
	mode := g.opts.Mode
	useFold := m.fold != nil && m.fold.exactFor(buf)
	if useFold {
		sc.fold.reset(m.fold)
	}
	var fm *FileMatches
	checkedBinary := false
	// content-mode state
	keep := g.keepLines()
	before, after := g.opts.Before, g.opts.After
	maxCols := g.opts.MaxColumns
	storing := true
	stored := 0
	lastLine, lastEnd := 0, 0 // number and end offset (after '\n') of the last emitted line
	pendingAfter := 0
	curPos, curLine := 0, 1 // line-number cursor: byte offset of a line start and its number

	emitRange := func(from, toLine int) {
		// emit context lines starting at byte offset from (line number lastLine+1) up to toLine
		for lastLine < toLine && from < len(buf) {
			end := bytes.IndexByte(buf[from:], '\n')
			var next int
			if end < 0 {
				end = len(buf)
				next = len(buf)
			} else {
				end += from
				next = end + 1
			}
			if storing {
				fm.Lines = append(fm.Lines, makeLine(lastLine+1, buf[from:end], false, 0, maxCols))
			}
			lastLine++
			lastEnd = next
			from = next
		}
	}

	pos := 0
	for pos < len(buf) {
		// Find the next matching line at or after pos (a line start).
		var ls, le, col int
		found := false
		switch {
		case m.lit != nil || useFold:
			var cand int
			if m.lit != nil {
				i := bytes.Index(buf[pos:], m.lit)
				if i < 0 {
					pos = len(buf)
					continue
				}
				cand = pos + i
			} else {
				cand = sc.fold.index(buf, pos)
				if cand < 0 {
					pos = len(buf)
					continue
				}
			}
			ls, le = lineAround(buf, pos, cand)
			if m.exact {
				col, found = cand-ls, true
			} else if loc := m.re.FindIndex(buf[ls:le]); loc != nil {
				col, found = loc[0], true
			}
		default:
			loc := m.re.FindIndex(buf[pos:])
			if loc == nil {
				pos = len(buf)
				continue
			}
			cand := pos + loc[0]
			ls, le = lineAround(buf, pos, cand)
			col, found = cand-ls, true
		}
		next := le + 1
		if !found {
			pos = next
			continue
		}
		if !checkedBinary {
			checkedBinary = true
			if bytes.IndexByte(buf, 0) >= 0 {
				return nil
			}
			fm = &FileMatches{Path: rel}
			if mode == ModeFiles {
				return fm
			}
		}
		fm.Count++
		pos = next
		if mode != ModeContent {
			continue
		}
		// Line number of ls.
		curLine += bytes.Count(buf[curPos:ls], []byte{'\n'})
		curPos = ls
		num := curLine
		if storing && keep >= 0 && stored >= keep {
			// Stop storing at the first match beyond the cap, after the previous match's
			// after-context (the rg engine stores the same lines).
			if pendingAfter > 0 {
				emitRange(lastEnd, min(lastLine+pendingAfter, num-1))
				pendingAfter = 0
			}
			storing = false
		}
		if !storing {
			continue
		}
		// After-context of the previous match.
		if pendingAfter > 0 {
			emitRange(lastEnd, min(lastLine+pendingAfter, num-1))
			pendingAfter = 0
		}
		// Before-context of this match.
		if before > 0 {
			first := max(num-before, lastLine+1)
			if first < num {
				// find the offset of line `first` by scanning back from ls
				off := ls
				for l := num; l > first; l-- {
					off = bytes.LastIndexByte(buf[:off-1], '\n') + 1
				}
				lastLine = first - 1
				emitRange(off, num-1)
			}
		}
		fm.Lines = append(fm.Lines, makeLine(num, buf[ls:le], true, col, maxCols))
		stored++
		lastLine, lastEnd = num, next
		pendingAfter = after
	}
	if fm == nil {
		return nil
	}
	if storing && pendingAfter > 0 && mode == ModeContent {
		emitRange(lastEnd, lastLine+pendingAfter)
	}
	return fm
}

// lineAround returns the bounds of the line holding buf[at], searching for its start no further
// back than from: start is that line's first byte, end the index of its newline (or len(buf)).
func lineAround(buf []byte, from, at int) (start, end int) {
	start = bytes.LastIndexByte(buf[from:at], '\n') + 1 + from
	end = bytes.IndexByte(buf[at:], '\n')
	if end < 0 {
		return start, len(buf)
	}
	return start, end + at
}
