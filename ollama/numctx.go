package ollama

// NumCtxFloor is the smallest context window ChooseNumCtx picks when the model allows it: a coding
// agent's system prompt and tool list alone take a few thousand tokens.
const NumCtxFloor = 8192

// NumCtxStep is the granularity of ChooseNumCtx: windows are multiples of it, so small changes in the
// prompt estimate between sessions give the same window (a new num_ctx reloads the model).
const NumCtxStep = 4096

// ChooseNumCtx picks the context window (num_ctx) for a session. The loop calls it once per session
// and keeps the result: changing num_ctx between requests makes Ollama reload the model.
//
// Policy:
//   - need = promptTokensEstimate + replyBudget (negative inputs count as 0); the caller includes in
//     either the room the conversation should have to grow before it is compacted;
//   - the window is need rounded up to a multiple of NumCtxStep, and at least NumCtxFloor;
//   - it is at most min(trained, configuredCap), each ignored when 0 (unknown / no cap): above the
//     trained length the server clamps anyway, and the cap is what the user's memory affords.
//
// When need exceeds that maximum, the maximum is returned: the prompt does not fit, and the caller
// must compact (a request that overflows is answered with a context_overflow error, never cut).
func ChooseNumCtx(trained, configuredCap, promptTokensEstimate, replyBudget int) int {
	limit := max(trained, 0)
	if configuredCap > 0 && (limit == 0 || configuredCap < limit) {
		limit = configuredCap
	}
	need := max(promptTokensEstimate, 0)
	if r := max(replyBudget, 0); need <= maxInt-r {
		need += r
	} else {
		need = maxInt
	}
	n := NumCtxFloor
	if need > n {
		n = need
		if rem := n % NumCtxStep; rem != 0 && n <= maxInt-NumCtxStep {
			n += NumCtxStep - rem
		}
	}
	if limit > 0 && n > limit {
		n = limit
	}
	return n
}

const maxInt = int(^uint(0) >> 1)
