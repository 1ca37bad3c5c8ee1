package tools

import "context"

// ChangeRecorder keeps the changes a call makes outside the pipeline's view of its paths (the
// change set of a command or an MCP call, known only once it ran) revertible, like an edit:
// the harness puts one in the context of every call, and the tool calls it around the changes
// it applies. Tools never ask through it; it only records.
type ChangeRecorder interface {
	// BeforeChange keeps the pre-images of the files at the absolute paths, durably, before any
	// of them changes. An error means they could not be kept: change nothing.
	BeforeChange(paths []string) error
	// AfterChange records what the files are now.
	AfterChange(paths []string)
}

type recorderKey struct{}

// WithChangeRecorder returns a context carrying r.
func WithChangeRecorder(ctx context.Context, r ChangeRecorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, r)
}

// ChangeRecorderFrom returns the context's recorder, or nil.
func ChangeRecorderFrom(ctx context.Context) ChangeRecorder {
	r, _ := ctx.Value(recorderKey{}).(ChangeRecorder)
	return r
}
