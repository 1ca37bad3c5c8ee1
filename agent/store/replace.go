package store

import "github.com/agentd/agentd/internal/atomicfile"

// replaceFile replaces path with data like writeFileAtomic (temporary file, rename: a reader
// sees the old content or the new) but without fsyncs. Only for files that are an index of
// durable data and are checked and rebuilt when stale or damaged (the session meta index): after
// a power loss such a file may be old, empty or missing, never wrong.
func replaceFile(path string, data []byte) error {
	return atomicfile.WriteWith(path, data, atomicfile.Options{TempPrefix: tmpPrefix, NoSync: true})
}
