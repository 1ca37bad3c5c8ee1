package search

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
)

// walker is a parallel directory walk that applies the filter (ignore files, hidden, globs),
// never follows symbolic links and calls visit for every accepted regular file. Workers pull
// jobs (a directory to read, or a batch of files to visit) from a shared LIFO queue.
type walker struct {
	root     string
	filter   *filter
	skip     map[string]bool // Root-relative paths not to visit (overlay documents)
	maxDepth int             // > 0: do not descend below this many components
	workers  int
	// visit is called concurrently; worker is in [0, workers).
	visit func(worker int, abs, rel string)
	// linked, when set, gets the regular files that have other hard links instead of visit (their
	// content is also another file's, maybe a secret's or one outside Root); called concurrently.
	linked func(rel string)

	stopped atomic.Bool
	errs    atomic.Int64 // unreadable directories

	mu    sync.Mutex
	cond  sync.Cond
	jobs  []walkJob
	busy  int
	ended bool
}

type walkJob struct {
	abs   string
	rel   string
	comps []string
	lv    *level // ignore state of the parent directory (dir job) or of the directory (file batch)
	files []string
}

const fileBatch = 32

func defaultWorkers() int {
	n := runtime.GOMAXPROCS(0) + 2
	if n < 4 {
		n = 4
	}
	return n
}

// run walks the given directory targets (their ignore state is built from Root down) and
// returns when all work is done or ctx is cancelled.
func (w *walker) run(ctx context.Context, s *scope, dirs []target) error {
	if w.workers <= 0 {
		w.workers = defaultWorkers()
	}
	w.cond.L = &w.mu
	for _, t := range dirs {
		var lv *level
		if len(t.comps) > 0 {
			lv = s.dirLevel(t.comps[:len(t.comps)-1])
		}
		w.jobs = append(w.jobs, walkJob{abs: t.abs, rel: t.rel, comps: t.comps, lv: lv})
	}
	stop := context.AfterFunc(ctx, func() {
		w.stopped.Store(true)
		w.mu.Lock()
		w.ended = true
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer stop()
	var wg sync.WaitGroup
	for i := 0; i < w.workers; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			for {
				j, ok := w.pop()
				if !ok {
					return
				}
				w.process(id, j)
				w.done()
			}
		}(i)
	}
	wg.Wait()
	return ctx.Err()
}

func (w *walker) pop() (walkJob, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.jobs) == 0 && w.busy > 0 && !w.ended {
		w.cond.Wait()
	}
	if w.ended || len(w.jobs) == 0 {
		w.ended = true
		w.cond.Broadcast()
		return walkJob{}, false
	}
	j := w.jobs[len(w.jobs)-1]
	w.jobs = w.jobs[:len(w.jobs)-1]
	w.busy++
	return j, true
}

func (w *walker) done() {
	w.mu.Lock()
	w.busy--
	if w.busy == 0 && len(w.jobs) == 0 {
		w.cond.Broadcast()
	}
	w.mu.Unlock()
}

func (w *walker) push(js []walkJob) {
	if len(js) == 0 {
		return
	}
	w.mu.Lock()
	w.jobs = append(w.jobs, js...)
	if len(js) == 1 {
		w.cond.Signal()
	} else {
		w.cond.Broadcast()
	}
	w.mu.Unlock()
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func (w *walker) process(id int, j walkJob) {
	if w.stopped.Load() {
		return
	}
	if j.files != nil {
		for _, name := range j.files {
			if w.stopped.Load() {
				return
			}
			w.visit(id, filepath.Join(j.abs, name), joinRel(j.rel, name))
		}
		return
	}
	f, err := os.Open(j.abs)
	if err != nil {
		w.errs.Add(1)
		return
	}
	defer f.Close() // for the link counts, read through it
	ents, err := f.ReadDir(-1)
	if err != nil && len(ents) == 0 {
		w.errs.Add(1)
		return
	}
	lv := j.lv
	if !w.filter.noIgnore {
		lv = levelFor(j.lv, w.root, j.abs, len(j.comps), ents)
	}
	var dirs []walkJob
	var files []string
	descend := w.maxDepth <= 0 || len(j.comps)+1 < w.maxDepth
	for _, e := range ents {
		name := e.Name()
		typ := e.Type()
		switch {
		case typ.IsDir():
			if !descend || !w.filter.accept(lv, relPath{pre: j.comps, last: name}, true) {
				continue
			}
			comps := make([]string, len(j.comps)+1)
			copy(comps, j.comps)
			comps[len(j.comps)] = name
			dirs = append(dirs, walkJob{abs: filepath.Join(j.abs, name), rel: joinRel(j.rel, name), comps: comps, lv: lv})
		case typ.IsRegular():
			if !w.filter.accept(lv, relPath{pre: j.comps, last: name}, false) {
				continue
			}
			if w.skip != nil && w.skip[joinRel(j.rel, name)] {
				continue
			}
			if w.linked != nil && hardLinked(f, name) {
				w.linked(joinRel(j.rel, name))
				continue
			}
			files = append(files, name)
		}
	}
	// Keep the first batch of files for this worker; share the rest.
	var mine []string
	if len(files) > 0 {
		n := min(len(files), fileBatch)
		mine = files[:n]
		for i := n; i < len(files); i += fileBatch {
			dirs = append(dirs, walkJob{abs: j.abs, rel: j.rel, comps: j.comps, lv: lv, files: files[i:min(i+fileBatch, len(files))]})
		}
	}
	w.push(dirs)
	for _, name := range mine {
		if w.stopped.Load() {
			return
		}
		w.visit(id, filepath.Join(j.abs, name), joinRel(j.rel, name))
	}
}

// levelFor returns the ignore level of a directory from its entries: a new level when it holds
// ignore files or a .git (a repository root), else its parent's.
func levelFor(parent *level, root, abs string, depth int, ents []os.DirEntry) *level {
	var has [numKinds]bool
	git, any := false, false
	for _, e := range ents {
		switch e.Name() {
		case ".rgignore":
			has[kindRgignore], any = true, true
		case ".ignore":
			has[kindIgnore], any = true, true
		case ".gitignore":
			has[kindGitignore], any = true, true
		case ".git":
			git, any = true, true
		}
	}
	if !any {
		return parent
	}
	return newLevel(parent, root, abs, depth, has, git)
}
