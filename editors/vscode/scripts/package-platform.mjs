// Builds a platform-specific .vsix that bundles the daemon (`make vsix` runs it after
// `make build`): builds the extension, stages what the .vsix holds in a temporary directory with
// agentd and agentd-sandbox in its server/ (where the extension looks for them,
// src/daemon/args.ts BUNDLED_DIR; agentd finds agentd-sandbox next to itself), packages it with
// `vsce package --target` (failing on any vsce warning), lists the archive and checks that both
// binaries and the license are in it, the binaries executable. Staging keeps server/ out of the
// extension folder, so a concurrent `npm run package` never bundles a half-copied daemon.
//
//   node scripts/package-platform.mjs [--bin DIR] [--target linux-x64]
//
// DIR defaults to the repository's bin/. The target defaults to this machine's
// (linux-x64, linux-arm64, darwin-arm64, …). Prints the .vsix path.
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const ext = path.resolve(here, "..");
const repo = path.resolve(ext, "../..");
const args = process.argv.slice(2);
const opt = (name, def) => {
	const i = args.indexOf(name);
	return i >= 0 && args[i + 1] ? args[i + 1] : def;
};
const arch = { x64: "x64", arm64: "arm64", arm: "armhf" }[process.arch] ?? process.arch;
const target = opt("--target", `${process.platform}-${arch}`);
const bin = path.resolve(opt("--bin", path.join(repo, "bin")));
const names = ["agentd", "agentd-sandbox"];
const out = path.join(ext, "dist", `agentd-${target}.vsix`);

for (const n of names) {
	const f = path.join(bin, n);
	if (!fs.existsSync(f)) {
		console.error(`package-platform: ${f} is missing (run make build first)`);
		process.exit(1);
	}
}
fs.mkdirSync(path.dirname(out), { recursive: true });
execFileSync("node", ["scripts/build.mjs", "--production"], { cwd: ext, stdio: "inherit" });
const stage = fs.mkdtempSync(path.join(os.tmpdir(), "agentd-vsix-"));
try {
	// The files .vscodeignore lets in, copied (LICENSE is a link to the repository's).
	const manifest = JSON.parse(fs.readFileSync(path.join(ext, "package.json"), "utf8"));
	delete manifest.scripts?.["vscode:prepublish"]; // built above, from the sources that are not staged
	fs.writeFileSync(path.join(stage, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
	for (const f of [".vscodeignore", "README.md", "LICENSE", "dist/extension.js", "dist/webview.js"]) {
		fs.mkdirSync(path.dirname(path.join(stage, f)), { recursive: true });
		fs.copyFileSync(path.join(ext, f), path.join(stage, f));
	}
	fs.cpSync(path.join(ext, "media"), path.join(stage, "media"), { recursive: true, dereference: true });
	fs.mkdirSync(path.join(stage, "server"));
	for (const n of names) {
		fs.copyFileSync(path.join(bin, n), path.join(stage, "server", n));
		fs.chmodSync(path.join(stage, "server", n), 0o755);
	}
	// vsce must not warn (license, repository, …): a warning fails the build.
	const r = spawnSync(path.join(ext, "node_modules", ".bin", "vsce"), ["package", "--no-dependencies", "--target", target, "--out", out], { cwd: stage, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
	process.stderr.write(r.stdout + r.stderr);
	// (thrown, not exited: the finally removes the staging directory)
	if (r.status !== 0) throw new Error(`package-platform: vsce package failed (${r.status ?? r.signal})`);
	if (/\bWARNING\b/.test(r.stdout + r.stderr)) throw new Error("package-platform: vsce warned (see above): fix package.json or the packaged files");
} finally {
	fs.rmSync(stage, { recursive: true, force: true });
}
// The archive holds both binaries where the extension looks for them.
const listing = execFileSync("unzip", ["-Z", "-l", out], { encoding: "utf8" });
for (const n of names) {
	const line = listing.split("\n").find((l) => l.trim().endsWith(` extension/server/${n}`));
	if (!line) {
		console.error(`package-platform: ${out} does not contain extension/server/${n}:\n${listing}`);
		process.exit(1);
	}
	if (!line.startsWith("-rwx")) {
		console.error(`package-platform: extension/server/${n} is not executable in ${out}: ${line}`);
		process.exit(1);
	}
}
if (!listing.split("\n").some((l) => / extension\/LICENSE\.txt$/.test(l.trim()))) {
	console.error(`package-platform: ${out} has no LICENSE:\n${listing}`);
	process.exit(1);
}
console.log(out);
