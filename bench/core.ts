// `npm run bench:core`: the library's own CPU per lock, with nodes that answer at once (a resolved promise: no
// fetch, no @upstash/redis, no batching), one lock at a time and 20 with Promise.all, three rounds. What is left of
// the in-process figures (`npm run bench:cpu`) once this is taken out is the transport's.
import { Redlock, type RedlockNode } from "./lib.ts";

const nodes: RedlockNode[] = Array.from({ length: 5 }, (_, i) => ({
  label: `node ${i + 1}`,
  // An acquire (value, ttl, n, …) is granted ([1]); a release answers 1.
  run: (script, _keys, args) => Promise.resolve(args.length >= 3 && script.name.includes("acquire") ? [1] : 1),
}));
const redlock = new Redlock(nodes, { warnings: false });

const one = async (n: number, tag: string) => {
  for (let i = 0; i < n; i++) await (await redlock.acquire(`${tag}:${i}`, 10_000)).release();
};
const many = async (n: number, tag: string) => {
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

await one(5_000, "warm");
await many(500, "warm");
console.log("nodes answered at once (no transport); the library's CPU per cycle\n");
for (let round = 1; round <= 3; round++) {
  const oneUs = (await cpu(() => one(20_000, `one:${round}`))) / 20_000;
  const manyUs = (await cpu(() => many(1_000, `many:${round}`))) / 1_000;
  console.log(`round ${round}: one lock ${oneUs.toFixed(1)} µs, 20 locks ${manyUs.toFixed(0)} µs`);
}
