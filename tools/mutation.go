package tools

import (
	"path/filepath"
	"sync"
)

// MutationQueue serializes mutations of one file: two writes to the same file never interleave,
// while writes to different files proceed in parallel. Keys are canonical paths (symlinks and ".."
// resolved), so a file reached through a symlink shares its queue with the file itself.
type MutationQueue struct {
	mu    sync.Mutex
	files map[string]*queueEntry
}

type queueEntry struct {
	mu   sync.Mutex
	refs int
}

// Canonical resolves symlinks and ".." in an absolute path. For a path that does not exist yet it
// resolves the longest existing parent and appends the rest, so a file about to be created gets the
// same key as it will have once it exists.
func Canonical(path string) string {
	path = filepath.Clean(path)
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		return resolved
	}
	dir, base := filepath.Split(path)
	dir = filepath.Clean(dir)
	if dir == path { // the root
		return path
	}
	return filepath.Join(Canonical(dir), base)
}

// Lock waits until no other mutation of the file at path runs, and returns the function that ends
// this one. path must be absolute.
func (q *MutationQueue) Lock(path string) (unlock func()) {
	key := Canonical(path)
	q.mu.Lock()
	if q.files == nil {
		q.files = make(map[string]*queueEntry)
	}
	e := q.files[key]
	if e == nil {
		e = &queueEntry{}
		q.files[key] = e
	}
	e.refs++
	q.mu.Unlock()

	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		q.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(q.files, key)
		}
		q.mu.Unlock()
	}
}
