// The rendering model of an edit review: hunks → what the editor decorates, and per-hunk
// decisions → the one review/decide request. Pure: no `vscode`, unit tested in node.
//
// The approach (see README "How the inline review works"): the user's buffer is never touched
// before they accept. The removed lines are the real buffer lines, shown struck through on a red
// background; the proposed lines are shown as green ghost text (decoration `after` content) at the
// end of the lines they replace, or at the end of the line above an insertion. Nothing is written
// until the daemon applies the accepted hunks through workspace/applyEdit (one undo step).

import type { Decision, FileReview, Hunk } from "../protocol";

export type HunkState = "pending" | "accepted" | "rejected";

/** Where a hunk sits in the current buffer (0-based lines). */
export interface HunkAnchor {
	id: string;
	/** First removed line; for a pure insertion, the line the added lines go before. */
	start: number;
	/** Number of removed lines. */
	removed: number;
	/** The buffer was edited inside the hunk since the review arrived. */
	conflict?: boolean;
}

export function anchorsOf(file: FileReview): HunkAnchor[] {
	const edits = file.edit?.edits ?? [];
	// The edits apply every hunk, in hunk order: prefer their exact start lines when they match
	// one to one and start at a line start; else derive from the 1-based oldStart.
	const useEdits = edits.length === file.hunks.length;
	return file.hunks.map((h, i) => {
		let start = Math.max(0, h.oldStart - 1);
		if (useEdits) {
			const e = edits[i];
			if (e && e.range.start.character === 0 && Math.abs(e.range.start.line - start) <= 1) start = e.range.start.line;
		}
		return { id: h.id, start, removed: h.oldLines };
	});
}

export interface GhostText {
	line: number;
	text: string;
	/** Render before the line's text (an insertion at the top of the file), else after it. */
	before: boolean;
	hunkId: string;
}

export interface LineMark {
	line: number;
	hunkId: string;
}

export interface DecorationPlan {
	/** Lines a pending hunk removes (red, struck through). */
	removed: LineMark[];
	/** Proposed lines of pending hunks (green ghost text). */
	ghosts: GhostText[];
	/** Lines of hunks accepted locally, waiting for the other hunks' decisions. */
	accepted: LineMark[];
	/** Lines of hunks rejected locally, waiting for the other hunks' decisions. */
	rejected: LineMark[];
	/** Where each hunk's Accept / Reject lens goes. */
	lenses: { line: number; hunkId: string; state: HunkState; conflict: boolean }[];
}

export interface PlanOptions {
	lineCount: number;
	/** Longest ghost text shown on one line; the hover shows all of it. */
	maxGhost?: number;
	tabSize?: number;
}

export const LINE_JOIN = " ⏎ ";

export function planDecorations(
	hunks: Hunk[],
	anchors: HunkAnchor[],
	states: ReadonlyMap<string, HunkState>,
	opts: PlanOptions,
): DecorationPlan {
	const plan: DecorationPlan = { removed: [], ghosts: [], accepted: [], rejected: [], lenses: [] };
	const last = Math.max(0, opts.lineCount - 1);
	const max = opts.maxGhost ?? 240;
	const tab = " ".repeat(opts.tabSize ?? 4);
	const show = (lines: string[]) => clip(lines.map((l) => l.replace(/\t/g, tab)).join(LINE_JOIN), max, lines.length);
	hunks.forEach((h, i) => {
		const a = anchors[i];
		if (!a) return;
		const state = states.get(h.id) ?? "pending";
		const start = Math.min(a.start, last);
		const removedLines: number[] = [];
		for (let k = 0; k < a.removed; k++) if (a.start + k <= last) removedLines.push(a.start + k);
		const lensLine = a.removed > 0 ? start : Math.min(a.start, last);
		plan.lenses.push({ line: lensLine, hunkId: h.id, state, conflict: !!a.conflict });
		if (state === "accepted" || state === "rejected") {
			const lines = removedLines.length ? removedLines : [insertionAnchor(a, last).line];
			for (const line of lines) plan[state].push({ line, hunkId: h.id });
			return;
		}
		for (const line of removedLines) plan.removed.push({ line, hunkId: h.id });
		if (h.added.length === 0) return;
		if (removedLines.length === 0) {
			const at = insertionAnchor(a, last);
			plan.ghosts.push({ line: at.line, before: at.before, text: at.before ? show(h.added) + LINE_JOIN : LINE_JOIN + show(h.added), hunkId: h.id });
			return;
		}
		// Pair the proposed lines with the removed ones; the surplus goes on the last removed line.
		const n = removedLines.length;
		for (let k = 0; k < n && k < h.added.length; k++) {
			const rest = k === n - 1 ? h.added.slice(k) : [h.added[k]];
			plan.ghosts.push({ line: removedLines[k], before: false, text: show(rest), hunkId: h.id });
		}
	});
	return plan;
}

/** An insertion's ghost text goes at the end of the line above, or before line 0. */
function insertionAnchor(a: HunkAnchor, last: number): { line: number; before: boolean } {
	if (a.start <= 0) return { line: 0, before: true };
	return { line: Math.min(a.start - 1, last), before: false };
}

function clip(s: string, max: number, lines: number): string {
	if (s.length <= max) return s;
	return s.slice(0, max) + `… (${lines} line${lines === 1 ? "" : "s"}: hover for all)`;
}

/**
 * The review/decide decision once every hunk is decided; undefined while some are pending.
 * All accepted → accept; some → accept with the accepted IDs (the others are rejected); none →
 * reject.
 */
export function decisionFor(hunkIds: string[], states: ReadonlyMap<string, HunkState>, reason?: string): Decision | undefined {
	if (hunkIds.some((id) => (states.get(id) ?? "pending") === "pending")) return undefined;
	const accepted = hunkIds.filter((id) => states.get(id) === "accepted");
	if (accepted.length === hunkIds.length) return { type: "accept" };
	if (accepted.length > 0) return { type: "accept", hunks: accepted };
	return reason ? { type: "reject", reason } : { type: "reject" };
}

/** A text change of the buffer, in the lines before the change (like vscode's contentChanges). */
export interface LineChange {
	startLine: number;
	startChar: number;
	endLine: number;
	endChar: number;
	/** Number of line breaks in the inserted text. */
	insertedLines: number;
}

/**
 * Moves the anchors after a buffer edit: hunks below the edit shift by the lines it added or
 * removed; a hunk the edit touches is marked as a conflict (the daemon will answer `stale` if it
 * is accepted, and the model gets the new text).
 */
export function shiftAnchors(anchors: HunkAnchor[], c: LineChange): HunkAnchor[] {
	const delta = c.insertedLines - (c.endLine - c.startLine);
	return anchors.map((a) => {
		// An edit that ends before the hunk's first line, or at column 0 of it, pushes it.
		const above = c.endLine < a.start || (c.endLine === a.start && c.endChar === 0 && (c.startLine < a.start || c.startChar === 0));
		if (above) return delta ? { ...a, start: a.start + delta } : a;
		const last = a.removed > 0 ? a.start + a.removed - 1 : a.start - 1;
		if (c.startLine > last) return a; // below the hunk
		return a.conflict ? a : { ...a, conflict: true };
	});
}

/** The hunk the cursor is on, else the next pending one below it, else the first pending one. */
export function hunkAt(anchors: HunkAnchor[], states: ReadonlyMap<string, HunkState>, line: number): string | undefined {
	const pending = anchors.filter((a) => (states.get(a.id) ?? "pending") === "pending");
	for (const a of pending) {
		const end = a.start + Math.max(a.removed, 1) - 1;
		if (line >= a.start - (a.removed === 0 ? 1 : 0) && line <= end) return a.id;
	}
	const below = pending.filter((a) => a.start >= line).sort((x, y) => x.start - y.start)[0];
	return (below ?? pending[0])?.id;
}

/** Counts "+a −r" over hunks. */
export function hunkStats(hunks: Hunk[]): { added: number; removed: number } {
	let added = 0;
	let removed = 0;
	for (const h of hunks) {
		added += h.added.length;
		removed += h.removed.length;
	}
	return { added, removed };
}
