package fsafe

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCommitWithIntent is one edit's write as the checkpoint middleware makes it, on the
// disk of the temporary directory: a write hook that appends a record to a log and fsyncs it
// (the checkpoint's intent), the temporary file written and fsynced, the rename. The
// directory's fsync is left to SyncDirs, as in a session (one per batch, beside the journal's).
func BenchmarkCommitWithIntent(b *testing.B) {
	// Without the hook: the file's own fsync alone, what the intent's parallel fsync adds to.
	b.Run("intent", func(b *testing.B) { commitBench(b, true) })
	b.Run("no-intent", func(b *testing.B) { commitBench(b, false) })
}

func commitBench(b *testing.B, withHook bool) {
	dir := b.TempDir()
	ws, err := NewWorkspace(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	fs := New(ws, Options{})
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if _, err := fs.Read(context.Background(), "a.go"); err != nil {
		b.Fatal(err)
	}
	log, err := os.OpenFile(filepath.Join(b.TempDir(), "intents"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	ctx := context.Background()
	if withHook {
		ctx = WithWriteHook(ctx, func(Path, []byte) error {
			if _, err := log.Write([]byte("{\"path\":\"a.go\",\"sha256\":\"…\"}\n")); err != nil {
				return err
			}
			return log.Sync()
		})
	}
	i := 0
	for b.Loop() {
		tg, err := fs.PrepareWrite(ctx, "a.go")
		if err != nil {
			b.Fatal(err)
		}
		i++
		if _, err := fs.Commit(ctx, tg, []byte("package a\n\nvar x = "+string(rune('0'+i%10))+"\n")); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	SyncDirs()
}
