// Records the reference verifier's verdicts over a generated corpus.
//
//   node record-reference.mjs PATH/TO/verify.mjs < corpus.jsonl > verdicts.jsonl
//
// Each corpus line is {"id", "diff", "text"}; each output line is
// {"id", "sha256", "valid", "errors", "warnings"}: the sha256 of the text (so a
// test can tell when the generator has changed) and the sorted, distinct rule
// ids the reference reported. The text is parsed as verify.mjs's command line
// parses a file: JSON.parse of the whole text.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const verifier = process.argv[2];
if (!verifier) {
  console.error("usage: node record-reference.mjs PATH/TO/verify.mjs < corpus.jsonl");
  process.exit(2);
}
const { verifyReceipt } = await import(pathToFileURL(resolve(verifier)).href);
const ids = (list) => [...new Set(list.map((m) => m.slice(0, m.indexOf(":"))))].sort();
const out = [];
for (const line of readFileSync(0, "utf8").split("\n")) {
  if (!line) continue;
  const { id, text } = JSON.parse(line);
  const sha256 = createHash("sha256").update(text, "utf8").digest("hex");
  const r = verifyReceipt(JSON.parse(text));
  out.push(JSON.stringify({ id, sha256, valid: r.valid, errors: ids(r.errors), warnings: ids(r.warnings) }));
}
process.stdout.write(out.join("\n") + "\n");
