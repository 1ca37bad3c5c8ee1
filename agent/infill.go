package agent

import "time"

// InfillRequest is one fill-in-the-middle request: the text to write between Prompt (what comes
// before the cursor) and Suffix (what follows it). Inline completion in the editors uses it; the
// agent loop never does.
type InfillRequest struct {
	Prompt string
	// Suffix is the text after the cursor; empty continues Prompt.
	Suffix string
	// NumCtx is the context window, fixed by the caller so that the model is never reloaded.
	NumCtx int
	// NumPredict caps the completion, in tokens (a small model can loop without it).
	NumPredict int
	// Stop ends the completion at the first of these strings (not included).
	Stop []string
}

// InfillResponse is a completed fill-in-the-middle request.
type InfillResponse struct {
	Text string
	// DoneReason is "stop" (end of text or a stop string) or "length" (NumPredict reached).
	DoneReason string
	// PromptTokens is the prompt's size as the server counted it; Duration the server's total.
	PromptTokens int
	Duration     time.Duration
}
