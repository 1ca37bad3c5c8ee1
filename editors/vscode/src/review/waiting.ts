// The changes of the running reply that need a decision but are not up for review yet: a change
// of a file that waits for an earlier change of the same file (toolCall.waitsFor, docs/protocol.md
// §5), previewed and reviewed once that one has ended. The Pending Reviews view lists them beside
// the reviews, so the whole reply can be seen. Pure: no `vscode`, unit tested in node.

import type { ChatItem, ToolItem } from "../chat/model";

export interface WaitingChange {
	callId: string;
	/** The file it changes (its arguments' path), else the call's label. */
	label: string;
	/** The earlier call it waits for. */
	waitsFor: string;
	/** What that call changes, as the user reads it ("cart.go"); undefined when unknown. */
	waitsForLabel?: string;
}

/** A call's file (its arguments' path), else its label. */
function fileOf(t: ToolItem): string {
	const a = t.arguments && typeof t.arguments === "object" ? (t.arguments as Record<string, unknown>) : {};
	return typeof a.path === "string" && a.path ? a.path : t.label || t.tool;
}

/**
 * The running turn's calls that wait for an earlier one, in the model's order. None once the
 * turn has ended (a change that waited and was never proposed needs no decision any more).
 */
export function waitingChanges(s: { running: boolean; turnId?: string; items: readonly ChatItem[] }): WaitingChange[] {
	if (!s.running) return [];
	const out: WaitingChange[] = [];
	const byCall = new Map<string, ToolItem>();
	for (const it of s.items) {
		if (it.kind !== "tool" || (s.turnId !== undefined && it.turnId !== s.turnId)) continue;
		byCall.set(it.callId, it);
		if (it.status !== "pending" || !it.waitsFor) continue;
		out.push({ callId: it.callId, label: fileOf(it), waitsFor: it.waitsFor });
	}
	for (const w of out) {
		const before = byCall.get(w.waitsFor);
		if (before) w.waitsForLabel = fileOf(before);
	}
	return out;
}

/** The view's row description: "waiting for its earlier change" (of the same file, the usual case),
 * "waiting for the change of cart.go", or "waiting for an earlier change" (unknown). */
export function waitsForText(w: WaitingChange): string {
	if (!w.waitsForLabel) return "waiting for an earlier change";
	return w.waitsForLabel === w.label ? "waiting for its earlier change" : `waiting for the change of ${w.waitsForLabel}`;
}

/** Whether two lists differ (the view is refreshed only then: tool updates come often). */
export function sameWaiting(a: readonly WaitingChange[], b: readonly WaitingChange[]): boolean {
	return a.length === b.length && a.every((w, i) => w.callId === b[i].callId && w.label === b[i].label && w.waitsFor === b[i].waitsFor && w.waitsForLabel === b[i].waitsForLabel);
}
