// Per-hunk decisions shared between the VS Code windows of one machine.
//
// A file's hunks are decided one by one in the editor, and only the file's last decision goes to
// the daemon (one review/decide). Several windows attached to the same session show the same
// review: without this, a hunk accepted in one window is still offered as "Accept hunk 1/2" in the
// other, and the window that settles the file would send a decision that forgets it. Each window
// writes the hunk states of a review it changed to a small JSON file in a directory that every
// window of the same user data shares (the extension's global storage), and watches that
// directory: a change from another window is applied to the same review there. A review is
// identified by its session, review and call IDs; its file is removed once it is settled.
//
// The files only carry what a user already decided in an editor of theirs; the decision itself
// still goes through review/decide, and a malformed file is ignored.

import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

export type SharedHunkState = "pending" | "accepted" | "rejected";

/** What identifies a review across windows. */
export interface SharedReviewKey {
	sessionId: string;
	reviewId: string;
	callId: string;
}

interface Log {
	info(msg: string): void;
	warn(msg: string): void;
}

const STATES: readonly string[] = ["pending", "accepted", "rejected"];
/** Files of reviews never settled (a window that crashed) are removed after this long. */
const STALE_MS = 24 * 60 * 60 * 1000;

export class HunkSync {
	private readonly me = crypto.randomUUID();
	private watcher: fs.FSWatcher | undefined;
	/** The reviews this window shows, by file name. */
	private readonly keys = new Map<string, SharedReviewKey>();

	constructor(
		private readonly dir: string,
		private readonly log: Log,
		private readonly onRemote: (key: SharedReviewKey, states: Record<string, SharedHunkState>) => void,
	) {
		try {
			fs.mkdirSync(dir, { recursive: true });
			this.removeStale();
			this.watcher = fs.watch(dir, (_ev, name) => {
				if (name) this.changed(String(name));
			});
			this.watcher.on("error", (err) => this.log.warn(`hunk decisions of other windows: watching ${dir} failed: ${err}`));
		} catch (err) {
			this.log.warn(`hunk decisions are not shared with other windows: ${err}`);
		}
	}

	/** The states another window stored for a review (undefined when none), and watch it. */
	read(key: SharedReviewKey): Record<string, SharedHunkState> | undefined {
		const name = fileName(key);
		this.keys.set(name, key);
		return this.load(name)?.states;
	}

	/** Stores this window's hunk states of a review for the other windows. */
	publish(key: SharedReviewKey, states: Record<string, SharedHunkState>): void {
		const name = fileName(key);
		this.keys.set(name, key);
		const file = path.join(this.dir, name);
		const tmp = `${file}.${this.me}.tmp`;
		try {
			fs.writeFileSync(tmp, JSON.stringify({ from: this.me, states }));
			fs.renameSync(tmp, file);
		} catch (err) {
			this.log.warn(`hunk decisions not shared with other windows: ${err}`);
		}
	}

	/** The review is settled: forget it (any window may remove its file). */
	forget(key: SharedReviewKey): void {
		const name = fileName(key);
		this.keys.delete(name);
		fs.rm(path.join(this.dir, name), { force: true }, () => undefined);
	}

	dispose(): void {
		this.watcher?.close();
		this.watcher = undefined;
	}

	private changed(name: string): void {
		const key = this.keys.get(name);
		if (!key) return;
		const got = this.load(name);
		if (got && got.from !== this.me) this.onRemote(key, got.states);
	}

	private load(name: string): { from: string; states: Record<string, SharedHunkState> } | undefined {
		let raw: string;
		try {
			raw = fs.readFileSync(path.join(this.dir, name), "utf8");
		} catch {
			return undefined; // none yet, or removed
		}
		try {
			const v = JSON.parse(raw) as { from?: unknown; states?: unknown };
			if (typeof v.from !== "string" || !v.states || typeof v.states !== "object") return undefined;
			const states: Record<string, SharedHunkState> = {};
			for (const [id, s] of Object.entries(v.states as Record<string, unknown>)) {
				if (typeof s === "string" && STATES.includes(s)) states[id] = s as SharedHunkState;
			}
			return { from: v.from, states };
		} catch {
			return undefined; // a partial or foreign file: ignored
		}
	}

	private removeStale(): void {
		const now = Date.now();
		for (const n of fs.readdirSync(this.dir)) {
			const f = path.join(this.dir, n);
			try {
				if (now - fs.statSync(f).mtimeMs > STALE_MS) fs.rmSync(f, { force: true });
			} catch {
				// gone meanwhile
			}
		}
	}
}

/** The file of a review: a hash of its IDs (any characters, any length). */
export function fileName(key: SharedReviewKey): string {
	const h = crypto.createHash("sha256").update(JSON.stringify([key.sessionId, key.reviewId, key.callId])).digest("hex");
	return `${h.slice(0, 40)}.json`;
}
