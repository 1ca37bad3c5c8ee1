package builtin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/fsafe"
)

func write(path, content string) map[string]any {
	return map[string]any{"path": path, "content": content}
}

func TestWriteCreatesFilesWithTheirParents(t *testing.T) {
	f := newFixture(t)
	r := f.mustOK("write", write("a/b/c.txt", "hello\nworld"))
	if got := f.content("a/b/c.txt"); got != "hello\nworld" {
		t.Errorf("content %q", got)
	}
	if !strings.HasPrefix(r.Text(), "Created a/b/c.txt: +2 −0 lines.") {
		t.Errorf("result %s", r.Text())
	}
	if d := r.Details.(builtin.ChangeDetails); !d.Created || d.Added != 2 || len(d.Applied) != 1 {
		t.Errorf("details %+v", d)
	}
	// Writing it again needs no read: agentd wrote it. A final newline in the content is kept
	// although the file had none.
	f.mustOK("write", write("a/b/c.txt", "bye\n"))
	if got := f.content("a/b/c.txt"); got != "bye\n" {
		t.Errorf("rewrite %q", got)
	}
	// A final newline the file had is kept when the content lacks one.
	f.mustOK("write", write("a/b/c.txt", "again"))
	if got := f.content("a/b/c.txt"); got != "again\n" {
		t.Errorf("rewrite without final newline %q", got)
	}
}

func TestWriteReplacingAFileNeedsAReadAndKeepsItsMode(t *testing.T) {
	f := newFixture(t)
	p := f.write("run.sh", "#!/bin/sh\necho old\n")
	if err := os.Chmod(p, 0o754); err != nil {
		t.Fatal(err)
	}
	wantType(t, f.call("write", write("run.sh", "#!/bin/sh\necho new\n")), tools.ReadFirst)
	if f.content("run.sh") != "#!/bin/sh\necho old\n" {
		t.Fatal("write without read changed the file")
	}
	f.read("run.sh")
	r := f.mustOK("write", write("run.sh", "#!/bin/sh\necho new\n"))
	if f.content("run.sh") != "#!/bin/sh\necho new\n" || !strings.HasPrefix(r.Text(), "Replaced the content of run.sh: +1 −1 lines.") {
		t.Errorf("content %q, result %s", f.content("run.sh"), r.Text())
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o754 {
		t.Errorf("mode after write %v (%v), want 0754", fi.Mode(), err)
	}
	// Stale: changed behind the model's back.
	if err := os.WriteFile(p, []byte("changed\n"), 0o754); err != nil {
		t.Fatal(err)
	}
	wantType(t, f.call("write", write("run.sh", "mine\n")), tools.Stale, "changed\n")
	if f.content("run.sh") != "changed\n" {
		t.Error("stale write wrote")
	}
}

func TestWriteKeepsAnExistingFilesFormat(t *testing.T) {
	f := newFixture(t)
	f.write("win.txt", "\uFEFFa\r\nb\r\n")
	f.read("win.txt")
	f.mustOK("write", write("win.txt", "a\nB\nc"))
	if got := f.content("win.txt"); got != "\uFEFFa\r\nB\r\nc\r\n" {
		t.Errorf("bytes %q", got)
	}
	// Identical content: nothing to write.
	r := f.mustOK("write", write("win.txt", "a\nB\nc\n"))
	if !strings.Contains(r.Text(), "already has exactly this content") {
		t.Errorf("identical write: %s", r.Text())
	}
}

func TestWriteRefusesOversizedContent(t *testing.T) {
	f := newFixture(t, withLimits(fsafe.Limits{WriteBytes: 100}))
	wantType(t, f.call("write", write("big.txt", strings.Repeat("x", 101))), tools.Oversized, "more than the 100 bytes")
	if _, err := os.Stat(filepath.Join(f.dir, "big.txt")); !os.IsNotExist(err) {
		t.Error("oversized content was written")
	}
	f.mustOK("write", write("ok.txt", strings.Repeat("x", 100)))
}

func TestWriteAppliesOnlyTheAcceptedHunks(t *testing.T) {
	f := newFixture(t)
	l := func(i int) string { return fmt.Sprintf("l%d", i) }
	f.write("f.txt", lines(12, l))
	f.read("f.txt")
	proposed := "FIRST\n" + strings.TrimPrefix(lines(11, l), "l1\n") + "LAST\n"
	r := f.run(allowHunks(1), "write", write("f.txt", proposed))
	wantType(t, r, tools.OK, "applied 1 of 2 hunks", "differs from what you proposed", "     1\tl1\n     2\tl2\n")
	if got := f.content("f.txt"); got != lines(11, l)+"LAST\n" {
		t.Errorf("partial write %q", got)
	}
	// A new file whose only hunk is rejected is not created.
	r = f.run(allowHunks(), "write", write("new.txt", "x\n"))
	wantType(t, r, tools.RejectedByUser)
	if _, err := os.Stat(filepath.Join(f.dir, "new.txt")); !os.IsNotExist(err) {
		t.Error("rejected new file exists")
	}
}

func TestWriteArgumentsAndPermission(t *testing.T) {
	f := newFixture(t)
	f.mustOK("write", `{"file_path":"x.txt","contents":"1"}`)
	if f.content("x.txt") != "1" {
		t.Error("compat names")
	}
	wantType(t, f.call("write", map[string]any{"path": "y.txt"}), tools.InvalidArgs, "/content: required")
	f.write("d/e.txt", "")
	wantType(t, f.call("write", write("d", "x")), tools.InvalidArgs, "is a directory")
	pm := f.tool("write").(tools.PermissionMetadata)
	args, _ := f.tool("write").Spec().Decode([]byte(`{"path":".git/hooks/pre-commit","content":""}`), nil)
	if p := pm.Permission(&tools.Call{Args: args}); !p.Protected || p.Access != tools.AccessWrite {
		t.Errorf("permission %+v", p)
	}
}
