// The extension as users install it (issue #13): the platform-specific .vsix that `make vsix`
// builds (scripts/package-platform.mjs, bundling agentd and agentd-sandbox) is installed with
// `code-server --install-extension` into a fresh code-server — its own user data, extensions,
// XDG and runtime directories, no agentd.path setting anywhere, no agentd on PATH — and a turn runs
// against the fake Ollama. The daemon that answers is the bundled one: a process of this run whose
// executable is the extension's server/agentd.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

// Timeouts only bound how long a failure takes to show; a loaded machine (CI with other jobs)
// is slower, never wrong: every timeout is scaled (E2E_TIMEOUT_SCALE, default 3).
const E2E_SLOW = Number(process.env.E2E_TIMEOUT_SCALE ?? 3);

/** Our processes whose executable is `exe` (by /proc: pid → exe). */
function processesOf(exe) {
	const out = [];
	for (const pid of fs.readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
		try {
			if (fs.readlinkSync(`/proc/${pid}/exe`) === exe) out.push(Number(pid));
		} catch {
			// not ours to read, or gone
		}
	}
	return out;
}

export async function vsixScenario({ page, fake }, d) {
	const { VSIX_PLATFORM, CS_BIN, RUN, PORT, MODEL, OUT_DIR, script, startGroup, watchBrowser, palette, chatFrame, send, fakeReset, fakeRequests, waitFor, say } = d;
	if (!VSIX_PLATFORM || !fs.existsSync(VSIX_PLATFORM)) throw new Error(`the platform .vsix is missing: ${VSIX_PLATFORM} (scripts/test-e2e.sh builds it with scripts/package-platform.mjs)`);
	const root = path.join(RUN, "vsix-user");
	const data = path.join(root, "data");
	const ext = path.join(root, "ext");
	const ws = path.join(root, "ws");
	const rt = path.join(root, "rt");
	for (const dir of [path.join(data, "User"), ext, ws]) fs.mkdirSync(dir, { recursive: true });
	fs.mkdirSync(rt, { recursive: true, mode: 0o700 });
	fs.writeFileSync(path.join(ws, "notes.md"), "# Notes\n");
	// What a user sets to reach their Ollama and model; nothing about the binary.
	fs.writeFileSync(path.join(data, "User", "settings.json"), JSON.stringify({
		"security.workspace.trust.enabled": false,
		"workbench.startupEditor": "none",
		"telemetry.telemetryLevel": "off",
		"update.mode": "none",
		"extensions.autoUpdate": false,
		"extensions.autoCheckUpdates": false,
		"git.enabled": false,
		"agentd.ollamaHost": fake,
		"agentd.model": MODEL,
	}, null, 1));
	const xdg = {
		XDG_CONFIG_HOME: path.join(root, "xdg", "config"),
		XDG_DATA_HOME: path.join(root, "xdg", "data"),
		XDG_CACHE_HOME: path.join(root, "xdg", "cache"),
		XDG_STATE_HOME: path.join(root, "xdg", "state"),
		XDG_RUNTIME_DIR: rt,
		TMPDIR: path.join(root, "tmp"),
	};
	for (const dir of Object.values(xdg)) fs.mkdirSync(dir, { recursive: true });
	// No agentd on PATH: only the bundled one can answer.
	const pathDirs = (process.env.PATH ?? "").split(":").filter((p) => p && !fs.existsSync(path.join(p, "agentd")));
	const env = { ...process.env, ...xdg, PATH: pathDirs.join(":") };
	for (const k of ["PORT", "OLLAMA_HOST", "AGENTD_VSCODE_STATS", "AGENTD_VSCODE_E2E_ERRORS"]) delete env[k];
	const port = PORT + 1;
	const cfg = path.join(root, "config.yaml");
	fs.writeFileSync(cfg, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);

	const t0 = Date.now();
	execFileSync(CS_BIN, ["--config", cfg, "--user-data-dir", data, "--extensions-dir", ext, "--install-extension", VSIX_PLATFORM], { env, stdio: ["ignore", "pipe", "pipe"] });
	const installed = fs.readdirSync(ext).find((n) => n.startsWith("agentd.agentd-"));
	if (!installed) throw new Error(`the .vsix did not install into ${ext}`);
	const bundled = path.join(ext, installed, "server", "agentd");
	for (const n of ["agentd", "agentd-sandbox"]) {
		const f = path.join(ext, installed, "server", n);
		if (!fs.existsSync(f) || !(fs.statSync(f).mode & 0o100)) throw new Error(`the installed extension has no executable server/${n}`);
	}
	say(`platform .vsix installed as ${installed} (${Date.now() - t0} ms)`);
	const cs = startGroup(CS_BIN, ["--config", cfg, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check",
		"--disable-workspace-trust", "--user-data-dir", data, "--extensions-dir", ext, ws], { env }, "code-server-vsix.log");
	const context = await page.context().browser().newContext({ viewport: { width: 1300, height: 850 } });
	try {
		await waitFor("the second code-server's /healthz", async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok, 30000);
		const p = await context.newPage();
		watchBrowser(p);
		await p.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`, { waitUntil: "commit", timeout: 120000 });
		await p.locator(".monaco-workbench").waitFor({ timeout: 60000 * E2E_SLOW });
		await p.locator(".statusbar-item", { hasText: MODEL }).first().waitFor({ timeout: 60000 * E2E_SLOW });
		await palette(p, "agentd: Open Chat");
		const chat = chatFrame(p);
		await chat.locator("#input").waitFor({ timeout: 30000 * E2E_SLOW });
		await fakeReset(fake, script);
		await send(chat, "Please explain the cart in one sentence");
		await chat.locator(".item.assistant:not(.streaming) strong", { hasText: "prices" }).waitFor({ timeout: 30000 * E2E_SLOW });
		// (the fake's log starts empty at its reset)
		if (!JSON.stringify((await fakeRequests(fake)) ?? []).includes("explain the cart")) throw new Error("the turn did not reach the fake Ollama");
		const daemons = processesOf(bundled);
		if (!daemons.length) throw new Error(`no process runs the bundled daemon ${bundled}`);
		say(`the bundled daemon answers: pid ${daemons.join(", ")} runs ${bundled}`);
		await p.screenshot({ path: path.join(OUT_DIR, "28-vsix-bundled-daemon.png") });
	} finally {
		await context.close();
		try {
			process.kill(-cs.pid, "SIGTERM");
		} catch {
			// gone
		}
		// The shared daemon `agentd connect` started lives in its own session: stop it by its pid
		// (only the processes running this run's bundled binary).
		for (const pid of processesOf(bundled)) {
			try {
				process.kill(pid, "SIGTERM");
			} catch {
				// gone
			}
		}
		await waitFor("the second code-server and its daemon to exit", () => cs.exitCode !== null || cs.signalCode !== null ? processesOf(bundled).length === 0 : false, 15000);
	}
}
