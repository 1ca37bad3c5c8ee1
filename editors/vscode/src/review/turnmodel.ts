// A turn's changes, after the fact: the pure part (no `vscode`, unit tested in node). turn/changes
// gives, per file, the unified diff from the turn's checkpoint (the pre-image) to the file's
// current content; the "agentd: Changes" view shows the pre-image beside the file, so it is
// rebuilt here from the current text and the diff.

export interface DiffHunk {
	oldStart: number;
	oldLines: number;
	newStart: number;
	newLines: number;
	/** The hunk's body lines, each with its prefix (" ", "-", "+", "\\"). */
	lines: string[];
}

const HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

/** The hunks of a unified diff of one file (the ---/+++ lines and anything before them are skipped). */
export function parseUnifiedDiff(diff: string): DiffHunk[] {
	const out: DiffHunk[] = [];
	let cur: DiffHunk | undefined;
	let oldLeft = 0;
	let newLeft = 0;
	for (const line of diff.split("\n")) {
		const m = HEADER.exec(line);
		if (m) {
			cur = { oldStart: Number(m[1]), oldLines: m[2] === undefined ? 1 : Number(m[2]), newStart: Number(m[3]), newLines: m[4] === undefined ? 1 : Number(m[4]), lines: [] };
			oldLeft = cur.oldLines;
			newLeft = cur.newLines;
			out.push(cur);
			continue;
		}
		if (!cur) continue;
		if (line.startsWith("\\")) {
			if (cur.lines.length) cur.lines.push(line);
			continue;
		}
		if (oldLeft <= 0 && newLeft <= 0) continue; // past the hunk (e.g. the final newline)
		const kind = line === "" ? " " : line[0]; // some writers drop the space of an empty context line
		const body = line === "" ? " " : line;
		if (kind === " " && oldLeft > 0 && newLeft > 0) {
			oldLeft--;
			newLeft--;
		} else if (kind === "-" && oldLeft > 0) oldLeft--;
		else if (kind === "+" && newLeft > 0) newLeft--;
		else throw new Error(`a malformed diff line in hunk @@ -${cur.oldStart},${cur.oldLines} +${cur.newStart},${cur.newLines} @@: ${JSON.stringify(line)}`);
		cur.lines.push(body);
	}
	for (const h of out) {
		const o = h.lines.filter((l) => l[0] === " " || l[0] === "-").length;
		const n = h.lines.filter((l) => l[0] === " " || l[0] === "+").length;
		if (o !== h.oldLines || n !== h.newLines) throw new Error(`hunk @@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@ is cut short`);
	}
	return out;
}

/**
 * The pre-image of a file: the diff applied backwards to the current text. Throws when the diff
 * does not match the text (a context or added line differs): the caller shows that, never a
 * wrong pre-image.
 */
export function preImage(current: string, diff: string): string {
	const hunks = parseUnifiedDiff(diff);
	if (!hunks.length) return current;
	const cur = splitLines(current);
	const out: string[] = [];
	let oldNoEol = false;
	let next = 0; // index into cur.lines
	for (const h of hunks) {
		const start = h.newLines === 0 ? h.newStart : h.newStart - 1;
		if (start < next || start > cur.lines.length) throw new Error(`hunk @@ +${h.newStart},${h.newLines} @@ is out of order or past the end of the file`);
		out.push(...cur.lines.slice(next, start));
		next = start;
		let prev = "";
		for (const l of h.lines) {
			const body = l.slice(1);
			if (l[0] === "\\") {
				if (prev === "-" || prev === " ") oldNoEol = true;
				continue;
			}
			prev = l[0];
			if (l[0] === "-") {
				out.push(body);
				continue;
			}
			if (cur.lines[next] !== body) throw new Error(`the file does not match the diff at line ${next + 1}: expected ${JSON.stringify(body)}, found ${JSON.stringify(cur.lines[next])}`);
			if (l[0] === " ") out.push(body);
			next++;
		}
	}
	out.push(...cur.lines.slice(next));
	const tail = hunks[hunks.length - 1];
	const tailEnd = tail.newLines === 0 ? tail.newStart : tail.newStart - 1 + tail.newLines;
	const touchesEnd = tailEnd >= cur.lines.length;
	const eol = touchesEnd ? !oldNoEol : cur.finalEol;
	return out.length ? out.join("\n") + (eol ? "\n" : "") : "";
}

function splitLines(text: string): { lines: string[]; finalEol: boolean } {
	if (text === "") return { lines: [], finalEol: false };
	const finalEol = text.endsWith("\n");
	const lines = (finalEol ? text.slice(0, -1) : text).split("\n");
	return { lines, finalEol };
}

/** "+a −r" of a diff. */
export function diffStats(diff: string): { added: number; removed: number } {
	let added = 0;
	let removed = 0;
	for (const h of parseUnifiedDiff(diff)) {
		for (const l of h.lines) {
			if (l[0] === "+") added++;
			else if (l[0] === "-") removed++;
		}
	}
	return { added, removed };
}

/** The words of an undo result: what was restored, and what was skipped and why. */
export function undoSummary(r: { undone: string[]; skipped: { path: string; reason: string }[] }): string {
	const parts: string[] = [];
	if (r.undone.length) parts.push(`restored ${r.undone.join(", ")}`);
	if (r.skipped.length) parts.push(`skipped ${r.skipped.map((s) => `${s.path} (${s.reason})`).join(", ")}`);
	return parts.length ? parts.join("; ") : "nothing to undo";
}

/** A turn's label in the tree: its prompt, or its id when the prompt is empty. */
export function turnLabel(t: { turnId: string; prompt: string }): string {
	const p = t.prompt.trim();
	return p || t.turnId;
}

/**
 * Whether a completed tool call may have changed files of the turn, so that the Changes view asks
 * for the session's turns again while the turn still runs (turn/list lists the running turn once
 * a change of it is checkpointed): an edit or write that applied hunks (details.applied), a
 * command whose copy-on-write layer applied or proposed changes (details.changes), a command run
 * without such a layer (details without changes: what it wrote is not known), or an MCP server's
 * call (its changes are applied with the call; its result does not list them).
 */
export function mayHaveChangedFiles(tc: { mcp?: unknown; result?: { details?: unknown } }): boolean {
	if (tc.mcp) return true;
	const d = tc.result?.details;
	if (!d || typeof d !== "object") return false;
	const o = d as { applied?: unknown; changes?: { applied?: unknown; proposed?: unknown } | null; exitCode?: unknown };
	const nonEmpty = (x: unknown) => Array.isArray(x) && x.length > 0;
	if (nonEmpty(o.applied)) return true;
	if (o.changes && typeof o.changes === "object") return nonEmpty(o.changes.applied) || nonEmpty(o.changes.proposed);
	return typeof o.exitCode === "number";
}

/**
 * When the Changes view asks for the session's turns again, from the session's updates, without
 * polling: a turn ended; a call that may have changed files completed (mayHaveChangedFiles); a
 * call that ran asks about changes it made (a command's hook, proposed for review after it ran:
 * status running → awaitingApproval), having applied its ordinary changes already, while the
 * call itself completes only once those reviews are decided.
 */
export class TurnChangeWatch {
	/** Calls of the running turn seen running (commands and MCP calls that ran). */
	private readonly ran = new Set<string>();

	/** Whether the view should list the turns again after this update. */
	update(type: string, tc?: { callId: string; status: string; mcp?: unknown; result?: { details?: unknown } }): boolean {
		if (type === "turnCompleted" || type === "turnFailed") {
			this.ran.clear();
			return true;
		}
		if (!tc || (type !== "toolCallStarted" && type !== "toolCallUpdated" && type !== "toolCallCompleted")) return false;
		if (type === "toolCallCompleted") {
			this.ran.delete(tc.callId);
			return mayHaveChangedFiles(tc);
		}
		if (tc.status === "running") this.ran.add(tc.callId);
		else if (tc.status === "awaitingApproval" && this.ran.delete(tc.callId)) return true;
		return false;
	}
}
