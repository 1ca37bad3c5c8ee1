// Builds a platform-specific .vsix that bundles the daemon (`make vsix` runs it after
// `make build`): copies agentd and agentd-sandbox into server/ (where the extension looks for them,
// src/daemon/args.ts BUNDLED_DIR; agentd finds agentd-sandbox next to itself), packages with
// `vsce package --target`, lists the archive and checks that both binaries are in it, executable,
// and removes server/ again.
//
//   node scripts/package-platform.mjs [--bin DIR] [--target linux-x64]
//
// DIR defaults to the repository's bin/. The target defaults to this machine's
// (linux-x64, linux-arm64, darwin-arm64, …). Prints the .vsix path.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
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
const server = path.join(ext, "server");
const out = path.join(ext, "dist", `agentd-${target}.vsix`);

for (const n of names) {
	const f = path.join(bin, n);
	if (!fs.existsSync(f)) {
		console.error(`package-platform: ${f} is missing (run make build first)`);
		process.exit(1);
	}
}
fs.rmSync(server, { recursive: true, force: true });
fs.mkdirSync(server, { recursive: true });
try {
	for (const n of names) {
		fs.copyFileSync(path.join(bin, n), path.join(server, n));
		fs.chmodSync(path.join(server, n), 0o755);
	}
	fs.mkdirSync(path.dirname(out), { recursive: true });
	execFileSync("node", ["scripts/build.mjs", "--production"], { cwd: ext, stdio: "inherit" });
	execFileSync(path.join(ext, "node_modules", ".bin", "vsce"), ["package", "--no-dependencies", "--target", target, "--out", out], { cwd: ext, stdio: ["ignore", "inherit", "inherit"] });
} finally {
	fs.rmSync(server, { recursive: true, force: true });
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
console.log(out);
