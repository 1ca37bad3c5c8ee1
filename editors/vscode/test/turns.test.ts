// The pure part of the "agentd: Changes" view: rebuilding a file's pre-image from its current
// text and the turn's unified diff (checked against diffs written by GNU diff), and the words of
// an undo result.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { diffStats, parseUnifiedDiff, preImage, undoSummary } from "../src/review/turnmodel";

function gnuDiff(before: string, after: string): string {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentd-turns-"));
	try {
		fs.writeFileSync(path.join(dir, "a"), before);
		fs.writeFileSync(path.join(dir, "b"), after);
		try {
			execFileSync("diff", ["-u", "a", "b"], { cwd: dir, encoding: "utf8" });
			return "";
		} catch (err) {
			const e = err as { status?: number; stdout?: string };
			if (e.status !== 1) throw err;
			return e.stdout ?? "";
		}
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
}

const BASE = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";

const cases: [string, string, string][] = [
	["one line changed", BASE, BASE.replace("line 5\n", "line five\n")],
	["two hunks", BASE, BASE.replace("line 2\n", "").replace("line 25\n", "line 25\nnew a\nnew b\n")],
	["insertion at the top", BASE, "first\n" + BASE],
	["deletion at the end", BASE, BASE.replace("line 29\nline 30\n", "")],
	["created file", "", "hello\nworld\n"],
	["deleted file", "hello\nworld\n", ""],
	["no final newline added", "a\nb", "a\nb\n"],
	["no final newline removed", "a\nb\n", "a\nb"],
	["no final newline in both, last line changed", "a\nb", "a\nc"],
	["an empty line changed", "x\n\ny\n", "x\nz\ny\n"],
	["everything replaced", "a\nb\nc\n", "d\ne\n"],
];

for (const [name, before, after] of cases) {
	test(`preImage rebuilds the pre-image: ${name}`, () => {
		const diff = gnuDiff(before, after);
		assert.notEqual(diff, "", "the fixture has no change");
		assert.equal(preImage(after, diff), before);
	});
}

test("preImage of an empty diff is the text", () => {
	assert.equal(preImage("a\n", ""), "a\n");
});

test("preImage refuses a diff that does not match the text", () => {
	const diff = gnuDiff(BASE, BASE.replace("line 5\n", "line five\n"));
	assert.throws(() => preImage(BASE.replace("line five", "line 5").replace("line 6", "line six"), diff), /does not match the diff at line/);
});

test("a hunk cut short is an error, not a guess", () => {
	assert.throws(() => parseUnifiedDiff("@@ -1,3 +1,3 @@\n a\n-b\n"), /cut short/);
});

test("diffStats counts added and removed lines", () => {
	const diff = gnuDiff(BASE, BASE.replace("line 2\n", "").replace("line 25\n", "line 25\nnew a\nnew b\n"));
	assert.deepEqual(diffStats(diff), { added: 2, removed: 1 });
});

test("undoSummary names what was restored and what was skipped, with the reason", () => {
	assert.equal(
		undoSummary({ undone: ["cart.go"], skipped: [{ path: "greet.go", reason: "changed since the turn" }] }),
		"restored cart.go; skipped greet.go (changed since the turn)",
	);
	assert.equal(undoSummary({ undone: [], skipped: [] }), "nothing to undo");
});
