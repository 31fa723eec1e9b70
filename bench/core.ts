// `npm run bench:core [-- --baseline=<ref>]`: the library's own CPU per lock, with nodes that answer at once (a
// resolved promise: no fetch, no @upstash/redis, no batching), one lock at a time and 20 with Promise.all, in five
// interleaved rounds beside the library at the baseline ref (bench/previous.ts; default HEAD), with the ratio of the
// medians. What
// is left of the in-process figures (`npm run bench:cpu`) once this is taken out is the transport's.
import { BASELINE, previousRedlock } from "./previous.ts";
import { Redlock, type RedlockNode } from "./lib.ts";

const nodes: RedlockNode[] = Array.from({ length: 5 }, (_, i) => ({
  label: `node ${i + 1}`,
  // An acquire (value, ttl, n, …) is granted ([1]); a release answers 1.
  run: (script, _keys, args) => Promise.resolve(args.length >= 3 && script.name.includes("acquire") ? [1] : 1),
}));

const Previous = await previousRedlock();
if (typeof Previous === "string") console.log(Previous);
const clients: [string, Redlock][] = [["edge-redlock", new Redlock(nodes, { warnings: false })]];
if (typeof Previous !== "string") clients.push([`at ${BASELINE}`, new Previous(nodes, { warnings: false })]);

const one = async (redlock: Redlock, n: number, tag: string) => {
  for (let i = 0; i < n; i++) await (await redlock.acquire(`${tag}:${i}`, 10_000)).release();
};
const many = async (redlock: Redlock, n: number, tag: string) => {
  for (let i = 0; i < n; i++) {
    const held = await Promise.all(Array.from({ length: 20 }, (_, k) => redlock.acquire(`${tag}:${i}:${k}`, 10_000)));
    await Promise.all(held.map((lock) => lock.release()));
  }
};
const cpu = async (run: () => Promise<void>) => {
  const before = process.cpuUsage();
  await run();
  const used = process.cpuUsage(before);
  return used.user + used.system;
};

for (const [, redlock] of clients) {
  await one(redlock, 5_000, "warm");
  await many(redlock, 500, "warm");
}
console.log("nodes answered at once (no transport); the library's CPU per cycle\n");
const ROUNDS = 5;
const samples = new Map(clients.map(([name]) => [name, { one: [] as number[], many: [] as number[] }]));
for (let round = 1; round <= ROUNDS; round++) {
  // The order alternates, so a slow spell of the machine hits both alike.
  for (const [name, redlock] of round % 2 ? clients : [...clients].reverse()) {
    const oneUs = (await cpu(() => one(redlock, 20_000, `one:${round}:${name}`))) / 20_000;
    const manyUs = (await cpu(() => many(redlock, 1_000, `many:${round}:${name}`))) / 1_000;
    const sample = samples.get(name) as { one: number[]; many: number[] };
    sample.one.push(oneUs);
    sample.many.push(manyUs);
    console.log(`round ${round}, ${name}: one lock ${oneUs.toFixed(1)} µs, 20 locks ${manyUs.toFixed(0)} µs`);
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const [current, baseline] = [...samples.values()];
if (baseline)
  console.log(
    `\nmedians, edge-redlock ÷ ${BASELINE}: one lock ${(median(current.one) / median(baseline.one)).toFixed(3)}, ` +
      `20 locks ${(median(current.many) / median(baseline.many)).toFixed(3)}`,
  );
