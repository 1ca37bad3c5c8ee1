// Applies LSP text edits (UTF-16 positions) to a text, to show the proposed version of a file in a
// diff editor. Pure; unit tested.

import type { Position, TextEdit } from "../protocol";

/** Offsets of the line starts of `text` (\n, \r\n and lone \r end a line, as in LSP). */
export function lineStarts(text: string): number[] {
	const starts = [0];
	for (let i = 0; i < text.length; i++) {
		const c = text.charCodeAt(i);
		if (c === 13 /* \r */) {
			if (text.charCodeAt(i + 1) === 10) i++;
			starts.push(i + 1);
		} else if (c === 10) starts.push(i + 1);
	}
	return starts;
}

export function offsetAt(text: string, starts: number[], p: Position): number {
	if (p.line >= starts.length) return text.length;
	const lineStart = starts[p.line];
	const next = p.line + 1 < starts.length ? starts[p.line + 1] : text.length;
	return Math.min(lineStart + p.character, next);
}

export function applyTextEdits(text: string, edits: TextEdit[]): string {
	const starts = lineStarts(text);
	const spans = edits
		.map((e) => ({ s: offsetAt(text, starts, e.range.start), e: offsetAt(text, starts, e.range.end), t: e.newText }))
		.sort((a, b) => a.s - b.s || a.e - b.e);
	let out = "";
	let pos = 0;
	for (const sp of spans) {
		if (sp.s < pos) throw new Error("overlapping edits");
		out += text.slice(pos, sp.s) + sp.t;
		pos = sp.e;
	}
	return out + text.slice(pos);
}
