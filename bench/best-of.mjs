// Shared by the Node benchmark helpers: runs `pass` once to warm up (JIT,
// file cache), then `rounds` times, and returns the shortest time in
// seconds and what the last pass returned.
export function bestOf(rounds, pass) {
  pass();
  let seconds = Infinity;
  let result;
  for (let i = 0; i < rounds; i++) {
    const t0 = process.hrtime.bigint();
    result = pass();
    seconds = Math.min(seconds, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return { seconds, result };
}
