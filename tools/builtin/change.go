package builtin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentd/agentd/preview"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
)

// fileChange is what edit and write share: a change to one file is computed from the file's
// current content (derive), validated and previewed before the gate, then computed again after
// the gate against the file as it is then and committed with only the hunks the user accepted.
//
// The flow of a call:
//
//	Validate  PrepareWrite (confinement, read_first, stale, non-regular, size) + derive
//	Preview   Validate's plan (planMemo: not planned twice) + the diff, bound to canonical
//	          path + base hash + new hash
//	Execute   the same again (after the approval wait: a file changed meanwhile is stale, with
//	          its current content), the binding must match the approved one, Apply(accepted
//	          hunks), Commit (freshness re-checked under the per-file lock right before the
//	          write), and a result saying exactly what the file now contains
type fileChange struct {
	*env
	// pathOf returns the path argument of a call.
	pathOf func(args any) string
	// derive computes the new raw content from the target and the arguments. summary, when
	// not empty, says what was done ("replaced 3 occurrences").
	derive func(t *fsafe.Target, shown string, args any) (content, summary string, err error)
	// verb names the change in results ("Edited", "Wrote").
	verb string
	// memo keeps the call being prepared from being planned once per question.
	memo planMemo
}

var (
	_ tools.Validator          = (*editTool)(nil)
	_ tools.Previewer          = (*editTool)(nil)
	_ tools.PermissionMetadata = (*editTool)(nil)
	_ tools.CompatTool         = (*editTool)(nil)
	_ tools.Validator          = (*writeTool)(nil)
	_ tools.Previewer          = (*writeTool)(nil)
	_ tools.PermissionMetadata = (*writeTool)(nil)
	_ tools.CompatTool         = (*writeTool)(nil)
)

// planned is a computed change of one file.
type planned struct {
	target  *fsafe.Target
	path    string // as shown to the model
	old     string // current raw content ("" for a new file)
	new     string // proposed raw content
	summary string
}

func (c *planned) diff() *preview.Diff {
	return preview.ComputeFile(c.path, c.old, c.target.Exists, c.new)
}

// binding identifies the exact change: the canonical path, the content it was computed from
// and the content it proposes. An approval is bound to it.
func (c *planned) binding() string {
	base := "absent"
	if c.target.Exists {
		base = c.target.Base.HashHex()
	}
	sum := sha256.Sum256([]byte(c.new))
	h := sha256.Sum256([]byte(c.target.Path.Abs() + "\x00" + base + "\x00" + hex.EncodeToString(sum[:])))
	return "file:" + hex.EncodeToString(h[:])
}

// plan checks the call against the file as it is now and computes the change.
func (f *fileChange) plan(ctx context.Context, call *tools.Call) (*planned, error) {
	tg, err := f.fs.PrepareWrite(ctx, f.pathOf(call.Args))
	if err != nil {
		return nil, err
	}
	shown := f.show(tg.Path)
	content, summary, err := f.derive(tg, shown, call.Args)
	if err != nil {
		return nil, err
	}
	return &planned{target: tg, path: shown, old: string(tg.Content), new: content, summary: summary}, nil
}

func (f *fileChange) Permission(call *tools.Call) tools.Permission {
	if perm, ok := f.memo.permission(call); ok {
		return perm
	}
	return f.permission(f.pathOf(call.Args), tools.AccessWrite)
}

// Validate refuses a change that cannot be made (read_first, stale, no match, …) before the
// user is asked.
func (f *fileChange) Validate(ctx context.Context, call *tools.Call) error {
	c, err := f.plan(ctx, call)
	if err == nil {
		f.memo.putPlan(call, c)
	}
	return err
}

func (f *fileChange) Preview(ctx context.Context, call *tools.Call) (*tools.Preview, error) {
	c := f.memo.takePlan(call)
	if c == nil {
		var err error
		if c, err = f.plan(ctx, call); err != nil {
			return nil, err
		}
	}
	f.memo.putPermission(call, c.target.Path.Permission(tools.AccessWrite))
	d := c.diff()
	return &tools.Preview{Summary: d.Summary(), Diff: d, Binding: c.binding()}, nil
}

// ChangeDetails describe the outcome of edit and write for the user interface.
type ChangeDetails struct {
	Path     string   `json:"path"`
	Created  bool     `json:"created,omitzero"`
	Applied  []string `json:"applied"`
	Rejected []string `json:"rejected"`
	// Added and Removed count the lines the written change added and removed.
	Added   int `json:"added"`
	Removed int `json:"removed"`
	// Edited: the user's own version was written (they edited the proposal before accepting).
	Edited bool `json:"edited,omitzero"`
}

func (f *fileChange) Execute(ctx context.Context, call *tools.Call) (tools.Output, error) {
	c, err := f.plan(ctx, call)
	if err != nil {
		return tools.Output{}, err
	}
	if call.Preview != nil && call.Preview.Binding != "" && call.Preview.Binding != c.binding() {
		return tools.Output{}, tools.Errorf(tools.Stale,
			"%s is no longer what your change was approved against; nothing was written. Read it again and redo your change.", c.path)
	}
	// Apply the diff the user reviewed (hunk IDs are those of the approval); recompute only when
	// there is none, say outside the kernel.
	var d *preview.Diff
	if pv := call.Preview; pv != nil && pv.Diff != nil && pv.Diff.Old == c.old && pv.Diff.New == c.new && pv.Diff.Created == !c.target.Exists {
		d = pv.Diff
	} else {
		d = c.diff()
	}
	note := noteOf(call)
	if len(d.Hunks) == 0 {
		return tools.Output{Text: joinLines(fmt.Sprintf("%s already has exactly this content; nothing was written.", c.path), note),
			Details: ChangeDetails{Path: c.path, Applied: []string{}, Rejected: []string{}}}, nil
	}
	var accepted []string
	var hunkReasons map[string]string
	if call.Approval != nil {
		accepted, hunkReasons = call.Approval.Hunks, call.Approval.HunkReasons
		if u := call.Approval.Content; u != nil && *u != d.New {
			return f.writeUsers(ctx, c, d, *u, note)
		}
	}
	content, outcome, err := d.Apply(accepted)
	if err != nil {
		if errors.Is(err, preview.ErrUnknownHunk) {
			return tools.Output{}, fmt.Errorf("the approval names hunks this change does not have (%v); nothing was written", err)
		}
		return tools.Output{}, err
	}
	if len(outcome.Applied) == 0 {
		return tools.Output{}, &tools.Error{Type: tools.RejectedByUser,
			Message: joinLines(fmt.Sprintf("The user accepted none of your changes to %s; nothing was written.", c.path), note, strings.TrimSpace(tools.HunkReasonLines(d, hunkReasons))),
			Details: ChangeDetails{Path: c.path, Created: d.Created, Applied: []string{}, Rejected: outcome.Rejected}}
	}
	if _, err := f.fs.Commit(ctx, c.target, []byte(content)); err != nil {
		return tools.Output{}, err
	}
	added, removed := 0, 0
	for _, h := range d.Hunks {
		if slices.Contains(outcome.Applied, h.ID) {
			added, removed = added+h.NewLines, removed+h.OldLines
		}
	}
	details := ChangeDetails{Path: c.path, Created: d.Created, Applied: outcome.Applied, Rejected: outcome.Rejected,
		Added: added, Removed: removed}
	if details.Rejected == nil {
		details.Rejected = []string{}
	}

	var b strings.Builder
	switch {
	case d.Created:
		fmt.Fprintf(&b, "Created %s", c.path)
	default:
		fmt.Fprintf(&b, "%s %s", f.verb, c.path)
	}
	if c.summary != "" && len(outcome.Rejected) == 0 {
		fmt.Fprintf(&b, " (%s)", c.summary)
	}
	fmt.Fprintf(&b, ": +%d −%d lines.\n%s.\n", added, removed, outcome.Describe(d))
	b.WriteString(tools.HunkReasonLines(d, hunkReasons))
	if len(outcome.Rejected) > 0 {
		b.WriteString("The user accepted only part of your change, so the file now differs from what you proposed. Its current content where it differs (line numbers as in the file now):\n")
		b.WriteString(regions(c.path, content, d.New))
	}
	if note != "" {
		b.WriteString(note + "\n")
	}
	return tools.Output{Text: b.String(), Details: details}, nil
}

// writeUsers writes the user's own version of the file (they edited the proposal before
// accepting) and tells the model that, with where it differs from what it proposed, so that its
// next step builds on the user's text instead of undoing it.
func (f *fileChange) writeUsers(ctx context.Context, c *planned, d *preview.Diff, content, note string) (tools.Output, error) {
	if content == c.old && c.target.Exists {
		return tools.Output{}, &tools.Error{Type: tools.RejectedByUser,
			Message: joinLines(fmt.Sprintf("The user edited your proposed change to %s back to the file's current content; nothing was written.", c.path), note),
			Details: ChangeDetails{Path: c.path, Applied: []string{}, Rejected: []string{}, Edited: true}}
	}
	if _, err := f.fs.Commit(ctx, c.target, []byte(content)); err != nil {
		return tools.Output{}, err
	}
	added, removed := preview.ComputeFile(c.path, c.old, c.target.Exists, content).Stats()
	var b strings.Builder
	verb := f.verb
	if d.Created {
		verb = "Created"
	}
	fmt.Fprintf(&b, "%s %s with the user's version: the user edited your proposed change before accepting it (+%d −%d lines against the file before).\n", verb, c.path, added, removed)
	b.WriteString("Keep the user's changes: do not redo what they changed back. The user's changes to your proposal (- yours, + the user's):\n")
	b.WriteString(preview.Compute(c.path, d.New, content).Unified(2))
	b.WriteString("Where the file now differs from what you proposed (line numbers as in the file now):\n")
	b.WriteString(regions(c.path, content, d.New))
	if note != "" {
		b.WriteString(note + "\n")
	}
	return tools.Output{Text: b.String(), Details: ChangeDetails{Path: c.path, Created: d.Created, Applied: []string{}, Rejected: []string{},
		Added: added, Removed: removed, Edited: true}}, nil
}

// Lines of context shown around each difference, and the most lines regions shows.
const (
	regionContext  = 3
	regionMaxLines = 120
)

// regions shows, numbered like read, the parts of the written content that differ from the
// proposed content, with context.
func regions(path, written, proposed string) string {
	d := preview.Compute(path, written, proposed)
	text, _ := fsafe.Normalize(written)
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	type span struct{ from, to int } // 1-based, inclusive
	var spans []span
	for _, h := range d.Hunks {
		from := h.OldStart - regionContext
		to := h.OldStart + max(h.OldLines, 1) - 1 + regionContext
		if h.OldLines == 0 {
			to = h.OldStart + regionContext - 1
		}
		s := span{max(from, 1), min(to, len(lines))}
		if s.from > s.to {
			continue
		}
		if n := len(spans); n > 0 && s.from <= spans[n-1].to+1 {
			spans[n-1].to = max(spans[n-1].to, s.to)
			continue
		}
		spans = append(spans, s)
	}
	var b strings.Builder
	shown := 0
	width := max(len(strconv.Itoa(len(lines))), 6)
	for i, s := range spans {
		if i > 0 {
			b.WriteString("   ...\n")
		}
		for n := s.from; n <= s.to; n++ {
			if shown == regionMaxLines {
				b.WriteString("   ... (more differences not shown; read the file to see them)\n")
				return b.String()
			}
			fmt.Fprintf(&b, "%*d\t%s\n", width, n, lines[n-1])
			shown++
		}
	}
	if len(spans) == 0 {
		b.WriteString("   (the file is empty)\n")
	}
	return b.String()
}

// joinLines joins the non-empty lines.
func joinLines(lines ...string) string {
	var out []string
	for _, l := range lines {
		if l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// lf turns the "\r\n" line breaks a model may send into "\n", the form changes are matched and
// computed in.
func lf(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }
