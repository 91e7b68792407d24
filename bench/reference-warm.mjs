// Times the reference verifier (verify.mjs) over a folder of receipts in one
// warm Node process: every file read, parsed and verified, as verify.mjs's
// command line does for one file, after a full warm-up pass.
//
//   node reference-warm.mjs PATH/TO/verify.mjs DIR [ROUNDS]
//
// Prints one line of JSON: {"files", "seconds", "per_second"} for the best round.
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { bestOf } from "./best-of.mjs";

const [verifier, dir, roundsArg] = process.argv.slice(2);
const { verifyReceipt } = await import(pathToFileURL(resolve(verifier)).href);
const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort().map((f) => join(dir, f));
const pass = () => {
  let valid = 0;
  for (const f of files) {
    let r;
    try {
      r = verifyReceipt(JSON.parse(readFileSync(f, "utf8")));
    } catch {
      continue;
    }
    if (r.valid) valid++;
  }
  return valid;
};
const { seconds: best, result: valid } = bestOf(Number(roundsArg ?? 3), pass);
console.log(JSON.stringify({ files: files.length, valid, seconds: best, per_second: files.length / best }));
