package tools

import (
	"maps"
	"slices"
	"strings"

	"github.com/agentd/agentd/preview"
)

// HunkReasonLines tells the model why the user rejected hunks of a file change: one line per
// hunk that has a reason, in the order of the diff's hunks ("Why the user rejected hunk
// h1a2b3c4d: …"). A reason for an ID the diff does not have is still told, after the others (the
// front end validated the IDs; the user's words are never dropped). "" when there is none.
func HunkReasonLines(d *preview.Diff, reasons map[string]string) string {
	if len(reasons) == 0 {
		return ""
	}
	var ids []string
	if d != nil {
		for _, h := range d.Hunks {
			if _, ok := reasons[h.ID]; ok {
				ids = append(ids, h.ID)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(reasons)) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	var b strings.Builder
	for _, id := range ids {
		r := strings.Join(strings.Fields(reasons[id]), " ")
		if r == "" {
			continue
		}
		b.WriteString("Why the user rejected hunk " + id + ": " + r + "\n")
	}
	return b.String()
}

// RejectionReason is the reason a rejected file change gives the model: the user's reason for the
// whole change (may be empty), then, when some hunks have their own reason, which hunks there
// were (with where they would have gone) and each one's reason.
func RejectionReason(reason string, pv *Preview, reasons map[string]string) string {
	reason = strings.TrimSpace(reason)
	if len(reasons) == 0 {
		return reason
	}
	var d *preview.Diff
	if pv != nil {
		d = pv.Diff
	}
	var b strings.Builder
	if reason != "" {
		b.WriteString(reason + "\n")
	}
	if d != nil {
		rejected := make([]string, 0, len(d.Hunks))
		for _, h := range d.Hunks {
			rejected = append(rejected, h.ID)
		}
		b.WriteString(preview.Outcome{Rejected: rejected}.Describe(d) + ".\n")
	}
	b.WriteString(HunkReasonLines(d, reasons))
	return strings.TrimRight(b.String(), "\n")
}
