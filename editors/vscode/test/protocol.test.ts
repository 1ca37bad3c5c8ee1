// Checks src/protocol.ts against rpc/protocol.json, which is generated from the Go protocol table
// (package rpc, the source of truth) by reflection, so the TypeScript mirror cannot drift:
// method names, directions and kinds, the request type map, the enums (update kinds, decision
// types, scope kinds, statuses, review kinds and outcomes, approval modes), and for every wire
// type the JSON field names, their optionality and their JSON types.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { APPROVAL_MODES, ContextKind, DecisionType, Method, Methods, PROTOCOL_VERSION, ScopeKind, UpdateType } from "../src/protocol";

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

interface JsonMethod {
	name: string;
	direction: "client→server" | "server→client";
	kind: "request" | "notification";
	params: string;
	result: string;
	lsp: boolean;
}
interface JsonEnum {
	name: string;
	fields: string[];
	values: { name: string; value: string | number }[];
}
interface JsonField {
	name: string;
	type: string;
	optional: boolean;
	enum?: string;
}
interface JsonType {
	name: string;
	package: string;
	fields: JsonField[];
}
interface ProtocolJson {
	protocolVersion: number;
	methods: JsonMethod[];
	embedded: string[];
	enums: JsonEnum[];
	types: JsonType[];
}

const proto: ProtocolJson = JSON.parse(fs.readFileSync(findUp("rpc/protocol.json"), "utf8"));
const tsSrc = fs.readFileSync(findUp("src/protocol.ts"), "utf8");
const agentdMethods = proto.methods.filter((m) => !m.lsp);
const types = new Map(proto.types.map((t) => [t.name, t]));

function enumOf(name: string): JsonEnum {
	const e = proto.enums.find((x) => x.name === name);
	assert.ok(e, `enum ${name} not in protocol.json`);
	return e;
}
function enumObject(name: string): Map<string, string | number> {
	return new Map(enumOf(name).values.map((v) => [v.name, v.value]));
}
function enumValues(name: string): string[] {
	return enumOf(name)
		.values.map((v) => String(v.value))
		.sort();
}

test("protocol.json is the whole protocol", () => {
	assert.ok(agentdMethods.length >= 19, `only ${agentdMethods.length} agentd methods`);
	assert.ok(proto.types.length > 40, `only ${proto.types.length} types`);
});

test("protocol version matches", () => {
	assert.equal(PROTOCOL_VERSION, proto.protocolVersion);
});

test("method names match the table's agentd methods", () => {
	assert.deepEqual(Object.values(Method).sort(), agentdMethods.map((m) => m.name).sort());
});

test("method directions and kinds match the table", () => {
	assert.deepEqual(
		Methods.map((m) => ({ ...m })),
		agentdMethods.map((m) => ({ name: m.name, direction: m.direction, request: m.kind === "request" })),
	);
});

test("RequestTypes names the table's params and result types", () => {
	const block = /export interface RequestTypes \{([\s\S]*?)\n\}/.exec(tsSrc);
	assert.ok(block, "RequestTypes not found in protocol.ts");
	const ts = [...block[1].matchAll(/^\t"([^"]+)": \[(\w+), (\w+)\];/gm)].map((m) => `${m[1]}: ${m[2]} -> ${m[3]}`);
	const want = agentdMethods
		.filter((m) => m.direction === "client→server" && m.kind === "request")
		.map((m) => `${m.name}: ${m.params} -> ${m.result}`);
	assert.deepEqual(ts.sort(), want.sort());
});

test("update kinds, decision types and scope kinds match the enums", () => {
	assert.deepEqual(new Map(Object.entries(UpdateType)), enumObject("UpdateType"));
	assert.deepEqual(new Map(Object.entries(DecisionType)), enumObject("Decision"));
	assert.deepEqual(new Map(Object.entries(ScopeKind)), enumObject("Scope"));
	assert.deepEqual(new Map(Object.entries(ContextKind)), enumObject("Context"));
	assert.deepEqual([...APPROVAL_MODES].sort(), enumValues("Mode"));
});

// ---- TypeScript declarations, read from the source (types do not exist at run time) ----

interface TsField {
	name: string;
	optional: boolean;
	type: string;
}

function tsInterfaces(): Map<string, TsField[]> {
	const out = new Map<string, TsField[]>();
	for (const m of tsSrc.matchAll(/^export interface (\w+) \{([\s\S]*?)^\}/gm)) {
		const fields: TsField[] = [];
		for (const f of m[2].matchAll(/^\t(\w+)(\??): (.+);$/gm)) fields.push({ name: f[1], optional: f[2] === "?", type: f[3] });
		out.set(m[1], fields);
	}
	return out;
}

function tsAliases(): Map<string, string> {
	const out = new Map<string, string>();
	for (const m of tsSrc.matchAll(/^export type (\w+) =([\s\S]*?);\n/gm)) out.set(m[1], m[2].trim());
	return out;
}

const interfaces = tsInterfaces();
const aliases = tsAliases();

/** Splits a type at its top-level "|". */
function unionParts(t: string): string[] {
	const parts: string[] = [];
	let depth = 0;
	let cur = "";
	for (const ch of t) {
		if ("({[<".includes(ch)) depth++;
		if (")}]>".includes(ch)) depth--;
		if (ch === "|" && depth === 0) {
			parts.push(cur.trim());
			cur = "";
		} else cur += ch;
	}
	parts.push(cur.trim());
	return parts.filter((p) => p !== "");
}

/** The string literals a TS type admits (through aliases), or null when it is not a string type. */
function stringLiterals(t: string): string[] | null {
	const lits: string[] = [];
	for (const p of unionParts(t)) {
		if (/^"[^"]*"$/.test(p)) lits.push(p.slice(1, -1));
		else if (p === "string" || p.includes("typeof ")) continue;
		else if (aliases.has(p)) {
			const inner = stringLiterals(aliases.get(p)!);
			if (inner === null) return null;
			lits.push(...inner);
		} else return null;
	}
	return lits;
}

/** Compares a TS type with a JSON type of protocol.json; returns the problems. */
function checkType(where: string, ts: string, json: string): string[] {
	if (json.endsWith("[]")) {
		if (!ts.endsWith("[]")) return [`${where}: TS ${ts}, JSON ${json}`];
		return checkType(where, ts.slice(0, -2), json.slice(0, -2));
	}
	switch (json) {
		case "string":
			return stringLiterals(ts) === null ? [`${where}: TS ${ts} is not a string type`] : [];
		case "number":
		case "boolean":
			return ts === json ? [] : [`${where}: TS ${ts}, JSON ${json}`];
		case "any":
			return ts === "unknown" ? [] : [`${where}: TS ${ts}, JSON any (raw JSON): use unknown`];
	}
	if (ts.startsWith("{")) {
		// An inline object: its fields must be the JSON type's.
		const fields = [...ts.matchAll(/(\w+)(\??): ([^;}]+)/g)].map((m) => ({ name: m[1], optional: m[2] === "?", type: m[3].trim() }));
		return checkFields(`${where} (inline ${json})`, fields, json);
	}
	return ts === json ? [] : [`${where}: TS ${ts}, JSON ${json}`];
}

function checkFields(where: string, ts: TsField[], typeName: string): string[] {
	const jt = types.get(typeName);
	if (!jt) return [`${where}: ${typeName} not in protocol.json`];
	const problems: string[] = [];
	const key = (f: { name: string; optional: boolean }) => `${f.name}${f.optional ? "?" : ""}`;
	const want = jt.fields.map(key).sort();
	const got = ts.map(key).sort();
	if (want.join(",") !== got.join(",")) problems.push(`${where}: JSON {${want}} vs TS {${got}}`);
	for (const jf of jt.fields) {
		const tf = ts.find((f) => f.name === jf.name);
		if (!tf) continue;
		problems.push(...checkType(`${where}.${jf.name}`, tf.type, jf.type));
		// A TS union of literals for an enum field must list exactly the enum's values.
		const lits = jf.enum ? stringLiterals(tf.type) : null;
		if (jf.enum && lits && lits.length > 0 && lits.sort().join(",") !== enumValues(jf.enum).join(",")) {
			problems.push(`${where}.${jf.name}: TS literals {${lits}} vs enum ${jf.enum} {${enumValues(jf.enum)}}`);
		}
	}
	return problems;
}

/** The types the TS mirror must have: those reachable from agentd's methods and the embedded ones. */
function mirroredTypes(): string[] {
	const out = new Set<string>();
	const visit = (name: string) => {
		const base = name.replace(/(\[\])+$/, "");
		const t = types.get(base);
		if (!t || out.has(base)) return;
		out.add(base);
		for (const f of t.fields) visit(f.type);
	};
	for (const m of agentdMethods) {
		if (m.params) visit(m.params);
		if (m.result) visit(m.result);
	}
	proto.embedded.forEach(visit);
	return [...out];
}

test("every wire type has a TS mirror with the same JSON fields, optionality and types", () => {
	const names = mirroredTypes();
	assert.ok(names.length > 40, `only ${names.length} types reachable from agentd's methods`);
	const problems: string[] = [];
	for (const name of names) {
		const iface = interfaces.get(name);
		if (iface) {
			problems.push(...checkFields(name, iface, name));
			continue;
		}
		const alias = aliases.get(name);
		if (alias === "Record<string, never>") {
			if (types.get(name)!.fields.length > 0) problems.push(`${name}: an empty TS type, but JSON has fields`);
			continue;
		}
		if (alias !== undefined || name === "FileEdit") continue; // a union (Decision) or inlined (FileEdit): checked below
		problems.push(`${name}: no interface or type in protocol.ts`);
	}
	assert.deepEqual(problems, []);
});

test("FileEdit is inlined in FileReview with its JSON fields", () => {
	const edit = interfaces.get("FileReview")?.find((f) => f.name === "edit");
	assert.ok(edit, "FileReview.edit not found");
	assert.deepEqual(checkType("FileReview.edit", edit.type, "FileEdit"), []);
});

test("the Decision union covers exactly the JSON decision fields and types", () => {
	const decl = aliases.get("Decision");
	assert.ok(decl, "type Decision not found");
	const tsFields = new Set([...decl.matchAll(/(\w+)\??:/g)].map((m) => m[1]));
	assert.deepEqual([...tsFields].sort(), types.get("Decision")!.fields.map((f) => f.name).sort());
	const tsTypes = [...decl.matchAll(/type: "(\w+)"/g)].map((m) => m[1]).sort();
	assert.deepEqual(tsTypes, enumValues("Decision"));
});

test("the checker sees a drift (self-test)", () => {
	// A field with the wrong optionality, a wrong type, a missing field, a literal union that
	// misses an enum value: each must be reported.
	const status = types.get("ToolCallInfo")!.fields.find((f) => f.name === "status")!;
	assert.equal(status.enum, "Status");
	assert.notDeepEqual(checkFields("X", [{ name: "callId", optional: true, type: "string" }], "ToolCallInfo"), []);
	assert.notDeepEqual(checkType("X.elapsedMs", "string", "number"), []);
	assert.notDeepEqual(checkType("X.hunks", "Hunk", "Hunk[]"), []);
	const full = interfaces.get("ToolCallInfo")!.map((f) => (f.name === "status" ? { ...f, type: '"pending" | "running" | string' } : f));
	assert.ok(checkFields("ToolCallInfo", full, "ToolCallInfo").some((p) => p.includes("enum Status")));
});
