// Times Lattice's own validator over a JSON Lines file of executor packets
// in one warm Node process: each line parsed, checked to be its canonical
// bytes (canonicalizeArtifact) and validated (validateExecutorPacket), the
// checks chit makes of one packet (X1-X5).
//
//   node lattice-reference.mjs PATH/TO/Lattice FILE.jsonl [ROUNDS]
//
// Lattice (github.com/kitepon/Lattice) is not part of this repository; give
// the path of a checkout. Prints {"packets", "valid", "seconds", "per_second"}.
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { bestOf } from "./best-of.mjs";

const [lattice, file, roundsArg] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(resolve(join(lattice, p))).href);
const { validateExecutorPacket } = await load("src/runtime-contracts.mjs");
const { canonicalizeArtifact } = await load("src/artifact-contracts.mjs");
const lines = readFileSync(file, "utf8").split("\n").filter((l) => l.length > 0);
const pass = () => {
  let valid = 0;
  for (const line of lines) {
    try {
      const v = JSON.parse(line);
      if (canonicalizeArtifact(v) === line && validateExecutorPacket(v)) valid++;
    } catch {
      // not valid
    }
  }
  return valid;
};
const { seconds: best, result: valid } = bestOf(Number(roundsArg ?? 3), pass);
console.log(JSON.stringify({ packets: lines.length, valid, seconds: best, per_second: lines.length / best }));
