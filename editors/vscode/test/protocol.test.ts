// Checks src/protocol.ts against rpc/protocol.go (the source of truth), so the TypeScript mirror
// cannot drift: method names and directions, update kinds, decision types, scope kinds, and the
// JSON field names (and optionality) of every struct.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { DecisionType, Method, Methods, PROTOCOL_VERSION, ScopeKind, UpdateType } from "../src/protocol";

function findUp(rel: string): string {
	let dir = __dirname;
	for (;;) {
		const p = path.join(dir, rel);
		if (fs.existsSync(p)) return p;
		const up = path.dirname(dir);
		if (up === dir) throw new Error(`${rel} not found above ${__dirname}`);
		dir = up;
	}
}

const goSrc = fs.readFileSync(findUp("rpc/protocol.go"), "utf8");
const tsSrc = fs.readFileSync(findUp("src/protocol.ts"), "utf8");

function goConsts(prefix: string): Map<string, string> {
	const re = new RegExp(`^\\s*${prefix}(\\w+)\\s*=\\s*"([^"]*)"`, "gm");
	const m = new Map<string, string>();
	for (const x of goSrc.matchAll(re)) m.set(x[1], x[2]);
	return m;
}

test("protocol version matches", () => {
	const m = /const ProtocolVersion = (\d+)/.exec(goSrc);
	assert.ok(m, "ProtocolVersion not found in protocol.go");
	assert.equal(PROTOCOL_VERSION, Number(m[1]));
});

test("method names match the Go Method* constants", () => {
	const go = goConsts("Method");
	assert.ok(go.size >= 19, `parsed only ${go.size} Method constants`);
	assert.deepEqual(new Map(Object.entries(Method)), go);
});

test("method directions and kinds match rpc.Methods", () => {
	const go = goConsts("Method");
	const block = /var Methods = \[\]MethodInfo\{([\s\S]*?)\n\}/.exec(goSrc);
	assert.ok(block, "rpc.Methods not found");
	const rows = [...block[1].matchAll(/\{Method(\w+),\s*(ClientToServer|ServerToClient),\s*(true|false)\}/g)].map((r) => ({
		name: go.get(r[1]),
		direction: r[2] === "ClientToServer" ? "client→server" : "server→client",
		request: r[3] === "true",
	}));
	assert.deepEqual(
		Methods.map((m) => ({ ...m })),
		rows,
	);
});

test("update kinds match the Go Update* constants", () => {
	assert.deepEqual(new Map(Object.entries(UpdateType)), goConsts("Update"));
});

test("decision types match the Go Decision* constants", () => {
	assert.deepEqual(new Map(Object.entries(DecisionType)), goConsts("Decision"));
});

test("scope kinds match the Go Scope* constants", () => {
	assert.deepEqual(new Map(Object.entries(ScopeKind)), goConsts("Scope"));
});

interface Field {
	name: string;
	optional: boolean;
}

function goStructs(): Map<string, Field[]> {
	const out = new Map<string, Field[]>();
	for (const m of goSrc.matchAll(/^type (\w+) struct \{([\s\S]*?)^\}/gm)) {
		const fields: Field[] = [];
		for (const f of m[2].matchAll(/json:"([^",]+)(,[^"]*)?"/g)) {
			fields.push({ name: f[1], optional: (f[2] ?? "").includes("omit") });
		}
		out.set(m[1], fields);
	}
	// Empty structs: `type X struct{}`.
	for (const m of goSrc.matchAll(/^type (\w+) struct\{\}/gm)) out.set(m[1], []);
	return out;
}

function tsInterfaces(): Map<string, Field[]> {
	const out = new Map<string, Field[]>();
	for (const m of tsSrc.matchAll(/^export interface (\w+) \{([\s\S]*?)^\}/gm)) {
		const fields: Field[] = [];
		for (const f of m[2].matchAll(/^\t(\w+)(\??):/gm)) fields.push({ name: f[1], optional: f[2] === "?" });
		out.set(m[1], fields);
	}
	return out;
}

// Go structs mirrored by a TS type alias rather than an interface.
const ALIASES: Record<string, string> = {
	SessionDetachResult: "type SessionDetachResult",
	ModelListParams: "type ModelListParams",
	DaemonStatusParams: "type DaemonStatusParams",
	Decision: "type Decision",
	FileEdit: "edit: { edits: TextEdit[] }",
};

test("every Go struct has a TS mirror with the same JSON fields", () => {
	const go = goStructs();
	const ts = tsInterfaces();
	assert.ok(go.size > 40, `parsed only ${go.size} Go structs`);
	const problems: string[] = [];
	for (const [name, fields] of go) {
		if (name === "MethodInfo") continue; // documentation table, not on the wire
		if (ALIASES[name]) {
			if (!tsSrc.includes(ALIASES[name])) problems.push(`${name}: alias "${ALIASES[name]}" not in protocol.ts`);
			continue;
		}
		const t = ts.get(name);
		if (!t) {
			problems.push(`${name}: no interface in protocol.ts`);
			continue;
		}
		const key = (f: Field) => `${f.name}${f.optional ? "?" : ""}`;
		const want = fields.map(key).sort();
		const got = t.map(key).sort();
		if (want.join(",") !== got.join(",")) problems.push(`${name}: Go {${want}} vs TS {${got}}`);
	}
	assert.deepEqual(problems, []);
});

test("the Decision union covers exactly the Go decision fields", () => {
	const go = goStructs().get("Decision")!;
	const decl = /export type Decision =([\s\S]*?);\n/.exec(tsSrc)![1];
	const tsFields = new Set([...decl.matchAll(/(\w+)\??:/g)].map((m) => m[1]));
	assert.deepEqual([...tsFields].sort(), go.map((f) => f.name).sort());
});
