// The pure part of the "agentd: Changes" view: rebuilding a file's pre-image from its current
// text and the turn's unified diff (checked against diffs written by GNU diff), and the words of
// an undo result.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { diffStats, mayHaveChangedFiles, parseUnifiedDiff, preImage, TurnChangeWatch, undoSummary } from "../src/review/turnmodel";

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

test("a completed call that applied files refreshes the Changes view while its turn runs; a read does not", () => {
	const done = (details?: unknown, mcp?: unknown) => ({ mcp, result: details === undefined ? {} : { details } });
	// An edit or write that applied hunks (tools/builtin ChangeDetails), and one that applied none.
	assert.equal(mayHaveChangedFiles(done({ path: "cart.go", applied: ["h1"], rejected: [], added: 1, removed: 1 })), true);
	assert.equal(mayHaveChangedFiles(done({ path: "cart.go", applied: [], rejected: ["h1"], added: 0, removed: 0 })), false);
	// A command whose layer applied a file, one that only proposed changes (decided with the call), one that changed nothing.
	assert.equal(mayHaveChangedFiles(done({ exitCode: 0, sandbox: "bwrap", changes: { applied: [{ path: "a.txt", kind: "created", type: "file" }] } })), true);
	assert.equal(mayHaveChangedFiles(done({ exitCode: 0, sandbox: "bwrap", changes: { proposed: [{ path: ".husky/pre-commit", kind: "created", type: "file" }] } })), true);
	assert.equal(mayHaveChangedFiles(done({ exitCode: 0, sandbox: "bwrap", changes: { held: [{ path: "fifo", kind: "created", type: "other" }] } })), false);
	// A command run without a layer: what it wrote is not known.
	assert.equal(mayHaveChangedFiles(done({ exitCode: 0, sandbox: "landlock" })), true);
	// An MCP server's call: its changes are not listed in its result.
	assert.equal(mayHaveChangedFiles(done(undefined, { server: "fs", tool: "write" })), true);
	// A read, a failed call without details.
	assert.equal(mayHaveChangedFiles(done({ path: "cart.go", lines: 40 })), false);
	assert.equal(mayHaveChangedFiles({}), false);
});

test("the Changes view lists the running turn again when a command that ran asks about its hooks, when a changing call completes, and when the turn ends", () => {
	const w = new TurnChangeWatch();
	const call = (status: string, extra: object = {}) => ({ callId: "c1", status, ...extra });
	// A command asked before it runs: nothing changed yet.
	assert.equal(w.update("toolCallStarted", call("pending")), false);
	assert.equal(w.update("toolCallUpdated", call("awaitingApproval")), false);
	assert.equal(w.update("toolCallUpdated", call("running")), false);
	assert.equal(w.update("textDelta"), false);
	// It ran, applied its ordinary files, and asks about a hook: the applied files are listed now
	// (the call completes only once the hook is decided).
	assert.equal(w.update("toolCallUpdated", call("awaitingApproval")), true);
	// Its second proposal asks too: listed already.
	assert.equal(w.update("toolCallUpdated", call("awaitingApproval")), false);
	assert.equal(w.update("toolCallCompleted", call("completed", { result: { details: { exitCode: 0, sandbox: "bwrap", changes: { applied: [{ path: "a.txt" }] } } } })), true);
	// A read completes: nothing to list.
	assert.equal(w.update("toolCallCompleted", { callId: "c2", status: "completed", result: { details: { path: "a.go" } } }), false);
	assert.equal(w.update("turnCompleted"), true);
});
