package builtin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/fsafe"
)

func edit(path, old, new string) map[string]any {
	return map[string]any{"path": path, "old_string": old, "new_string": new}
}

func TestEditReplacesTextThatOccursExactlyOnce(t *testing.T) {
	f := newFixture(t)
	f.write("f.txt", "alpha\nbeta\ngamma\n")
	f.read("f.txt")
	r := f.mustOK("edit", edit("f.txt", "beta", "BETA\nbeta2"))
	if got := f.content("f.txt"); got != "alpha\nBETA\nbeta2\ngamma\n" {
		t.Errorf("content %q", got)
	}
	d := r.Details.(builtin.ChangeDetails)
	if d.Path != "f.txt" || len(d.Applied) != 1 || len(d.Rejected) != 0 || d.Added != 2 || d.Removed != 1 || d.Created {
		t.Errorf("details %+v", d)
	}
	if !strings.HasPrefix(r.Text(), "Edited f.txt: +2 −1 lines.\napplied 1 of 1 hunk to f.txt") ||
		!strings.Contains(r.Text(), "the file now contains all proposed changes") {
		t.Errorf("result:\n%s", r.Text())
	}
	// The write counts as read: a second edit needs no new read.
	f.mustOK("edit", edit("f.txt", "gamma", "GAMMA"))
	if got := f.content("f.txt"); got != "alpha\nBETA\nbeta2\nGAMMA\n" {
		t.Errorf("second edit: %q", got)
	}
}

func TestEditAmbiguousMatchListsTheLines(t *testing.T) {
	f := newFixture(t)
	f.write("f.go", "x := 1\ny := 2\nx := 1\n\nx := 1\n")
	f.read("f.go")
	r := f.call("edit", edit("f.go", "x := 1", "x := 3"))
	wantType(t, r, tools.InvalidArgs, "occurs 3 times in f.go, at lines 1, 3, 5", "replace_all", "Nothing was changed.")
	if f.content("f.go") != "x := 1\ny := 2\nx := 1\n\nx := 1\n" {
		t.Error("a failed edit changed the file")
	}
	r = f.mustOK("edit", map[string]any{"path": "f.go", "old_string": "x := 1", "new_string": "x := 3", "replace_all": true})
	if f.content("f.go") != "x := 3\ny := 2\nx := 3\n\nx := 3\n" || !strings.Contains(r.Text(), "(3 replacements)") {
		t.Errorf("replace_all: %q\n%s", f.content("f.go"), r.Text())
	}
}

func TestEditNoMatchPointsAtTheNearestText(t *testing.T) {
	f := newFixture(t)
	src := "package p\n\nfunc f() error {\n\tif err != nil {\n\t\treturn err\n\t}\n\treturn nil\n}\n"
	f.write("p.go", src)
	f.read("p.go")
	cases := []struct {
		old  string
		want []string
	}{
		{"    if err != nil {\n        return err\n    }", []string{
			"old_string was not found in p.go.",
			"The most similar text is at lines 4–6 (it differs only in whitespace or indentation):",
			"     4\t\tif err != nil {\n     5\t\t\treturn err\n     6\t\t}\n"}},
		{"\tif err != nil {\n\t\tretrun err\n", []string{"at lines 4–5 (about 8", "% similar)", "     5\t\t\treturn err"}},
		{"     5\t\t\treturn err", []string{"line numbers and tabs that read prints"}},
		{"completely unrelated words here", []string{"Nothing closely similar was found; the closest text is at line", "% similar)"}},
		// Only a blank line is missing: the region is found, with its line numbers, and named.
		{"package p\nfunc f() error {", []string{"The most similar text is at lines 1–3 (it differs only in blank lines",
			"     1\tpackage p\n     2\t\n     3\tfunc f() error {\n"}},
		{"\treturn err\n\t}\n\n\treturn nil", []string{"at lines 5–7 (it differs only in blank lines"}},
	}
	for _, c := range cases {
		r := f.call("edit", edit("p.go", c.old, "x"))
		wantType(t, r, tools.InvalidArgs, c.want...)
	}
	if f.content("p.go") != src {
		t.Error("a failed edit changed the file")
	}
}

func TestEditArgumentErrors(t *testing.T) {
	f := newFixture(t)
	f.write("f.txt", "a\n")
	f.read("f.txt")
	cases := []struct {
		args any
		want string
	}{
		{map[string]any{"path": "f.txt", "old_string": "a"}, "new_string is missing"},
		{map[string]any{"path": "f.txt"}, "give old_string"},
		{edit("f.txt", "", "b"), "old_string is empty"},
		{edit("f.txt", "a", "a"), "identical"},
		{map[string]any{"path": "f.txt", "old_string": "a", "new_string": "b", "edits": []any{map[string]any{"old_string": "a", "new_string": "c"}}}, "not both"},
		{map[string]any{"path": "f.txt", "edits": []any{}}, "/edits"},
		{map[string]any{"path": "f.txt", "edits": []any{map[string]any{"old_string": "a"}}}, "/edits/0/new_string: required"},
	}
	for _, c := range cases {
		wantType(t, f.call("edit", c.args), tools.InvalidArgs, c.want)
	}
	wantType(t, f.call("edit", edit("missing.txt", "a", "b")), tools.NotFound, "use write to create")
	f.write("dir/x", "")
	wantType(t, f.call("edit", edit("dir", "a", "b")), tools.InvalidArgs, "is a directory")
	f.write("bin.dat", "a\x00b\n")
	f.read("bin.dat")
	wantType(t, f.call("edit", edit("bin.dat", "a", "c")), tools.InvalidArgs, "binary")
	if f.content("f.txt") != "a\n" {
		t.Error("file changed")
	}
}

func TestMultiEditIsAllOrNothingAndSequential(t *testing.T) {
	f := newFixture(t)
	f.write("f.txt", "one\ntwo\nthree\n")
	f.read("f.txt")
	r := f.call("edit", map[string]any{"path": "f.txt", "edits": []any{
		map[string]any{"old_string": "one", "new_string": "1"},
		map[string]any{"old_string": "four", "new_string": "4"},
	}})
	wantType(t, r, tools.InvalidArgs, "edit 2 of 2: old_string was not found", "Edits apply in order", "Nothing was changed.")
	if f.content("f.txt") != "one\ntwo\nthree\n" {
		t.Errorf("the first edit of a failed batch was written: %q", f.content("f.txt"))
	}
	// The second edit matches text the first one created; the first no longer matches after.
	r = f.mustOK("edit", map[string]any{"path": "f.txt", "edits": []any{
		map[string]any{"old_string": "one", "new_string": "uno"},
		map[string]any{"old_string": "uno\ntwo", "new_string": "uno dos"},
	}})
	if got := f.content("f.txt"); got != "uno dos\nthree\n" {
		t.Errorf("sequential edits: %q", got)
	}
	if !strings.Contains(r.Text(), "(2 replacements)") {
		t.Errorf("result: %s", r.Text())
	}
	// Compat: the edits list as a JSON string and camelCase names.
	f.mustOK("edit", `{"filePath":"f.txt","edits":"[{\"oldString\":\"three\",\"newString\":\"tres\"}]"}`)
	if got := f.content("f.txt"); got != "uno dos\ntres\n" {
		t.Errorf("compat edits: %q", got)
	}
}

func TestEditKeepsTheFilesFormat(t *testing.T) {
	cases := []struct {
		name, before string
		edits        []map[string]any
		after        string
	}{
		{"crlf", "one\r\ntwo\r\nthree\r\n", []map[string]any{{"old_string": "two", "new_string": "2"}}, "one\r\n2\r\nthree\r\n"},
		{"crlf insert lines", "a\r\nb\r\n", []map[string]any{{"old_string": "a\n", "new_string": "a\nnew\n"}}, "a\r\nnew\r\nb\r\n"},
		{"crlf old_string sent with crlf", "a\r\nb\r\nc\r\n", []map[string]any{{"old_string": "a\r\nb", "new_string": "ab"}}, "ab\r\nc\r\n"},
		{"bom", "\uFEFFfirst\nsecond\n", []map[string]any{{"old_string": "first", "new_string": "1st"}}, "\uFEFF1st\nsecond\n"},
		{"bom crlf", "\uFEFFfirst\r\nsecond\r\n", []map[string]any{{"old_string": "second", "new_string": "2nd"}}, "\uFEFFfirst\r\n2nd\r\n"},
		{"no final newline", "a\nb", []map[string]any{{"old_string": "b", "new_string": "B"}}, "a\nB"},
		{"no final newline crlf", "a\r\nb", []map[string]any{{"old_string": "a", "new_string": "A"}}, "A\r\nb"},
		{"mixed", "a\r\nb\nc\r\nd\n", []map[string]any{{"old_string": "b", "new_string": "B"}, {"old_string": "c", "new_string": "C"}}, "a\r\nB\nC\r\nd\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.write("f.txt", c.before)
			f.read("f.txt")
			var edits []any
			for _, e := range c.edits {
				edits = append(edits, e)
			}
			f.mustOK("edit", map[string]any{"path": "f.txt", "edits": edits})
			if got := f.content("f.txt"); got != c.after {
				t.Errorf("bytes after edit %q, want %q", got, c.after)
			}
		})
	}
}

func TestEditRequiresAWholeFreshRead(t *testing.T) {
	f := newFixture(t)
	f.write("f.txt", "a\nb\nc\n")
	wantType(t, f.call("edit", edit("f.txt", "a", "A")), tools.ReadFirst, "read it before changing it")
	f.mustOK("read", map[string]any{"path": "f.txt", "limit": 1})
	wantType(t, f.call("edit", edit("f.txt", "a", "A")), tools.ReadFirst, "only part of f.txt")
	f.read("f.txt")
	f.write("f.txt", "a\nb\nc\nd\n") // changed by someone else
	r := f.call("edit", edit("f.txt", "a", "A"))
	wantType(t, r, tools.Stale, "changed since you last read it", "a\nb\nc\nd\n")
	if f.content("f.txt") != "a\nb\nc\nd\n" {
		t.Error("stale edit wrote")
	}
	// The stale error's content counts as read: a retry works.
	f.mustOK("edit", edit("f.txt", "d", "D"))
	if f.content("f.txt") != "a\nb\nc\nD\n" {
		t.Errorf("retry: %q", f.content("f.txt"))
	}
}

// A change made while the user was deciding must not be overwritten: the kernel runs the real
// pipeline, the gate edits the file before it allows.
func TestEditStaleAfterTheGateApprovedLeavesTheFileAlone(t *testing.T) {
	f := newFixture(t)
	p := f.write("f.txt", "a\nb\n")
	f.read("f.txt")
	gateCalls := 0
	gate := func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		gateCalls++
		if err := os.WriteFile(p, []byte("a\nb\nformatted\n"), 0o644); err != nil {
			return agent.GateDecision{}, err
		}
		return agent.GateDecision{Allow: true}, nil
	}
	r := f.run(gate, "edit", edit("f.txt", "b", "B"))
	wantType(t, r, tools.Stale, "a\nb\nformatted\n")
	if gateCalls != 1 {
		t.Errorf("gate called %d times", gateCalls)
	}
	if got := f.content("f.txt"); got != "a\nb\nformatted\n" {
		t.Errorf("file after stale edit: %q", got)
	}
}

func TestEditValidationFailsBeforeTheGate(t *testing.T) {
	f := newFixture(t)
	f.write("f.txt", "a\n")
	f.read("f.txt")
	asked := false
	gate := func(context.Context, agent.GateRequest) (agent.GateDecision, error) {
		asked = true
		return agent.GateDecision{Allow: true}, nil
	}
	wantType(t, f.run(gate, "edit", edit("f.txt", "zzz", "y")), tools.InvalidArgs)
	if asked {
		t.Error("the user was asked about an edit that cannot apply")
	}
}

func TestEditPreviewIsBoundToTheExactChange(t *testing.T) {
	f := newFixture(t)
	f.write("f.txt", "a\nb\n")
	f.read("f.txt")
	var seen *tools.Preview
	gate := func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		seen = req.Preview
		return agent.GateDecision{Allow: false, Reason: "not now"}, nil
	}
	r := f.run(gate, "edit", edit("f.txt", "b", "B"))
	wantType(t, r, tools.RejectedByUser, "not now")
	if f.content("f.txt") != "a\nb\n" {
		t.Error("a rejected edit wrote")
	}
	if seen == nil || seen.Diff == nil || seen.Summary != "f.txt: 1 hunk, +1 −1" || !strings.HasPrefix(seen.Binding, "file:") {
		t.Fatalf("preview %+v", seen)
	}
	if seen.Diff.Old != "a\nb\n" || seen.Diff.New != "a\nB\n" || seen.Diff.Path != "f.txt" {
		t.Errorf("diff %+v", seen.Diff)
	}
	first := seen.Binding
	f.run(gate, "edit", edit("f.txt", "b", "B"))
	if seen.Binding != first {
		t.Error("the same change got a different binding")
	}
	f.run(gate, "edit", edit("f.txt", "b", "C"))
	if seen.Binding == first {
		t.Error("a different change got the same binding")
	}
	// Execute refuses a call whose approved binding is not the change it would make.
	tl := f.tool("edit")
	args, _ := tl.Spec().Decode([]byte(`{"path":"f.txt","old_string":"b","new_string":"B"}`), nil)
	_, err := tl.Execute(t.Context(), &tools.Call{Args: args, Preview: &tools.Preview{Binding: "file:other"}})
	if tools.TypeOf(err, tools.OK) != tools.Stale || f.content("f.txt") != "a\nb\n" {
		t.Errorf("mismatched binding: %v, %q", err, f.content("f.txt"))
	}
}

func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(f(i) + "\n")
	}
	return b.String()
}

func TestEditAppliesOnlyTheAcceptedHunks(t *testing.T) {
	f := newFixture(t)
	f.write("f.txt", lines(20, func(i int) string { return fmt.Sprintf("l%d", i) }))
	f.read("f.txt")
	gate := func(ctx context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		d, err := allowHunks(0, 2)(ctx, req)
		d.Approval.Note = "keep l10 as it is"
		return d, err
	}
	r := f.run(gate, "edit", map[string]any{"path": "f.txt", "edits": []any{
		map[string]any{"old_string": "l2\n", "new_string": "L2\n"},
		map[string]any{"old_string": "l10\n", "new_string": "L10\nextra\n"},
		map[string]any{"old_string": "l18\n", "new_string": "L18\n"},
	}})
	wantType(t, r, tools.OK)
	want := lines(20, func(i int) string {
		switch i {
		case 2, 18:
			return fmt.Sprintf("L%d", i)
		}
		return fmt.Sprintf("l%d", i)
	})
	if got := f.content("f.txt"); got != want {
		t.Errorf("content\n%s\nwant\n%s", got, want)
	}
	d := r.Details.(builtin.ChangeDetails)
	if len(d.Applied) != 2 || len(d.Rejected) != 1 || d.Added != 2 || d.Removed != 2 {
		t.Errorf("details %+v", d)
	}
	for _, s := range []string{
		"applied 2 of 3 hunks to f.txt",
		"rejected: " + d.Rejected[0] + " (line 10: -l10 / +L10 (+1 more line))",
		"the file now differs from what you proposed",
		"     7\tl7\n     8\tl8\n     9\tl9\n    10\tl10\n    11\tl11\n    12\tl12\n    13\tl13\n",
		"Note from the user: keep l10 as it is",
	} {
		if !strings.Contains(r.Text(), s) {
			t.Errorf("result lacks %q:\n%s", s, r.Text())
		}
	}
	if strings.Contains(r.Text(), "\tL2\n") {
		t.Errorf("result shows regions that match the proposal:\n%s", r.Text())
	}
	// The written content counts as read, so the model can go on editing.
	f.mustOK("edit", edit("f.txt", "l10\n", "ten\n"))
}

func TestEditWithNoHunkAcceptedWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.write("f.txt", "a\n")
	f.read("f.txt")
	r := f.run(allowHunks(), "edit", edit("f.txt", "a", "b"))
	wantType(t, r, tools.RejectedByUser, "accepted none of your changes")
	if f.content("f.txt") != "a\n" {
		t.Error("file changed")
	}
}

func TestEditPermissionFlagsProtectedPaths(t *testing.T) {
	f := newFixture(t)
	pm := f.tool("edit").(tools.PermissionMetadata)
	for path, protected := range map[string]bool{".git/config": true, ".vscode/tasks.json": true, "src/.envrc": true, "main.go": false} {
		args, _ := f.tool("edit").Spec().Decode([]byte(`{"path":"`+path+`","old_string":"a","new_string":"b"}`), nil)
		p := pm.Permission(&tools.Call{Args: args})
		if p.Access != tools.AccessWrite || p.Protected != protected || len(p.Paths) != 1 || p.Paths[0] != filepath.Join(f.dir, path) {
			t.Errorf("%s: %+v", path, p)
		}
	}
}

// fakeEditor is an editor with open documents: reads see its buffers, writes go through it.
type fakeEditor struct {
	docs   map[string]fsafe.Document
	writes int
}

func (e *fakeEditor) Document(abs string) (fsafe.Document, bool) {
	d, ok := e.docs[abs]
	return d, ok
}

func (e *fakeEditor) Write(_ context.Context, p fsafe.Path, data []byte, base fsafe.Stamp) (fsafe.Stamp, error) {
	d := e.docs[p.Abs()]
	if d.Version != base.Version {
		return fsafe.Stamp{}, tools.Errorf(tools.Stale, "the buffer moved on")
	}
	e.writes++
	e.docs[p.Abs()] = fsafe.Document{Version: d.Version + 1, Content: data}
	return fsafe.StampOf(fsafe.SourceEditor, d.Version+1, data), nil
}

func TestEditOfAnOpenDocumentGoesThroughTheEditor(t *testing.T) {
	ed := &fakeEditor{docs: map[string]fsafe.Document{}}
	f := newFixture(t, func(c *fixtureConfig) { c.fsOpts.Overlay, c.fsOpts.Writer = ed, ed })
	p := f.write("doc.go", "on disk\n")
	ed.docs[p] = fsafe.Document{Version: 7, Content: []byte("unsaved buffer\n")}
	r := f.mustOK("read", map[string]any{"path": "doc.go"})
	if r.Text() != "     1\tunsaved buffer\n" {
		t.Errorf("read %q", r.Text())
	}
	f.mustOK("edit", edit("doc.go", "unsaved", "edited"))
	if string(ed.docs[p].Content) != "edited buffer\n" || ed.writes != 1 || f.content("doc.go") != "on disk\n" {
		t.Errorf("buffer %q, writes %d, disk %q", ed.docs[p].Content, ed.writes, f.content("doc.go"))
	}
}

// The user edited the proposal before accepting it: the user's version is written, and the model
// reads that, with the user's changes to its proposal, so it does not undo them.
func TestEditWritesTheUsersVersionOfTheProposal(t *testing.T) {
	f := newFixture(t)
	f.write("f.txt", "a\nb\nc\n")
	f.read("f.txt")
	users := "a\nB, as the user wants it\nc\nd\n"
	gate := func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		return agent.GateDecision{Allow: true, Approval: &tools.Approval{Content: &users}}, nil
	}
	r := f.run(gate, "edit", edit("f.txt", "b\n", "B\n"))
	wantType(t, r, tools.OK)
	if got := f.content("f.txt"); got != users {
		t.Errorf("content %q, want the user's %q", got, users)
	}
	d := r.Details.(builtin.ChangeDetails)
	if !d.Edited || d.Added != 2 || d.Removed != 1 {
		t.Errorf("details %+v", d)
	}
	for _, s := range []string{
		"with the user's version: the user edited your proposed change before accepting it",
		"do not redo what they changed back",
		"-B\n+B, as the user wants it\n",
		"+d\n",
	} {
		if !strings.Contains(r.Text(), s) {
			t.Errorf("result lacks %q:\n%s", s, r.Text())
		}
	}
	// Edited back to what the file holds: nothing is written, and the model is told.
	f.read("f.txt")
	same := users
	gate = func(_ context.Context, req agent.GateRequest) (agent.GateDecision, error) {
		return agent.GateDecision{Allow: true, Approval: &tools.Approval{Content: &same}}, nil
	}
	r = f.run(gate, "edit", edit("f.txt", "c\n", "C\n"))
	wantType(t, r, tools.RejectedByUser)
	if !strings.Contains(r.Text(), "back to the file's current content; nothing was written") {
		t.Errorf("result %s", r.Text())
	}
	if got := f.content("f.txt"); got != users {
		t.Errorf("content %q changed", got)
	}
}
