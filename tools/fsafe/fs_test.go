package fsafe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/tools"
)

var bg = context.Background()

func TestEditingWithoutReadingIsReadFirst(t *testing.T) {
	e := newEnv(t, Options{})
	_, err := e.fs.PrepareWrite(bg, "a.txt")
	if errType(err) != tools.ReadFirst {
		t.Fatalf("PrepareWrite before any read: %v, want read_first", err)
	}
	if err := e.fs.State().CheckWrite(mustResolve(t, e, "a.txt")); errType(err) != tools.ReadFirst {
		t.Fatalf("CheckWrite before any read: %v, want read_first", err)
	}
	// A file that does not exist yet needs no read.
	tg, err := e.fs.PrepareWrite(bg, "brand/new.txt")
	if err != nil || tg.Exists {
		t.Fatalf("PrepareWrite of a new file: %+v, %v", tg, err)
	}
	if _, err := e.fs.Commit(bg, tg, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(e.ws, "brand", "new.txt")); got != "hello\n" {
		t.Fatalf("new file = %q (parents must be created)", got)
	}
}

func TestPartialReadIsReadFirstUntilEveryLineWasSeen(t *testing.T) {
	e := newEnv(t, Options{})
	mustWrite(t, filepath.Join(e.ws, "three.txt"), "one\ntwo\nthree\n")
	pg, err := e.fs.ReadLines(bg, "three.txt", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Lines) != 1 || !pg.More || pg.NextOffset != 1 || pg.TotalLines != 3 {
		t.Fatalf("page = %+v", pg)
	}
	_, err = e.fs.PrepareWrite(bg, "three.txt")
	if errType(err) != tools.ReadFirst || !strings.Contains(err.Error(), "lines 1-1 of 3") {
		t.Fatalf("after a partial read: %v, want read_first naming the lines seen", err)
	}
	if _, err := e.fs.ReadLines(bg, "three.txt", 2, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.PrepareWrite(bg, "three.txt"); errType(err) != tools.ReadFirst {
		t.Fatalf("line 2 is still unseen: %v", err)
	}
	if _, err := e.fs.ReadLines(bg, "three.txt", 1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.PrepareWrite(bg, "three.txt"); err != nil {
		t.Fatalf("every line was seen: %v", err)
	}
}

func TestPartialReadOfAnEarlierVersionDoesNotAddUp(t *testing.T) {
	e := newEnv(t, Options{})
	f := filepath.Join(e.ws, "two.txt")
	mustWrite(t, f, "one\ntwo\n")
	if _, err := e.fs.ReadLines(bg, "two.txt", 0, 1); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "ONE\ntwo\n")
	if _, err := e.fs.ReadLines(bg, "two.txt", 1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.PrepareWrite(bg, "two.txt"); errType(err) != tools.ReadFirst {
		t.Fatalf("pages of different versions added up: %v", err)
	}
}

func TestCutLinesDoNotCountAsRead(t *testing.T) {
	e := newEnv(t, Options{Limits: Limits{LineBytes: 10}})
	mustWrite(t, filepath.Join(e.ws, "long.txt"), "short\n"+strings.Repeat("é", 20)+"\n")
	pg, err := e.fs.ReadLines(bg, "long.txt", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l := pg.Lines[1]; !l.Cut || len(l.Text) > 10 || !strings.HasPrefix(strings.Repeat("é", 20), l.Text) {
		t.Fatalf("long line = %+v (must be cut on a UTF-8 boundary)", l)
	}
	if _, err := e.fs.PrepareWrite(bg, "long.txt"); errType(err) != tools.ReadFirst {
		t.Fatalf("a page with a cut line counted as a whole read: %v", err)
	}
}

func TestChangedFileIsStaleWithItsCurrentContent(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.fs.Read(bg, "a.txt"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(e.ws, "a.txt"), "changed by the user\n")
	_, err := e.fs.PrepareWrite(bg, "a.txt")
	d := staleDetails(t, err)
	if d.Content != "changed by the user\n" || d.Truncated || !strings.Contains(err.Error(), "changed by the user") {
		t.Fatalf("stale details = %+v, message %q", d, err)
	}
	// The content carried by the error counts as read: the retry works at once.
	tg, err := e.fs.PrepareWrite(bg, "a.txt")
	if err != nil || string(tg.Content) != "changed by the user\n" {
		t.Fatalf("retry: %+v, %v", tg, err)
	}
}

// A file replaced by a hard link to an outside secret: the stale error must not carry the
// secret (a read would be flagged for approval).
func TestStaleNeverDisclosesAHardLinkedFile(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.fs.Read(bg, "a.txt"); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(e.ws, "a.txt")
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(e.outside, "secret.txt"), a); err != nil {
		t.Skipf("link: %v", err)
	}
	_, err := e.fs.PrepareWrite(bg, "a.txt")
	if d := staleDetails(t, err); !d.Withheld || containsSecret([]byte(err.Error())) || containsSecret([]byte(d.Content)) {
		t.Fatalf("stale = %+v, %v", d, err)
	}
	if _, err := e.fs.PrepareWrite(bg, "a.txt"); errType(err) != tools.ReadFirst {
		t.Fatalf("retry: %v, want read_first", err)
	}
}

func TestStaleContentIsCapped(t *testing.T) {
	e := newEnv(t, Options{Limits: Limits{StaleBytes: 64}})
	if _, err := e.fs.Read(bg, "a.txt"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(e.ws, "a.txt"), strings.Repeat("0123456789\n", 100))
	_, err := e.fs.PrepareWrite(bg, "a.txt")
	d := staleDetails(t, err)
	if !d.Truncated || len(d.Content) > 64 || !strings.HasSuffix(d.Content, "\n") || len(err.Error()) > 1000 {
		t.Fatalf("capped stale: %+v (%d bytes of message)", d, len(err.Error()))
	}
	// Only part was shown, so the model must read the rest.
	if _, err := e.fs.PrepareWrite(bg, "a.txt"); errType(err) != tools.ReadFirst {
		t.Fatalf("after a truncated stale error: %v, want read_first", err)
	}
}

func TestTouchWithoutChangeIsNotStale(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.fs.Read(bg, "a.txt"); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(e.ws, "a.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	// Same size, same mtime is not enough either way: the hash decides.
	if _, err := e.fs.PrepareWrite(bg, "a.txt"); err != nil {
		t.Fatalf("a touch made the file stale: %v", err)
	}
	fi, _ := os.Stat(filepath.Join(e.ws, "a.txt"))
	mustWrite(t, filepath.Join(e.ws, "a.txt"), "inside A\n") // same size
	if err := os.Chtimes(filepath.Join(e.ws, "a.txt"), fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.PrepareWrite(bg, "a.txt"); errType(err) != tools.Stale {
		t.Fatalf("same size and mtime, different content: %v, want stale", err)
	}
}

func TestChangeDuringApprovalWaitIsStale(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.fs.Read(bg, "a.txt"); err != nil {
		t.Fatal(err)
	}
	tg, err := e.fs.PrepareWrite(bg, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	// While the user looks at the diff, a formatter rewrites the file.
	mustWrite(t, filepath.Join(e.ws, "a.txt"), "formatted\n")
	_, err = e.fs.Commit(bg, tg, []byte("model's edit\n"))
	if d := staleDetails(t, err); d.Content != "formatted\n" {
		t.Fatalf("stale content = %q", d.Content)
	}
	if got := readString(t, filepath.Join(e.ws, "a.txt")); got != "formatted\n" {
		t.Fatalf("the file was overwritten: %q", got)
	}
	// The model retries against the content it was given.
	tg, err = e.fs.PrepareWrite(bg, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.Commit(bg, tg, []byte("model's edit\n")); err != nil {
		t.Fatal(err)
	}
}

func TestCreatedOrDeletedDuringApprovalWait(t *testing.T) {
	e := newEnv(t, Options{})
	tg, err := e.fs.PrepareWrite(bg, "new.txt")
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(e.ws, "new.txt"), "the user's file\n")
	_, err = e.fs.Commit(bg, tg, []byte("model\n"))
	// The model never read this file: its content is withheld (a read goes through the gate).
	if d := staleDetails(t, err); !d.Withheld || d.Content != "" || strings.Contains(err.Error(), "the user's file") {
		t.Fatalf("stale = %+v, %v", d, err)
	}
	if got := readString(t, filepath.Join(e.ws, "new.txt")); got != "the user's file\n" {
		t.Fatalf("overwritten: %q", got)
	}
	if _, err := e.fs.PrepareWrite(bg, "new.txt"); errType(err) != tools.ReadFirst {
		t.Fatalf("after a withheld stale error: %v, want read_first", err)
	}

	if _, err := e.fs.Read(bg, "a.txt"); err != nil {
		t.Fatal(err)
	}
	tg, err = e.fs.PrepareWrite(bg, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(e.ws, "a.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.Commit(bg, tg, []byte("edit\n")); errType(err) != tools.Stale {
		t.Fatalf("deleted during the wait: %v, want stale", err)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the deleted file was recreated")
	}
}

func TestOwnWritesRefreshTheStamp(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.fs.Read(bg, "a.txt"); err != nil {
		t.Fatal(err)
	}
	for i, content := range []string{"first edit\n", "second edit\n", "third edit\n"} {
		tg, err := e.fs.PrepareWrite(bg, "a.txt")
		if err != nil {
			t.Fatalf("edit %d: %v", i, err)
		}
		if i > 0 && string(tg.Content) == "inside a\n" {
			t.Fatalf("edit %d computed from the original content", i)
		}
		if _, err := e.fs.Commit(bg, tg, []byte(content)); err != nil {
			t.Fatalf("edit %d: %v", i, err)
		}
	}
	if got := readString(t, filepath.Join(e.ws, "a.txt")); got != "third edit\n" {
		t.Fatalf("a.txt = %q", got)
	}
}

// Two calls edit the same file from the same base: the second must not silently win.
func TestConcurrentCommitsOfOneFile(t *testing.T) {
	q := &tools.MutationQueue{}
	e := newEnv(t, Options{Queue: q})
	other := New(e.w, Options{Queue: q}) // another session
	for _, f := range []*FS{e.fs, other} {
		if _, err := f.Read(bg, "a.txt"); err != nil {
			t.Fatal(err)
		}
	}
	t1, err1 := e.fs.PrepareWrite(bg, "a.txt")
	t2, err2 := other.PrepareWrite(bg, "a.txt")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, c := range []struct {
		f *FS
		t *Target
	}{{e.fs, t1}, {other, t2}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.f.Commit(bg, c.t, []byte{'0' + byte(i), '\n'})
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("errors = %v: exactly one commit must win", errs)
	}
	for _, err := range errs {
		if err != nil && errType(err) != tools.Stale {
			t.Fatalf("loser: %v, want stale", err)
		}
	}
}

func TestModeAndOwnerArePreserved(t *testing.T) {
	e := newEnv(t, Options{})
	f := filepath.Join(e.ws, "script.sh")
	mustWrite(t, f, "#!/bin/sh\n")
	chowned := os.Geteuid() == 0 && os.Chown(f, 1234, 5678) == nil
	if err := os.Chmod(f, 0o751|os.ModeSetuid); err != nil { // after chown, which clears setuid
		t.Fatal(err)
	}
	if fi, _ := os.Stat(f); fi.Mode()&os.ModeSetuid == 0 {
		t.Fatal("setup: setuid not set")
	}
	if _, err := e.fs.Read(bg, "script.sh"); err != nil {
		t.Fatal(err)
	}
	tg, err := e.fs.PrepareWrite(bg, "script.sh")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.Commit(bg, tg, []byte("#!/bin/sh\necho hi\n")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o751 {
		t.Errorf("mode = %v, want -rwxr-x--x (setuid dropped)", fi.Mode())
	}
	if st := fi.Sys().(*syscall.Stat_t); chowned && (st.Uid != 1234 || st.Gid != 5678) {
		t.Errorf("owner = %d:%d, want 1234:5678", st.Uid, st.Gid)
	} else if !chowned {
		t.Log("not root: owner preservation not checked")
	}
	// A new file gets the default mode (0644 before the umask), never more.
	tg, _ = e.fs.PrepareWrite(bg, "fresh.txt")
	if _, err := e.fs.Commit(bg, tg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(e.ws, "fresh.txt")); fi.Mode()&0o133 != 0 {
		t.Errorf("new file mode = %v", fi.Mode())
	}
}

func TestSizeLimits(t *testing.T) {
	e := newEnv(t, Options{Limits: Limits{ReadBytes: 100, WriteBytes: 1000, PageBytes: 50}})
	big := strings.Repeat("line of text\n", 20) // 260 bytes
	mustWrite(t, filepath.Join(e.ws, "big.txt"), big)
	_, err := e.fs.Read(bg, "big.txt")
	if errType(err) != tools.Oversized || !strings.Contains(err.Error(), "offset and limit") {
		t.Fatalf("Read of 260 bytes with a 100-byte cap: %v, want oversized telling to page", err)
	}
	if _, _, err := ReadFile(mustResolve(t, e, "big.txt"), 100); errType(err) != tools.Oversized {
		t.Fatalf("ReadFile: %v", err)
	}
	// Paging works, bounded by PageBytes.
	var got []string
	for off := 0; ; {
		pg, err := e.fs.ReadLines(bg, "big.txt", off, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range pg.Lines {
			got = append(got, l.Text)
		}
		if !pg.More {
			break
		}
		if len(pg.Lines) == 0 || len(pg.Lines)*12 > 50 {
			t.Fatalf("page of %d lines over a 50-byte budget", len(pg.Lines))
		}
		off = pg.NextOffset
	}
	if strings.Join(got, "\n")+"\n" != big {
		t.Fatalf("pages do not add up to the file")
	}
	// Every page was seen: the file may be edited.
	tg, err := e.fs.PrepareWrite(bg, "big.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.Commit(bg, tg, []byte(strings.Repeat("x", 1001))); errType(err) != tools.Oversized {
		t.Fatalf("write over the cap: %v", err)
	}
	if got := readString(t, filepath.Join(e.ws, "big.txt")); got != big {
		t.Fatalf("the refused write changed the file")
	}
	mustWrite(t, filepath.Join(e.ws, "huge.txt"), strings.Repeat("y\n", 600))
	if _, err := e.fs.PrepareWrite(bg, "huge.txt"); errType(err) != tools.Oversized {
		t.Fatalf("PrepareWrite of a file over the write cap: %v", err)
	}
	// A file over the write cap is paged without hashing; the page is still right.
	pg, err := e.fs.ReadLines(bg, "huge.txt", 5, 2)
	if err != nil || len(pg.Lines) != 2 || pg.Lines[0].N != 6 || pg.TotalLines != -1 || !pg.More {
		t.Fatalf("page of a huge file: %+v, %v", pg, err)
	}
	if _, err := e.fs.ReadLines(bg, "big.txt", 20, 1); errType(err) != tools.InvalidArgs {
		t.Fatalf("offset past the end: %v", err)
	}
}

func TestReadLinesShapes(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		content string
		want    []string
	}{
		{"", nil},
		{"one", []string{"one"}},
		{"one\n", []string{"one"}},
		{"one\r\ntwo\r\n", []string{"one", "two"}},
		{"a\n\nb", []string{"a", "", "b"}},
		{"\n", []string{""}},
	} {
		mustWrite(t, filepath.Join(e.ws, "s.txt"), tc.content)
		pg, err := e.fs.ReadLines(bg, "s.txt", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, l := range pg.Lines {
			if l.N != i+1 {
				t.Errorf("%q: line %d numbered %d", tc.content, i+1, l.N)
			}
			got = append(got, l.Text)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || pg.TotalLines != len(tc.want) || pg.More {
			t.Errorf("%q: lines %q total %d more %v", tc.content, got, pg.TotalLines, pg.More)
		}
	}
	mustWrite(t, filepath.Join(e.ws, "bin"), "ELF\x00\x01")
	if pg, _ := e.fs.ReadLines(bg, "bin", 0, 0); !pg.Binary {
		t.Errorf("binary not detected")
	}
}

// fakeOverlay is an editor with open documents.
type fakeOverlay struct {
	mu   sync.Mutex
	docs map[string]Document
}

func (o *fakeOverlay) Document(abs string) (Document, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d, ok := o.docs[abs]
	return d, ok
}

func (o *fakeOverlay) set(abs string, version int64, content string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.docs[abs] = Document{Version: version, Content: []byte(content)}
}

// fakeWriter applies edits to the overlay, as the editor would with workspace/applyEdit.
type fakeWriter struct {
	overlay *fakeOverlay
	calls   []string
}

func (w *fakeWriter) Write(_ context.Context, p Path, data []byte, base Stamp) (Stamp, error) {
	doc, ok := w.overlay.Document(p.Abs())
	if !ok || doc.Version != base.Version {
		return Stamp{}, tools.Errorf(tools.Stale, "version moved")
	}
	w.calls = append(w.calls, p.Rel())
	w.overlay.set(p.Abs(), doc.Version+1, string(data))
	return Stamp{Source: SourceEditor, Version: doc.Version + 1}, nil
}

func TestOverlayWinsAndCommitGoesThroughTheEditor(t *testing.T) {
	ov := &fakeOverlay{docs: map[string]Document{}}
	wr := &fakeWriter{overlay: ov}
	e := newEnv(t, Options{Overlay: ov, Writer: wr})
	abs := filepath.Join(e.ws, "a.txt")
	ov.set(abs, 7, "unsaved buffer text\n")

	c, err := e.fs.Read(bg, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Data) != "unsaved buffer text\n" || c.Stamp.Source != SourceEditor || c.Stamp.Version != 7 {
		t.Fatalf("read = %q %+v, want the editor buffer", c.Data, c.Stamp)
	}
	if pg, _ := e.fs.ReadLines(bg, "a.txt", 0, 0); pg.Lines[0].Text != "unsaved buffer text" {
		t.Fatalf("ReadLines ignored the overlay: %+v", pg.Lines)
	}
	tg, err := e.fs.PrepareWrite(bg, "a.txt")
	if err != nil || string(tg.Content) != "unsaved buffer text\n" || tg.Base.Version != 7 {
		t.Fatalf("PrepareWrite = %+v, %v", tg, err)
	}
	if _, err := e.fs.Commit(bg, tg, []byte("edited in the buffer\n")); err != nil {
		t.Fatal(err)
	}
	if len(wr.calls) != 1 {
		t.Fatalf("writer calls = %v", wr.calls)
	}
	if got := readString(t, abs); got != "inside a\n" {
		t.Fatalf("the disk was written under an open buffer: %q", got)
	}
	// Own write refreshed the stamp: a second edit needs no read.
	tg, err = e.fs.PrepareWrite(bg, "a.txt")
	if err != nil || tg.Base.Version != 8 {
		t.Fatalf("second edit: %+v, %v", tg, err)
	}
	// The user types in the buffer while the change waits for approval.
	ov.set(abs, 9, "user typed\n")
	_, err = e.fs.Commit(bg, tg, []byte("x\n"))
	if d := staleDetails(t, err); d.Content != "user typed\n" || d.Stamp.Version != 9 {
		t.Fatalf("stale = %+v", d)
	}
	// A buffer that differs from the disk: the disk changing does not matter, the buffer does.
	if _, err := e.fs.PrepareWrite(bg, "a.txt"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, abs, "disk changed\n")
	if _, err := e.fs.PrepareWrite(bg, "a.txt"); err != nil {
		t.Fatalf("disk change under an open buffer: %v", err)
	}
	// Files not open go to the disk.
	if _, err := e.fs.Read(bg, "sub/b.txt"); err != nil {
		t.Fatal(err)
	}
	tg, _ = e.fs.PrepareWrite(bg, "sub/b.txt")
	if _, err := e.fs.Commit(bg, tg, []byte("disk\n")); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(e.ws, "sub", "b.txt")); got != "disk\n" || len(wr.calls) != 1 {
		t.Fatalf("b.txt = %q, writer calls %v", got, wr.calls)
	}
}

func TestReadStateRecords(t *testing.T) {
	e := newEnv(t, Options{})
	p := mustResolve(t, e, "a.txt")
	rs := NewReadState(nil)
	s1 := StampOf(SourceDisk, 0, []byte("inside a\n"))
	rs.RecordRead(p, s1, false)
	rs.RecordRead(p, s1, true) // a partial read of the same content keeps the whole record
	if r, _ := rs.Lookup(p); r.Partial {
		t.Fatalf("record = %+v", r)
	}
	if err := rs.CheckWrite(p); err != nil {
		t.Fatal(err)
	}
	rs.Forget(p)
	if err := rs.CheckWrite(p); errType(err) != tools.ReadFirst {
		t.Fatalf("after Forget: %v", err)
	}
	rs.RecordWrite(p, StampOf(SourceDisk, 0, []byte("other")))
	if err := rs.CheckWrite(p); errType(err) != tools.Stale {
		t.Fatalf("record of other content: %v", err)
	}
}

func mustResolve(t *testing.T, e *env, name string) Path {
	t.Helper()
	p, err := e.w.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func staleDetails(t *testing.T, err error) *StaleDetails {
	t.Helper()
	var te *tools.Error
	if !errors.As(err, &te) || te.Type != tools.Stale {
		t.Fatalf("error %v, want stale", err)
	}
	d, ok := te.Details.(*StaleDetails)
	if !ok {
		t.Fatalf("details = %#v", te.Details)
	}
	return d
}
