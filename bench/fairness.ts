// `npm run bench:fairness`: one line for every client. Clients loop acquire (maxWait 3 s) → hold 50 ms → release on
// one key of the local cluster, in mixes: fair and `fair: false` side by side, an honest crowd beside a client whose
// clock is off (−1 h, −10 s, +1 h), and a writer beside readers whose clock is an hour behind. Prints, per group, the
// grants, the give-ups and the give-up rate; below capacity (clients × (hold + 2 round trips) < maxWait) no group
// should give up more than 5 %. About 2 minutes.
import { spawnCluster } from "../dev/cluster-process.ts";
import { Redlock, type RedlockOptions } from "./lib.ts";
import { table } from "./stats.ts";

const HOLD_MS = 50;
const MAX_WAIT_MS = 3_000;
const RUN_MS = Number(process.env.FAIRNESS_RUN_MS ?? 12_000);
const TTL = 2_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const cluster = await spawnCluster({ nodes: 5 });
const nodes = cluster.nodes;
const clock = (offsetMs: number): RedlockOptions["clock"] => ({
  now: () => performance.now(),
  epoch: () => Date.now() + offsetMs,
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener(
        "abort",
        () => {
          clearTimeout(timer);
          reject(signal.reason);
        },
        { once: true },
      );
    }),
  timeout: (ms) => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DOMException("timed out", "TimeoutError")), ms);
    return { signal: controller.signal, clear: () => clearTimeout(timer) };
  },
});

interface Group {
  name: string;
  count: number;
  options?: RedlockOptions;
  read?: boolean;
}

async function mix(label: string, key: string, groups: Group[]) {
  const stop = performance.now() + RUN_MS;
  const tallies = groups.map(() => ({ grants: 0, giveUps: 0 }));
  const loops = groups.flatMap((group, g) =>
    Array.from({ length: group.count }, async () => {
      const redlock = new Redlock(nodes, { warnings: false, ...group.options });
      const rw = redlock.readWriteLock(key);
      while (performance.now() < stop) {
        try {
          const lock =
            group.read === undefined
              ? await redlock.acquire(key, TTL, { maxWait: MAX_WAIT_MS })
              : group.read
                ? await rw.acquireRead(TTL, { maxWait: MAX_WAIT_MS })
                : await rw.acquireWrite(TTL, { maxWait: MAX_WAIT_MS });
          tallies[g].grants++;
          await sleep(HOLD_MS);
          await lock.release();
        } catch {
          tallies[g].giveUps++;
        }
      }
    }),
  );
  await Promise.all(loops);
  return groups.map((group, g) => {
    const { grants, giveUps } = tallies[g];
    const rate = grants + giveUps === 0 ? 0 : giveUps / (grants + giveUps);
    return {
      mix: label,
      group: `${group.count} × ${group.name}`,
      grants,
      "grants per client": Math.round(grants / group.count),
      "give-ups": giveUps,
      "give-up rate": `${(100 * rate).toFixed(1)} %`,
    };
  });
}

const rows = [
  ...(await mix("6 fair + 6 fair:false", "fairness:mix", [
    { name: "fair", count: 6 },
    { name: "fair: false", count: 6, options: { fair: false } },
  ])),
  ...(await mix("8 fair + 1 fair:false", "fairness:one", [
    { name: "fair", count: 8 },
    { name: "fair: false", count: 1, options: { fair: false } },
  ])),
  ...(await mix("8 honest + 1 at −1 h", "fairness:behind", [
    { name: "honest", count: 8 },
    { name: "clock −1 h", count: 1, options: { clock: clock(-3_600_000) } },
  ])),
  ...(await mix("8 honest + 1 at −10 s", "fairness:behind10", [
    { name: "honest", count: 8 },
    { name: "clock −10 s", count: 1, options: { clock: clock(-10_000) } },
  ])),
  ...(await mix("8 honest + 1 at +1 h", "fairness:ahead", [
    { name: "honest", count: 8 },
    { name: "clock +1 h", count: 1, options: { clock: clock(3_600_000) } },
  ])),
  ...(await mix("2 readers at −1 h + 1 writer", "fairness:rw", [
    { name: "reader, clock −1 h", count: 2, read: true, options: { clock: clock(-3_600_000) } },
    { name: "writer", count: 1, read: false },
  ])),
];
console.log(
  `clients loop acquire (maxWait ${MAX_WAIT_MS} ms) → hold ${HOLD_MS} ms → release for ${RUN_MS / 1000} s each`,
);
const header = Object.keys(rows[0]);
console.log(
  table(
    header,
    rows.map((row) => header.map((h) => (row as Record<string, string | number>)[h])),
  ),
);
await cluster.stop();
