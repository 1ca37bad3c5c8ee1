import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { applyTextEdits } from "../src/review/apply";
import { commandLine, relativeTo, sandboxLabel } from "../src/review/format";
import { unsupportedPlatform } from "../src/platform";
import { backoffDelay, BUNDLED_DIR, bundledDaemon, daemonCommand, missingBinaryMessage, resolveExecutable, serverArgs, withFix } from "../src/daemon/args";

test("applyTextEdits applies LSP edits (UTF-16 columns, any order, CRLF)", () => {
	const text = "a\r\nb😀c\nd\n";
	const out = applyTextEdits(text, [
		{ range: { start: { line: 2, character: 0 }, end: { line: 3, character: 0 } }, newText: "" },
		// 😀 is two UTF-16 code units: column 3 is after it.
		{ range: { start: { line: 1, character: 1 }, end: { line: 1, character: 3 } }, newText: "-" },
		{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: "top\n" },
	]);
	assert.equal(out, "top\na\r\nb-c\n");
	assert.throws(() =>
		applyTextEdits("abc", [
			{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 2 } }, newText: "" },
			{ range: { start: { line: 0, character: 1 }, end: { line: 0, character: 3 } }, newText: "" },
		]),
	);
});

test("the protocol example's edits produce the proposed file", () => {
	const lines = Array.from({ length: 62 }, (_, i) => `line${i + 1}`);
	lines[44] = "\ttotal -= discount";
	lines[59] = "\treturn total";
	const out = applyTextEdits(lines.join("\n") + "\n", [
		{ range: { start: { line: 44, character: 0 }, end: { line: 45, character: 0 } }, newText: "" },
		{ range: { start: { line: 59, character: 0 }, end: { line: 60, character: 0 } }, newText: "\treturn max(total, 0)\n" },
	]).split("\n");
	assert.equal(out.length, 62);
	assert.equal(out[44], "line46");
	assert.equal(out[58], "\treturn max(total, 0)");
});

test("commandLine shows the shell line of bash -c, and quotes other argv", () => {
	assert.equal(commandLine(["bash", "-c", "go test ./... && echo ok"]), "go test ./... && echo ok");
	assert.equal(commandLine(["/bin/sh", "-c", "ls"]), "ls");
	assert.equal(commandLine(["git", "commit", "-m", "it's done"]), "git commit -m 'it'\\''s done'");
	assert.equal(sandboxLabel("bubblewrap", false), "sandboxed, no network");
	assert.equal(sandboxLabel("", true), "NOT sandboxed, network ON");
	assert.equal(relativeTo("/home/ada/shop", "/home/ada/shop/pkg"), "pkg");
	assert.equal(relativeTo("/home/ada/shop/", "/home/ada/shop"), ".");
	assert.equal(relativeTo("/home/ada/shop", "/tmp"), "/tmp");
});

test("restart back-off doubles and is capped", () => {
	assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 50].map((n) => backoffDelay(n)), [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
});

test("the daemon is found on PATH or at a path; a missing one gets a message with the fix", () => {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentd-path-"));
	const bin = path.join(dir, "agentd");
	fs.writeFileSync(bin, "#!/bin/sh\n");
	fs.chmodSync(bin, 0o755);
	fs.writeFileSync(path.join(dir, "noexec"), "");
	try {
		assert.equal(resolveExecutable("agentd", { PATH: `/nonexistent:${dir}` }), bin);
		assert.equal(resolveExecutable(bin, { PATH: "" }), bin);
		assert.equal(resolveExecutable("~/agentd", { HOME: dir, PATH: "" }), bin);
		assert.equal(resolveExecutable("agentd", { PATH: "/nonexistent" }), undefined);
		assert.equal(resolveExecutable(path.join(dir, "noexec"), {}), undefined);
		assert.equal(resolveExecutable(dir, {}), undefined);
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
	assert.match(missingBinaryMessage("agentd"), /not found on PATH.*agentd\.path/);
	assert.match(missingBinaryMessage("/opt/x/agentd"), /not found at "\/opt\/x\/agentd".*agentd\.path/);
	assert.deepEqual(serverArgs(undefined), ["connect"]);
	assert.deepEqual(serverArgs(["serve", "--stdio"]), ["serve", "--stdio"]);
	assert.equal(withFix("Ollama is not running.", "start it with `ollama serve`"), "Ollama is not running. Fix: start it with `ollama serve`");
});

test("the bundled daemon is used only when agentd.path is not set", () => {
	const ext = fs.mkdtempSync(path.join(os.tmpdir(), "agentd-ext-"));
	try {
		assert.equal(bundledDaemon(ext), undefined, "no server/ directory: no bundled daemon");
		fs.mkdirSync(path.join(ext, BUNDLED_DIR));
		const bin = path.join(ext, BUNDLED_DIR, "agentd");
		fs.writeFileSync(bin, "#!/bin/sh\n", { mode: 0o644 });
		assert.equal(bundledDaemon(ext), undefined, "a bundled file that is not executable is not used");
		fs.chmodSync(bin, 0o755);
		assert.equal(bundledDaemon(ext), bin);
		assert.equal(daemonCommand({ path: "agentd", pathSet: false }, bin), bin);
		assert.equal(daemonCommand({ path: "/opt/agentd", pathSet: true }, bin), "/opt/agentd");
		assert.equal(daemonCommand({ path: "agentd", pathSet: false }, undefined), "agentd");
	} finally {
		fs.rmSync(ext, { recursive: true, force: true });
	}
});

test("on native Windows the extension says agentd needs WSL, and how to get there; elsewhere it runs", () => {
	const why = unsupportedPlatform("win32");
	assert.ok(why && /WSL/.test(why) && /Reopen Folder in WSL/.test(why) && /ms-vscode-remote\.remote-wsl/.test(why), why);
	for (const p of ["linux", "darwin"] as const) assert.equal(unsupportedPlatform(p), undefined, p);
});
