import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileName, HunkSync, type SharedHunkState, type SharedReviewKey } from "../src/hunkSync";

const quiet = { info: () => undefined, warn: () => undefined };
const key: SharedReviewKey = { sessionId: "s-1", reviewId: "r-1", callId: "call/1" };

/** Resolves with the first remote update, or rejects naming what it waited for. */
function nextRemote(got: { key: SharedReviewKey; states: Record<string, SharedHunkState> }[], what: string): Promise<void> {
	const t0 = Date.now();
	return new Promise((resolve, reject) => {
		const tick = () => {
			if (got.length) return resolve();
			if (Date.now() - t0 > 10000) return reject(new Error(`timed out waiting for ${what}`));
			setTimeout(tick, 20);
		};
		tick();
	});
}

test("HunkSync: a hunk decided in one window reaches the other window's review, not its own", async () => {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hunksync-"));
	const atA: { key: SharedReviewKey; states: Record<string, SharedHunkState> }[] = [];
	const atB: typeof atA = [];
	const a = new HunkSync(dir, quiet, (k, states) => atA.push({ key: k, states }));
	const b = new HunkSync(dir, quiet, (k, states) => atB.push({ key: k, states }));
	try {
		assert.equal(b.read(key), undefined, "nothing shared yet");
		a.publish(key, { h1: "accepted", h2: "pending" });
		await nextRemote(atB, "window B to see window A's decision");
		assert.deepEqual(atB[0], { key, states: { h1: "accepted", h2: "pending" } });
		// A window that opens the review later reads what was decided.
		const c = new HunkSync(dir, quiet, () => undefined);
		assert.deepEqual(c.read(key), { h1: "accepted", h2: "pending" });
		c.dispose();
		// Unknown states and malformed files are ignored.
		fs.writeFileSync(path.join(dir, fileName(key)), JSON.stringify({ from: "x", states: { h1: "applied", h2: 3, h3: "rejected" } }));
		assert.deepEqual(b.read(key), { h3: "rejected" });
		fs.writeFileSync(path.join(dir, fileName(key)), "{not json");
		assert.equal(b.read(key), undefined);
		// A never hears of its own writes.
		assert.equal(atA.length, 0);
		a.forget(key);
		const t0 = Date.now();
		while (fs.existsSync(path.join(dir, fileName(key))) && Date.now() - t0 < 10000) await new Promise((r) => setTimeout(r, 20));
		assert.ok(!fs.existsSync(path.join(dir, fileName(key))), "forget removes the review's file");
	} finally {
		a.dispose();
		b.dispose();
		fs.rmSync(dir, { recursive: true, force: true });
	}
});

test("HunkSync: file names are distinct per review and safe", () => {
	const n1 = fileName({ sessionId: "s", reviewId: "r-1", callId: "c" });
	const n2 = fileName({ sessionId: "s", reviewId: "r-1", callId: "c/../x" });
	assert.notEqual(n1, n2);
	assert.match(n2, /^[0-9a-f]{40}\.json$/);
});
