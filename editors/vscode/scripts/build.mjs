// Bundles the extension (node, CommonJS, `vscode` external) and the chat webview script (browser,
// IIFE) with esbuild. `--production` minifies; `--watch` rebuilds on change.
import * as esbuild from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");

const common = {
	bundle: true,
	minify: production,
	sourcemap: production ? false : "linked",
	logLevel: "info",
	absWorkingDir: root,
	legalComments: "none",
};

const configs = [
	{
		...common,
		entryPoints: ["src/extension.ts"],
		outfile: "dist/extension.js",
		platform: "node",
		format: "cjs",
		target: "node18",
		external: ["vscode"],
	},
	{
		...common,
		entryPoints: ["src/webview/main.ts"],
		outfile: "dist/webview.js",
		platform: "browser",
		format: "iife",
		target: "es2022",
	},
];

if (watch) {
	for (const c of configs) await (await esbuild.context(c)).watch();
} else {
	await Promise.all(configs.map((c) => esbuild.build(c)));
}
