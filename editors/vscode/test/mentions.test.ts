import { test } from "node:test";
import assert from "node:assert/strict";
import { activeMention, findMentions, foldersOf, insertMention, pathItems, pathScore, safeRelPath } from "../src/mentions";

test("findMentions: @open, paths, folders and @#symbols, with their positions", () => {
	const text = "compare @cart.go with @src/pkg/ and @#Total, see @open";
	const got = findMentions(text).map((m) => [m.kind, m.value, m.raw, text.slice(m.start, m.end)]);
	assert.deepEqual(got, [
		["path", "cart.go", "@cart.go", "@cart.go"],
		["path", "src/pkg/", "@src/pkg/", "@src/pkg/"],
		["symbol", "Total", "@#Total", "@#Total"],
		["open", "open", "@open", "@open"],
	]);
});

test("findMentions: sentence punctuation is not part of a token; e-mail addresses and a bare @ are not mentions", () => {
	assert.deepEqual(
		findMentions("look at @cart.go. Then (@greet.go), mail a@b.com, @ alone, @#").map((m) => m.raw),
		["@cart.go", "@greet.go"],
	);
	assert.deepEqual(findMentions("first line\n@notes.md: why?").map((m) => m.value), ["notes.md"]);
});

test("activeMention: the @ being typed at the caret, and nothing once a space ends it", () => {
	assert.deepEqual(activeMention("fix @car", 8), { start: 4, query: "car" });
	assert.deepEqual(activeMention("@", 1), { start: 0, query: "" });
	assert.deepEqual(activeMention("see @#To", 8), { start: 4, query: "#To" });
	assert.deepEqual(activeMention("fix @cart.go now", 8), { start: 4, query: "car" }, "the query is what is left of the caret");
	assert.equal(activeMention("fix @cart.go now", 16), undefined);
	assert.equal(activeMention("mail a@b", 8), undefined);
	assert.equal(activeMention("", 0), undefined);
});

test("insertMention replaces the whole word at the caret and adds one space (none after a folder)", () => {
	assert.deepEqual(insertMention("fix @car", 4, 8, "@cart.go"), { text: "fix @cart.go ", caret: 13 });
	assert.deepEqual(insertMention("fix @carXX now", 4, 8, "@cart.go"), { text: "fix @cart.go now", caret: 13 });
	assert.deepEqual(insertMention("@s", 0, 2, "@src/"), { text: "@src/", caret: 5 });
	assert.deepEqual(insertMention("@#To", 0, 4, "@#Total"), { text: "@#Total ", caret: 8 });
});

test("foldersOf derives every folder of the files", () => {
	assert.deepEqual(foldersOf(["a/b/c.go", "a/d.go", "e.go"]), ["a/", "a/b/"]);
});

test("pathItems: @open first when it matches, then files by how well the name matches, folders among them", () => {
	const files = ["cart.go", "internal/cart/cart_test.go", "internal/cart/total.go", "scart.md", "greet.go"];
	const items = pathItems("car", files);
	assert.deepEqual(
		items.map((i) => `${i.kind}:${i.token}`),
		["file:@cart.go", "folder:@internal/cart/", "file:@internal/cart/cart_test.go", "file:@scart.md", "file:@internal/cart/total.go"],
	);
	assert.equal(items[0].label, "cart.go");
	assert.equal(items[2].detail, "internal/cart");
	assert.deepEqual(pathItems("op", ["open.go"]).map((i) => i.token), ["@open", "@open.go"]);
	assert.deepEqual(pathItems("", ["b/x.go", "a.go"]).map((i) => i.token), ["@open", "@a.go", "@b/", "@b/x.go"]);
	assert.deepEqual(pathItems("zzz", files), []);
	assert.equal(pathItems("", Array.from({ length: 100 }, (_, i) => `f${i}.go`), 10).length, 10, "capped");
});

test("pathScore: in-order letters match, others do not", () => {
	assert.ok(pathScore("cart.go", "crtg") !== undefined);
	assert.equal(pathScore("cart.go", "gtrc"), undefined);
});

test("safeRelPath refuses absolute paths and .. segments (the daemon confines them again)", () => {
	assert.equal(safeRelPath("src/cart.go"), "src/cart.go");
	assert.equal(safeRelPath("src/"), "src");
	for (const bad of ["/etc/passwd", "../x", "a/../../x", "a//b", "a\\b", "./a", ""]) assert.equal(safeRelPath(bad), undefined, bad);
});
