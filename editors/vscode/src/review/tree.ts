// The "Pending Reviews" tree: every review waiting for a decision (a file with its hunks, a
// command, another tool call), then the changes of the running reply that wait for an earlier
// change of their file (review/waiting.ts), marked as waiting, with what they wait for. The
// review manager owns the reviews; this only shows them.

import * as vscode from "vscode";
import type { ReviewRequestedParams } from "../protocol";
import { visible } from "../visible";
import { clip, commandLine } from "./format";
import type { HunkState } from "./model";
import { waitsForText, type WaitingChange } from "./waiting";

/** What the tree reads of a pending review (the manager's entry). */
export interface TreeEntry {
	params: ReviewRequestedParams;
	uri?: vscode.Uri;
	states: Map<string, HunkState>;
	reasons: Map<string, string>;
}

export type TreeNode = { reviewId: string; hunkId?: string } | { waiting: WaitingChange };

export class PendingTree implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
	private readonly emitter = new vscode.EventEmitter<TreeNode | undefined>();
	readonly onDidChangeTreeData = this.emitter.event;
	private waiting: WaitingChange[] = [];

	constructor(private readonly entries: ReadonlyMap<string, TreeEntry>) {}

	/** The reviews changed. */
	refresh(): void {
		this.emitter.fire(undefined);
	}

	/** The running reply's waiting changes changed. */
	setWaiting(w: WaitingChange[]): void {
		this.waiting = w;
		this.emitter.fire(undefined);
	}

	get waitingChanges(): readonly WaitingChange[] {
		return this.waiting;
	}

	getChildren(node?: TreeNode): TreeNode[] {
		if (!node) return [...[...this.entries.values()].map((e) => ({ reviewId: e.params.reviewId })), ...this.waiting.map((w) => ({ waiting: w }))];
		if ("waiting" in node) return [];
		const e = this.entries.get(node.reviewId);
		if (!e?.params.file || node.hunkId) return [];
		return e.params.file.hunks.map((h) => ({ reviewId: node.reviewId, hunkId: h.id }));
	}

	getTreeItem(node: TreeNode): vscode.TreeItem {
		if ("waiting" in node) return this.waitingItem(node.waiting);
		const e = this.entries.get(node.reviewId);
		if (!e) return new vscode.TreeItem("(resolved)");
		const p = e.params;
		if (!node.hunkId) {
			const file = p.file;
			const item = new vscode.TreeItem(visible(file ? file.path : p.command ? commandLine(p.command.argv) : p.label), file && file.hunks.length > 1 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
			item.id = p.reviewId;
			item.description = file ? `${pendingCount(e)}/${file.hunks.length} hunks pending` : p.kind;
			item.tooltip = `${p.label}\n${p.why}`;
			item.iconPath = new vscode.ThemeIcon(file ? (file.created ? "new-file" : file.deleted ? "trash" : "diff") : p.kind === "command" ? "terminal" : "shield");
			item.contextValue = file ? "agentdEditReview" : "agentdToolReview";
			item.command = file ? { title: "Show", command: "agentd.review.reveal", arguments: [p.reviewId] } : { title: "Answer", command: "agentd.review.ask", arguments: [p.reviewId] };
			if (file && e.uri) item.resourceUri = e.uri;
			return item;
		}
		const h = p.file!.hunks.find((x) => x.id === node.hunkId)!;
		const st = e.states.get(h.id) ?? "pending";
		const item = new vscode.TreeItem(`@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`);
		item.id = `${p.reviewId}/${h.id}`;
		const why = st === "rejected" ? e.reasons.get(h.id) : undefined;
		item.description = st === "pending" ? `+${h.added.length} −${h.removed.length}` : why ? `rejected: ${clip(why, 60)}` : st;
		item.tooltip = [...h.removed.map((l) => "- " + l), ...h.added.map((l) => "+ " + l)].join("\n");
		item.iconPath = new vscode.ThemeIcon(st === "accepted" ? "check" : st === "rejected" ? "close" : "circle-outline");
		item.contextValue = st === "pending" ? "agentdHunk" : "agentdHunkDecided";
		item.command = { title: "Go to hunk", command: "agentd.review.revealHunk", arguments: [p.reviewId, h.id] };
		return item;
	}

	/** A change not up for review yet: marked waiting; clicking it shows the review it waits for. */
	private waitingItem(w: WaitingChange): vscode.TreeItem {
		const item = new vscode.TreeItem(visible(w.label), vscode.TreeItemCollapsibleState.None);
		item.id = `waiting/${w.callId}`;
		item.description = waitsForText(w);
		item.tooltip = `${w.label}: a change of this reply, not up for review yet. It waits for the earlier change of ${w.waitsForLabel ?? "the same file"} and is shown for review, against what that one left, once it is decided.`;
		item.iconPath = new vscode.ThemeIcon("watch");
		item.contextValue = "agentdWaitingChange";
		const before = [...this.entries.values()].find((e) => e.params.callId === w.waitsFor);
		if (before) item.command = { title: "Show the change it waits for", command: "agentd.review.reveal", arguments: [before.params.reviewId] };
		return item;
	}

	dispose(): void {
		this.emitter.dispose();
	}
}

export function pendingCount(e: { states: Map<string, HunkState> }): number {
	let n = 0;
	for (const s of e.states.values()) if (s === "pending") n++;
	return n;
}
