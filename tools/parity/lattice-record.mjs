// Reads Lattice cases ({"id", "mutation", "text"} JSON Lines, from
// `chit-corpus lattice-cases`) on standard input and writes Lattice's own
// verdict for each: {"id", "mutation", "valid"}. A packet is valid for
// Lattice when its text parses, is its canonical bytes (one trailing LF
// allowed, as Lattice stores artifacts) and validateExecutorPacket accepts it.
//
//   node lattice-record.mjs PATH/TO/Lattice < cases.jsonl
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const lattice = process.argv[2];
const load = (p) => import(pathToFileURL(resolve(join(lattice, p))).href);
const { validateExecutorPacket } = await load("src/runtime-contracts.mjs");
const { canonicalizeArtifact } = await load("src/artifact-contracts.mjs");
const out = [];
for (const line of readFileSync(0, "utf8").split("\n")) {
  if (!line) continue;
  const c = JSON.parse(line);
  let valid = false;
  try {
    const v = JSON.parse(c.text);
    const canon = canonicalizeArtifact(v);
    valid = (c.text === canon || c.text === canon + "\n") && validateExecutorPacket(v) === true;
  } catch {
    valid = false;
  }
  out.push(JSON.stringify({ id: c.id, mutation: c.mutation, valid }));
}
process.stdout.write(out.join("\n") + "\n");
