// The editor's diagnostics after an edit, with a real language server: the fixture extension
// (test/fixtures/gopls-client) runs gopls through vscode-languageclient; the model's edit
// introduces a type error; agentd asks the extension for the file's diagnostics
// (document/diagnostics, src/diagnostics.ts), and the model's next request carries the new error
// with its line, but not the error that was there before.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

// Timeouts only bound how long a failure takes to show; a loaded machine (CI with other jobs)
// is slower, never wrong: every timeout is scaled (E2E_TIMEOUT_SCALE, default 3).
const E2E_SLOW = Number(process.env.E2E_TIMEOUT_SCALE ?? 3);

const CALC = "package shop\n\nfunc add(a, b int) int {\n\treturn a + b\n}\n\nfunc other() {\n\tunused := 1\n}\n";

/** Builds the fixture extension's .vsix (vscode-languageclient bundled by esbuild) into dir. */
export function buildFixture(extDir, outDir) {
	const src = path.join(extDir, "test", "fixtures", "gopls-client");
	const work = path.join(outDir, "gopls-client");
	fs.rmSync(work, { recursive: true, force: true });
	fs.mkdirSync(path.join(work, "dist"), { recursive: true });
	fs.copyFileSync(path.join(src, "package.json"), path.join(work, "package.json"));
	fs.writeFileSync(path.join(work, "LICENSE"), "MIT (test fixture)\n");
	execFileSync(path.join(extDir, "node_modules", ".bin", "esbuild"), [path.join(src, "extension.js"), "--bundle", "--platform=node",
		"--format=cjs", "--external:vscode", `--outfile=${path.join(work, "dist", "extension.js")}`], { cwd: extDir, stdio: ["ignore", "pipe", "pipe"] });
	const vsix = path.join(outDir, "gopls-client.vsix");
	execFileSync(path.join(extDir, "node_modules", ".bin", "vsce"), ["package", "--no-dependencies", "--allow-missing-repository", "--skip-license", "--out", vsix], { cwd: work, stdio: ["ignore", "pipe", "pipe"] });
	return vsix;
}

const call = (name, args) => ({ toolCalls: [{ name, arguments: args }] });
const script = (models) => ({
	models,
	turns: [
		{ name: "read", when: { lastUserContains: "add a bonus" }, reply: call("read", { path: "calc.go" }) },
		{ name: "edit", when: { lastUserContains: "add a bonus", lastRole: "tool", lastContains: "package shop" },
			reply: call("edit", { path: "calc.go", old_string: "\treturn a + b\n", new_string: "\treturn a + b + bonus\n" }) },
		{ name: "done", when: { lastUserContains: "add a bonus", lastRole: "tool" }, reply: { text: "Added the bonus." } },
		{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
	],
});

export async function diagnosticsScenario({ page, chat, fake }, h) {
	const { WS, models, palette, openFile, newSession, send, fakeReset, fakeRequests, waitFor, lens, say } = h;
	const file = path.join(WS, "calc.go");
	fs.writeFileSync(file, CALC);
	try {
		await openFile(page, "calc.go");
		// gopls is up when the error already in the file is underlined in the editor.
		await waitFor("gopls to report the existing error (an error squiggle in calc.go)", async () => (await page.locator(".squiggly-error").count()) > 0, 90000);
		await fakeReset(fake, script(models));
		await newSession(chat);
		await send(chat, "Please add a bonus to add in calc.go");
		await lens(page, "Accept all").first().waitFor({ timeout: 30000 * E2E_SLOW });
		await lens(page, "Accept all").first().click();
		await chat.locator(".item.assistant", { hasText: "Added the bonus." }).waitFor({ timeout: 30000 * E2E_SLOW });
		const tools = (await fakeRequests(fake)).flatMap((r) => (r.body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content ?? "")));
		const edit = tools.findLast((t) => t.includes("calc.go") && !t.includes("package shop"));
		say("edit result:", JSON.stringify(edit));
		if (!edit || !edit.includes("calc.go:4: undefined: bonus")) throw new Error(`the edit's result lacks "calc.go:4: undefined: bonus":\n${edit}`);
		if (edit.includes("declared and not used")) throw new Error(`the error that was there before is repeated:\n${edit}`);
	} finally {
		fs.rmSync(file, { force: true });
		await palette(page, "View: Close All Editors");
	}
}
