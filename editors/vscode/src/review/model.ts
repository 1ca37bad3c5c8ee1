// The rendering model of an edit review: hunks → what the editor decorates, and per-hunk
// decisions → the one review/decide request. Pure: no `vscode`, unit tested in node.
//
// The approach (see README "How the inline review works"): the user's buffer is never touched
// before they accept. The removed lines are the real buffer lines, shown struck through on a red
// background; a one-line proposal is green ghost text (decoration `after` content) at the end of
// the line it replaces (or of the line above an insertion); a longer one is a block of real,
// syntax-highlighted lines right below the hunk (a comment thread, see review/manager.ts). Nothing
// is written until the daemon applies the accepted hunks through workspace/applyEdit (one undo
// step).

import type { Decision, FileReview, Hunk, HunkState as WireHunkState } from "../protocol";

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
	/** The hunk was accepted (shown subdued, marked accepted). */
	accepted?: boolean;
}

export interface LineMark {
	line: number;
	hunkId: string;
}

/**
 * A hunk whose proposed text is more than one line: shown as real lines below `afterLine` (a
 * comment thread per hunk whose body is the proposed text as a fenced code block in the file's
 * language, so it reads like code, syntax-highlighted, without hovering).
 */
export interface ProposedBlock {
	hunkId: string;
	/** The block is shown below this line (the last removed line, or the line above an insertion). */
	afterLine: number;
	lines: string[];
	state: "pending" | "accepted";
}

export interface DecorationPlan {
	/** Lines a pending hunk removes (red, struck through). */
	removed: LineMark[];
	/** One-line proposals of pending or accepted hunks (green ghost text at the end of a line). */
	ghosts: GhostText[];
	/** Multi-line proposals of pending or accepted hunks (real lines below the hunk). */
	blocks: ProposedBlock[];
	/**
	 * Lines an accepted hunk removes, waiting for the other hunks' decisions: struck through,
	 * subdued, never green (they are going away). A rejected hunk shows nothing: the buffer is
	 * what stays.
	 */
	acceptedRemoved: LineMark[];
	/** Where each hunk's Accept / Reject (or Undo) lens goes. */
	lenses: { line: number; hunkId: string; state: HunkState; conflict: boolean }[];
}

export interface PlanOptions {
	lineCount: number;
	/** Longest ghost text shown on one line; longer one-line proposals become blocks. */
	maxGhost?: number;
	tabSize?: number;
}

export const LINE_JOIN = " ⏎ ";

/** A hunk shown as ghost text: it proposes exactly one line, in place of at most one line. */
export function isOneLine(h: Hunk, removed: number, max = 120): boolean {
	return h.added.length === 1 && removed <= 1 && h.added[0].length <= max;
}

export function planDecorations(
	hunks: Hunk[],
	anchors: HunkAnchor[],
	states: ReadonlyMap<string, HunkState>,
	opts: PlanOptions,
): DecorationPlan {
	const plan: DecorationPlan = { removed: [], ghosts: [], blocks: [], acceptedRemoved: [], lenses: [] };
	const last = Math.max(0, opts.lineCount - 1);
	const max = opts.maxGhost ?? 120;
	const tab = " ".repeat(opts.tabSize ?? 4);
	hunks.forEach((h, i) => {
		const a = anchors[i];
		if (!a) return;
		const state = states.get(h.id) ?? "pending";
		const start = Math.min(a.start, last);
		const removedLines: number[] = [];
		for (let k = 0; k < a.removed; k++) if (a.start + k <= last) removedLines.push(a.start + k);
		const lensLine = a.removed > 0 ? start : Math.min(a.start, last);
		plan.lenses.push({ line: lensLine, hunkId: h.id, state, conflict: !!a.conflict });
		if (state === "rejected") return;
		const accepted = state === "accepted";
		for (const line of removedLines) (accepted ? plan.acceptedRemoved : plan.removed).push({ line, hunkId: h.id });
		if (h.added.length === 0) return;
		if (isOneLine(h, removedLines.length, max)) {
			const text = h.added[0].replace(/\t/g, tab);
			if (removedLines.length === 1) {
				plan.ghosts.push({ line: removedLines[0], before: false, text, hunkId: h.id, ...(accepted ? { accepted } : {}) });
			} else {
				const at = insertionAnchor(a, last);
				plan.ghosts.push({ line: at.line, before: at.before, text: at.before ? text + LINE_JOIN : LINE_JOIN + text, hunkId: h.id, ...(accepted ? { accepted } : {}) });
			}
			return;
		}
		const afterLine = removedLines.length ? removedLines[removedLines.length - 1] : Math.max(0, Math.min(a.start - 1, last));
		plan.blocks.push({ hunkId: h.id, afterLine, lines: h.added, state: accepted ? "accepted" : "pending" });
	});
	return plan;
}

/** An insertion's ghost text goes at the end of the line above, or before line 0. */
function insertionAnchor(a: HunkAnchor, last: number): { line: number; before: boolean } {
	if (a.start <= 0) return { line: 0, before: true };
	return { line: Math.min(a.start - 1, last), before: false };
}

/**
 * The review/decide decision once every hunk is decided; undefined while some are pending.
 * All accepted → accept; some → accept with the accepted IDs (the others are rejected); none →
 * reject.
 */
export function decisionFor(
	hunkIds: string[],
	states: ReadonlyMap<string, HunkState>,
	reason?: string,
	hunkReasons?: ReadonlyMap<string, string>,
): Decision | undefined {
	if (hunkIds.some((id) => (states.get(id) ?? "pending") === "pending")) return undefined;
	const accepted = hunkIds.filter((id) => states.get(id) === "accepted");
	if (accepted.length === hunkIds.length) return { type: "accept" };
	const hr = reasonsOfRejected(hunkIds, states, hunkReasons);
	if (accepted.length > 0) return { type: "accept", hunks: accepted, ...hr };
	return reason ? { type: "reject", reason, ...hr } : { type: "reject", ...hr };
}

/**
 * "Reject with reason…" on a file: the hunks still pending are rejected, the ones already accepted
 * stay accepted (a partial accept carries the reason); with none accepted it is a reject. The
 * reasons given to single rejected hunks go along (hunkReasons).
 */
export function rejectRestDecision(hunkIds: string[], states: ReadonlyMap<string, HunkState>, reason?: string, hunkReasons?: ReadonlyMap<string, string>): Decision {
	const accepted = hunkIds.filter((id) => states.get(id) === "accepted");
	const rest = new Map(states);
	for (const id of hunkIds) if ((rest.get(id) ?? "pending") === "pending") rest.set(id, "rejected");
	const r = { ...(reason?.trim() ? { reason: reason.trim() } : {}), ...reasonsOfRejected(hunkIds, rest, hunkReasons) };
	if (accepted.length > 0) return { type: "accept", hunks: accepted, ...r };
	return { type: "reject", ...r };
}

/** The `hunkReasons` field for the rejected hunks that have a (non-blank) reason; {} when none. */
function reasonsOfRejected(hunkIds: string[], states: ReadonlyMap<string, HunkState>, reasons?: ReadonlyMap<string, string>): { hunkReasons?: Record<string, string> } {
	const out: Record<string, string> = {};
	let n = 0;
	for (const id of hunkIds) {
		const r = reasons?.get(id)?.trim();
		if (r && states.get(id) === "rejected") {
			out[id] = r;
			n++;
		}
	}
	return n ? { hunkReasons: out } : {};
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

/** A file review's per-hunk decisions before the file is settled. */
export interface HunkDecisions {
	states: Map<string, HunkState>;
	/** The reason of a rejected hunk that has one. */
	reasons: Map<string, string>;
	/** The decided hunks, most recent last (for Undo). */
	decidedOrder: string[];
}

/** The wire form (review/hunkState) of some hunks' decisions: state, and a rejected hunk's reason. */
export function hunkStatesFor(d: HunkDecisions, ids: string[]): Record<string, WireHunkState> {
	const out: Record<string, WireHunkState> = {};
	for (const id of ids) {
		const state = d.states.get(id) ?? "pending";
		const reason = state === "rejected" ? d.reasons.get(id)?.trim() : undefined;
		out[id] = reason ? { state, reason } : { state };
	}
	return out;
}

/**
 * Takes the per-hunk decisions the daemon relays from another editor (review/hunkStates, or a
 * pending review's hunkStates): every decided hunk, so a known hunk not listed is pending again
 * (an undo). Unknown hunks and states are ignored. Returns whether anything changed.
 */
export function applyHunkStates(d: HunkDecisions, hunks: Record<string, WireHunkState> | undefined): boolean {
	let changed = false;
	for (const id of [...d.states.keys()]) {
		const got = hunks && Object.hasOwn(hunks, id) ? hunks[id] : undefined;
		const state: HunkState = got && (got.state === "accepted" || got.state === "rejected") ? got.state : "pending";
		const reason = state === "rejected" && typeof got?.reason === "string" && got.reason.trim() ? got.reason.trim() : undefined;
		if (d.states.get(id) !== state) {
			d.states.set(id, state);
			d.decidedOrder = d.decidedOrder.filter((x) => x !== id);
			if (state !== "pending") d.decidedOrder.push(id);
			changed = true;
		}
		if (d.reasons.get(id) !== reason) {
			if (reason) d.reasons.set(id, reason);
			else d.reasons.delete(id);
			changed = true;
		}
	}
	return changed;
}

/**
 * The hunk's first line in the proposed text, where the Diff view shows it. A pure insertion can
 * slide over equal lines (a blank line before or after a function); agentd aligns it as git does,
 * VS Code's diff editor puts it where the lines at its edges are least indented, the first such
 * place: the lens goes where the diff editor draws the insertion, not a row or two away.
 */
export function proposedLine(h: { newStart: number; newLines: number; oldLines?: number }, lines?: readonly string[]): number {
	if (h.newLines === 0) return h.newStart;
	const start = h.newStart - 1;
	if (!lines || h.oldLines !== 0) return start;
	const n = h.newLines;
	const indent = (i: number) => (i < 0 || i >= lines.length ? 0 : /^[ \t]*/.exec(lines[i])![0].length);
	let up = 0;
	while (up < 100 && start - up - 1 >= 0 && lines[start - up - 1] === lines[start + n - up - 1]) up++;
	let down = 0;
	while (down < 100 && start + n + down < lines.length && lines[start + down] === lines[start + n + down]) down++;
	let best = start;
	let bestScore = -Infinity;
	for (let d = -up; d <= down; d++) {
		const s = start + d;
		const e = s + n;
		// The boundary in the original text (between the lines around the insertion) and both
		// edges of the inserted block: the lower their indentation, the better.
		const score = -(indent(s - 1) + indent(e)) - (indent(s - 1) + indent(s)) - (indent(e - 1) + indent(e));
		if (score > bestScore) {
			bestScore = score;
			best = s;
		}
	}
	return best;
}
