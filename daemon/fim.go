package daemon

import (
	"strings"
	"unicode/utf8"

	"github.com/agentd/agentd/agent"
)

// The prompt of an inline completion: windows of the document around the cursor, sized in tokens,
// at 3.5 bytes a token (what Qwen's tokenizer makes of Go source; make bench counts them).
const (
	fimPrefixTokens = 1024
	fimSuffixTokens = 256
	fimPrefixBytes  = fimPrefixTokens * 7 / 2
	fimSuffixBytes  = fimSuffixTokens * 7 / 2
	// fimNumCtx holds both windows, the template's few tokens and the completion; it never
	// changes, so the completion model is loaded once.
	fimNumCtx = 2048
	// fimLineTokens and fimBlockTokens bound a completion: the rest of a line, or a block.
	fimLineTokens  = 48
	fimBlockTokens = 128
)

// fimRequest is the fill-in-the-middle request for text with the cursor at byte offset cursor.
//
// The prefix window starts at a line start chosen on a grid of a quarter window: while the user
// types, the start stays where it is (the prompt grows at its end only), so Ollama's prompt cache,
// which keeps the longest common prefix, reuses everything up to the cursor. It moves by a quarter
// window at a time, when the cursor has gone that far.
//
// With text after the cursor on its line, the completion ends at the line's end; at the end of a
// line it may go on to the end of a block (a blank line).
func fimRequest(text string, cursor int) *agent.InfillRequest {
	budget := fimPrefixBytes
	start := 0
	if cursor > budget {
		step := budget / 4
		start = (cursor - budget + step - 1) / step * step
		if i := strings.IndexByte(text[start:cursor], '\n'); i >= 0 {
			start += i + 1
		}
		for start < cursor && !utf8.RuneStart(text[start]) {
			start++
		}
	}
	end := len(text)
	if limit := cursor + fimSuffixBytes; end > limit {
		end = limit
		if i := strings.LastIndexByte(text[cursor:end], '\n'); i >= 0 {
			end = cursor + i + 1
		}
		for end > cursor && end < len(text) && !utf8.RuneStart(text[end]) {
			end--
		}
	}
	req := &agent.InfillRequest{Prompt: text[start:cursor], Suffix: text[cursor:end], NumCtx: fimNumCtx,
		NumPredict: fimBlockTokens, Stop: []string{"\n\n"}}
	if rest, _, _ := strings.Cut(req.Suffix, "\n"); strings.TrimSpace(rest) != "" {
		req.NumPredict, req.Stop = fimLineTokens, []string{"\n"}
	}
	return req
}

// trimDuplicate removes from the end of a completion the text that already follows the cursor:
// models often write the closing bracket that is already there, or repeat the next lines. Only
// whole lines of the suffix count (the rest of the cursor's line included), compared without
// trailing white space; a completion that is nothing but such text becomes empty.
func trimDuplicate(completion, suffix string) string {
	c := strings.TrimRight(completion, " \t\r\n")
	for k := len(suffix); k > 0; k-- {
		if k < len(suffix) && suffix[k] != '\n' {
			continue
		}
		dup := strings.TrimRight(suffix[:k], " \t\r\n")
		if strings.TrimSpace(dup) == "" {
			continue
		}
		if strings.HasSuffix(c, dup) {
			return c[:len(c)-len(dup)]
		}
	}
	return completion
}
