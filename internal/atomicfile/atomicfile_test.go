package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteReplacesAndLeavesNoTemp: a new file and a replacement both hold exactly the data, mode
// 0600, with nothing else left in the directory; a write that cannot rename leaves the old file
// and no temporary file.
func TestWriteReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "trusted")
	for _, content := range []string{"one\n", "two, longer\n", ""} {
		if err := Write(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != content {
			t.Fatalf("after writing %q: %q, %v", content, b, err)
		}
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, want 0600", fi.Mode())
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("the directory holds %d entries, want only the file: %v", len(ents), ents)
		}
	}
	// A directory in the way: the rename fails.
	blocked := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(blocked, []byte("new")); err == nil {
		t.Fatal("Write over a non-empty directory succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("a failed write left %d entries, want 2 (the file and the directory): %v", len(ents), ents)
	}
}

// TestWriteWithOptions: the store's two ways (its temporary prefix, with strict fsyncs or none)
// replace the content alike and leave no temporary file.
func TestWriteWithOptions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "meta.json")
	for _, o := range []Options{{TempPrefix: ".tmp-", StrictDirSync: true}, {TempPrefix: ".tmp-", NoSync: true}} {
		want := []byte(fmt.Sprintf("%+v\n", o))
		if err := WriteWith(p, want, o); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != string(want) {
			t.Errorf("%+v: %q, %v", o, b, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%+v: %d entries, want only the file: %v", o, len(ents), ents)
		}
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("SyncDir of a missing directory succeeded")
	}
}
