// `npm run bench:waiting`: what waiting in line costs, fair (woken) against fair: false (retries), on the local
// five-node cluster in one run: an uncontended cycle; one waiter behind a holder that releases, or behind a
// `using()` holder that returns, after 3 s; 16 clients in a steady loop; an outage of 3 of 5 nodes; a dead
// waiter at the head of the line; lost wakeups. Writes its figures under `waiting` in bench/results.json.
//
// Counting. HTTP requests: the bridges' `received` counters (every request, 503s included); one client's share
// by the origins it sends to (each waiter talks to the nodes through links of its own), checked against the
// bridges' totals. Commands, two ways: "1/EVAL" counts each plain command, each pipeline member, each
// EVAL/EVALSHA and each SUBSCRIBE once (the bridges' `commands` counters); "+ in scripts" adds every
// redis.call() a script made, from the redis-servers' INFO commandstats, as Upstash's own cost tables count a
// script (docs/PERFORMANCE.md, "Waiting: requests and commands"). Pub/Sub deliveries are reported apart.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { Redis as IORedis } from "ioredis";
import { spawnCluster } from "../dev/cluster-process.ts";
import { bridgesOf } from "./bridges.ts";
import { steady, type Counters } from "./fair-contention.ts";
import { edgeRedlockImpl, nodeRedlockImpl, upstashLockImpl, type Impl, type ImplOptions } from "./impls.ts";
import { CLAIM_MS, FAIR_ACQUIRE, Redlock, lineKey, waiterTicket, type RedlockOptions } from "./lib.ts";
import { BASELINE, previousRedlock } from "./previous.ts";
import { percentile, round, table } from "./stats.ts";

/** The library's defaults, spelled out for the implementations of bench/impls.ts. */
const OPTIONS: ImplOptions = { nodeTimeout: 500, retryDelay: 200, retryJitter: 100 };
const TTL = 10_000;
const HOLD_MS = 3_000;
/** A waiter's maxWait: the default retryCount (10) would end a fair: false wait after about 2 s, before the release. */
const WAIT_MS = 10_000;
const UNCONTENDED_CYCLES = 40;
const STEADY_MS = 15_000;
/** The lost-wakeup holder: short, so the waiter's fallback (the holder's expiry) comes within the bound. */
const LOST_TTL = 4_000;
const LOST_RELEASE_MS = 1_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const started = performance.now();
const loadAtStart = loadavg()[0];

// Every request this process sends, by origin and kind: a waiter's share is what went to its links.
const sent = new Map<string, { requests: number; streams: number }>();
const realFetch = globalThis.fetch;
globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
  const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
  const tally = sent.get(url.origin) ?? { requests: 0, streams: 0 };
  tally.requests++;
  if (url.pathname.startsWith("/subscribe")) tally.streams++;
  sent.set(url.origin, tally);
  return realFetch(input, init);
}) as typeof fetch;

const Previous = await previousRedlock();
if (typeof Previous === "string") process.stdout.write(`${Previous}\n`);
const cluster = await spawnCluster({ nodes: 5, tcpProxy: true });
const nodes = cluster.nodes;
const bridges = bridgesOf(nodes);
const admins = bridges.admins;
const direct = nodes.map((n) => new IORedis(n.redisUrl));

type Row = Record<string, number | string | undefined | Record<string, number>>;
const scenarios: Record<string, Record<string, Row>> = {};
const record = (scenario: string, impl: string, row: Row) => {
  scenarios[scenario] ??= {};
  scenarios[scenario][impl] = row;
};
const checks: string[] = [];

const MODES = [
  { key: "edge-redlock", label: "edge-redlock (fair)", fair: true },
  { key: "edge-redlock-random", label: "edge-redlock fair:false", fair: false },
] as const;

/** A Redlock of its own whose requests go through links of its own: what it sent can be told apart. */
let linked = 0;
async function linkedClient(options: RedlockOptions = {}) {
  const name = `waiting-${linked++}`;
  const urls = await Promise.all(admins.map((a) => a.addLink(name)));
  const origins = urls.map((url) => new URL(url).origin);
  const redlock = new Redlock(
    urls.map((url, i) => ({ url, token: nodes[i].token })),
    { warnings: false, ...options },
  );
  const sentSoFar = () =>
    origins.reduce(
      (sum, origin) => ({
        requests: sum.requests + (sent.get(origin)?.requests ?? 0),
        streams: sum.streams + (sent.get(origin)?.streams ?? 0),
      }),
      { requests: 0, streams: 0 },
    );
  return { redlock, sent: sentSoFar };
}

/** Commands that are not a lock's work: the bench's INFO, connection set-up, subscriptions, the scripts themselves. */
const NOT_INNER = new Set(["info", "eval", "evalsha", "eval_ro", "evalsha_ro", "subscribe", "unsubscribe", "ping"]);
const isInner = (name: string) =>
  !NOT_INNER.has(name) && !/^(script|client|command|config|hello|select|auth|quit)\b/.test(name);
const SCRIPT_OR_STREAM = new Set(["eval", "evalsha", "eval_ro", "evalsha_ro", "subscribe", "script"]);

/** Calls per command name, summed over the five redis-servers. */
async function commandStats(): Promise<Map<string, number>> {
  const infos = await Promise.all(direct.map((r) => r.info("commandstats")));
  const calls = new Map<string, number>();
  for (const info of infos)
    for (const [, name, n] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
      calls.set(name, (calls.get(name) ?? 0) + Number(n));
  return calls;
}

interface Measured {
  http?: number;
  /** Commands counted one per plain command, pipeline member, EVAL/EVALSHA and SUBSCRIBE. */
  perEval: number;
  /** The same plus every redis.call() inside the scripts. */
  inScripts: number;
  deliveries?: number;
  /** The calls inside scripts, per command name. */
  calls: Record<string, number>;
}

/** Starts counting on every node; `stop` waits for the stragglers, then reads the counters. */
async function meter(tcp: boolean) {
  await bridges.settle();
  await bridges.resetCounters();
  const before = await commandStats();
  return {
    async stop(): Promise<Measured> {
      await bridges.settle();
      const states = await Promise.all(admins.map((a) => a.state()));
      const after = await commandStats();
      const delta = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
      const names = [...after.keys()];
      const bridgeCommands = new Map<string, number>();
      for (const s of states)
        for (const [name, n] of Object.entries(s.counters.commands))
          bridgeCommands.set(name, (bridgeCommands.get(name) ?? 0) + n);
      // Plain commands the bridges ran for the clients: redis-server counts them among the others.
      const plain = [...bridgeCommands].filter(([name]) => !SCRIPT_OR_STREAM.has(name)).reduce((s, [, n]) => s + n, 0);
      const inner = names.filter(isInner).reduce((s, name) => s + delta(name), 0) - (tcp ? 0 : plain);
      const calls = Object.fromEntries(
        names
          .filter(isInner)
          .map((name) => [name, delta(name) - (tcp ? 0 : (bridgeCommands.get(name) ?? 0))] as const)
          .filter(([, n]) => n > 0),
      );
      const perEval = tcp
        ? ["eval", "evalsha", "eval_ro", "evalsha_ro"].reduce((s, name) => s + delta(name), 0)
        : [...bridgeCommands.values()].reduce((s, n) => s + n, 0);
      return {
        http: tcp ? undefined : states.reduce((s, st) => s + st.counters.received, 0),
        perEval,
        inScripts: perEval + inner,
        deliveries: tcp ? undefined : states.reduce((s, st) => s + st.counters.messages, 0),
        calls,
      };
    },
  };
}

/** The bridges' total since the last reset against what this process counted for `clients`. */
async function check(row: string, clients: { sent(): { requests: number } }[], from: number[]): Promise<void> {
  const counted = clients.reduce((s, c, i) => s + c.sent().requests - from[i], 0);
  const total = await bridges.received();
  if (counted !== total) checks.push(`${row}: the bridges received ${total} requests, the clients counted ${counted}`);
}

// 1. Uncontended acquire+release, one at a time.
let roundMs = Number.NaN;
async function uncontended(): Promise<void> {
  const upstashLock = upstashLockImpl(nodes, OPTIONS);
  const nodeRedlock = nodeRedlockImpl(nodes, OPTIONS);
  // edge-redlock with its default retries: each acquisition may wait, so it joins the line (the fair scripts).
  const contenders: { key: string; tcp: boolean; acquire(k: string): Promise<{ release(): Promise<unknown> }> }[] = [
    ...MODES.map((m) => {
      const redlock = new Redlock(nodes, { fair: m.fair, warnings: false });
      return { key: m.key, tcp: false, acquire: (k: string) => redlock.acquire(k, TTL) };
    }),
    // The library at the baseline ref (bench/previous.ts, `--baseline=<ref>`): what a cycle cost before.
    ...(typeof Previous === "string"
      ? []
      : [
          (() => {
            const redlock = new Previous(nodes, { warnings: false });
            return { key: "edge-redlock-previous", tcp: false, acquire: (k: string) => redlock.acquire(k, TTL) };
          })(),
        ]),
    { key: "upstash-lock", tcp: false, acquire: (k: string) => upstashLock.acquire(k, TTL) },
    { key: "node-redlock", tcp: true, acquire: (k: string) => nodeRedlock.acquire(k, TTL) },
  ];
  const edgeAcquires: number[] = [];
  for (const { key, tcp, acquire } of contenders) {
    for (let i = 0; i < 30; i++) await (await acquire(`warm:${key}:${i}`)).release();
    const acquires: number[] = [];
    const cycles: number[] = [];
    const counting = await meter(tcp);
    for (let i = 0; i < UNCONTENDED_CYCLES; i++) {
      const t = performance.now();
      const held = await acquire(`uncontended:${key}:${i}`);
      acquires.push(performance.now() - t);
      await held.release();
      cycles.push(performance.now() - t);
    }
    const m = await counting.stop();
    if (MODES.some((m) => m.key === key)) edgeAcquires.push(...acquires);
    record("uncontended", key, {
      httpPerCycle: m.http === undefined ? undefined : m.http / UNCONTENDED_CYCLES,
      commandsPerCycle: m.perEval / UNCONTENDED_CYCLES,
      commandsInScriptsPerCycle: m.inScripts / UNCONTENDED_CYCLES,
      acquireP50Ms: percentile(acquires, 50),
      cycleP50Ms: percentile(cycles, 50),
    });
  }
  await Promise.all([upstashLock.close(), nodeRedlock.close()]);
  // One round to every node: the uncontended acquire of both modes (they send the same scripts).
  roundMs = percentile(edgeAcquires, 50);
}

// 2–3. One waiter behind a holder that releases, or whose using() routine returns, after 3 s.
async function behindHolder(fair: boolean, holding: "release" | "using"): Promise<Row> {
  const key = `behind:${holding}:${fair ? "fair" : "random"}`;
  const holder = await linkedClient();
  const waiter = await linkedClient({ fair });
  await bridges.settle();
  await bridges.resetCounters();
  const from = [holder.sent().requests, waiter.sent().requests];
  let releasedAt = 0;
  let releaseDoneAt = 0;
  let holderDone: Promise<unknown>;
  if (holding === "release") {
    const lock = await holder.redlock.acquire(key, TTL);
    holderDone = (async () => {
      await sleep(HOLD_MS);
      releasedAt = performance.now();
      await lock.release();
      releaseDoneAt = performance.now();
    })();
  } else {
    let isHeld!: () => void;
    const held = new Promise<void>((resolve) => (isHeld = resolve));
    holderDone = holder.redlock
      .using(key, TTL, async () => {
        isHeld();
        await sleep(HOLD_MS);
        releasedAt = performance.now();
      })
      .then(() => (releaseDoneAt = performance.now()));
    await held;
  }
  const before = waiter.sent();
  const lock = await waiter.redlock.acquire(key, TTL, { maxWait: WAIT_MS });
  const grantedAt = performance.now();
  const after = waiter.sent();
  await holderDone;
  await lock.release();
  await check(`behind ${holding} (${fair ? "fair" : "fair:false"})`, [holder, waiter], from);
  const holderRequests = holder.sent().requests - from[0];
  const handoverMs = grantedAt - releasedAt;
  // The holder's release is a round to every node after the same 3 s of quiet as the waiter's; on this machine the
  // first requests after a quiet spell take 2–3 times a warm round (see docs/PERFORMANCE.md).
  const holderReleaseMs = releaseDoneAt - releasedAt;
  return {
    waiterRequests: after.requests - before.requests,
    streams: after.streams - before.streams,
    attempts: lock.attempts,
    holderRequests,
    handoverMs,
    roundMs,
    handoverRounds: handoverMs / roundMs,
    holderReleaseMs,
    handoverPerHolderRelease: handoverMs / holderReleaseMs,
  };
}

// 4. Steady: 16 clients loop acquire (maxWait 3 s, ttl 2 s) → hold 50 ms → release, for 15 s each.
async function steadyRows(): Promise<void> {
  let last: Measured | undefined;
  const counters: Counters = {
    async start(impl) {
      const counting = await meter(impl.tcp === true);
      return {
        async stop() {
          last = await counting.stop();
          return { http: last.http, commands: last.perEval };
        },
      };
    },
  };
  const makers: [string, () => Impl][] = [
    ...MODES.map(
      (m) =>
        [m.key, () => edgeRedlockImpl(nodes, OPTIONS, m.key, { fair: m.fair, warnings: false })] as [
          string,
          () => Impl,
        ],
    ),
    ["upstash-lock", () => upstashLockImpl(nodes, OPTIONS)],
    ["node-redlock", () => nodeRedlockImpl(nodes, OPTIONS)],
  ];
  for (const [key, make] of makers) {
    const r = await steady(make, `steady:${key}`, roundMs, STEADY_MS, counters);
    const grants = r.grantsPerSec * (STEADY_MS / 1000);
    const m = last as Measured;
    record("steady", key, {
      grantsPerSec: r.grantsPerSec,
      handoverLimitPerSec: r.handoverLimitPerSec,
      vsHandover: r.vsHandover,
      giveUps: r.giveUps,
      overlaps: r.overlaps,
      jain: r.jain,
      httpRequestsPerGrant: r.httpRequestsPerGrant,
      commandsPerGrant: m.perEval / Math.max(1, grants),
      commandsInScriptsPerGrant: m.inScripts / Math.max(1, grants),
      deliveriesPerGrant: m.deliveries === undefined ? undefined : m.deliveries / Math.max(1, grants),
      callsInScriptsPerGrant: Object.fromEntries(
        Object.entries(m.calls).map(([name, n]) => [name, round(n / Math.max(1, grants), 2)]),
      ),
    });
    await sleep(200);
  }
}

// 5. Outage: 3 of 5 nodes answer 503; one acquire with default options per mode, both at once.
async function outage(): Promise<void> {
  const clients = await Promise.all(MODES.map((m) => linkedClient({ fair: m.fair })));
  await bridges.settle();
  await bridges.resetCounters();
  const from = clients.map((c) => c.sent().requests);
  await Promise.all([2, 3, 4].map((i) => admins[i].faults({ status: 503 })));
  try {
    await Promise.all(
      MODES.map(async (m, i) => {
        const t = performance.now();
        let attempts = 0;
        let reason = "held";
        try {
          const lock = await clients[i].redlock.acquire(`outage:${m.key}`, TTL);
          await lock.release();
        } catch (error) {
          const failure = error as { attempts?: unknown[]; reason?: string };
          attempts = failure.attempts?.length ?? 0;
          reason = failure.reason ?? String(error);
        }
        const ms = performance.now() - t;
        // Its leaving the line goes out after the failure, unawaited: let it land.
        await sleep(300);
        record("outage", m.key, { requests: clients[i].sent().requests - from[i], attempts, reason, ms });
      }),
    );
  } finally {
    await bridges.clearFaults();
  }
  await check("outage", clients, from);
}

// 6. A dead waiter at the head of the line: a ticket enqueued with FAIR_ACQUIRE whose waiter never comes back.
async function deadWaiter(fair: boolean): Promise<Row> {
  const key = `dead:${fair ? "fair" : "random"}`;
  const holder = await linkedClient();
  const lock = await holder.redlock.acquire(key, TTL);
  // The dead one's claim window is its kind's: 200 ms woken, retryDelay + retryJitter + nodeTimeout without.
  const claim = fair ? CLAIM_MS : OPTIONS.retryDelay + OPTIONS.retryJitter + OPTIONS.nodeTimeout;
  const ticket = waiterTicket(Date.now()) + String(claim).padStart(5, "0");
  const replies = await Promise.all(
    nodes.map(async (node) => {
      const res = await fetch(node.url, {
        method: "POST",
        headers: { authorization: `Bearer ${node.token}` },
        body: JSON.stringify([
          "EVAL",
          FAIR_ACQUIRE.lua,
          "2",
          key,
          lineKey(key),
          "dead-waiter",
          String(TTL),
          "1",
          ticket,
          String(WAIT_MS + 2_000),
          "1",
          "0",
        ]),
      });
      return ((await res.json()) as { result: unknown }).result;
    }),
  );
  if (!replies.every((r) => Array.isArray(r) && r[0] === 0)) throw new Error(`dead waiter not queued: ${replies}`);
  const waiter = await linkedClient({ fair });
  const pending = waiter.redlock.acquire(key, TTL, { maxWait: WAIT_MS });
  await sleep(500);
  const releasedAt = performance.now();
  await lock.release();
  const granted = await pending;
  const heldUpMs = performance.now() - releasedAt;
  await granted.release();
  return { heldUpMs, claimMs: claim };
}

// 7. Lost wakeups: every node drops every message; the waiter is served at the holder's expiry.
async function lostWakeup(fair: boolean): Promise<Row> {
  const key = `lost:${fair ? "fair" : "random"}`;
  const holder = await linkedClient();
  const waiter = await linkedClient({ fair });
  await bridges.resetCounters();
  const t0 = performance.now();
  const lock = await holder.redlock.acquire(key, LOST_TTL);
  const expiresAt = t0 + LOST_TTL;
  const pending = waiter.redlock.acquire(key, TTL, { maxWait: WAIT_MS });
  await sleep(500);
  await Promise.all(admins.map((a) => a.faults({ dropMessages: 1_000 })));
  let granted!: Awaited<typeof pending>;
  let grantedAt = Number.NaN;
  let releasedAt = Number.NaN;
  try {
    await sleep(Math.max(0, t0 + LOST_RELEASE_MS - performance.now()));
    releasedAt = performance.now();
    await lock.release();
    granted = await pending;
    grantedAt = performance.now();
  } finally {
    await Promise.all(admins.map((a) => a.faults({ dropMessages: 0 })));
  }
  await granted.release();
  const states = await Promise.all(admins.map((a) => a.state()));
  return {
    pastReleaseMs: grantedAt - releasedAt,
    pastExpiryMs: grantedAt - expiresAt,
    dropped: states.reduce((s, st) => s + st.counters.droppedMessages, 0),
  };
}

const timings: Record<string, number> = {};
const timed = async (name: string, run: () => Promise<void>) => {
  const t = performance.now();
  await run();
  timings[name] = round((performance.now() - t) / 1000, 1);
};
try {
  await timed("uncontended", uncontended);
  await timed("behind-holder", async () => {
    for (const m of MODES) record("behind-holder", m.key, await behindHolder(m.fair, "release"));
  });
  await timed("behind-using", async () => {
    for (const m of MODES) record("behind-using", m.key, await behindHolder(m.fair, "using"));
  });
  await timed("steady", steadyRows);
  await timed("outage", outage);
  await timed("dead-waiter", async () => {
    for (const m of MODES) {
      const row = await deadWaiter(m.fair);
      const live = scenarios["behind-holder"][m.key].handoverMs as number;
      record("dead-waiter", m.key, { ...row, liveHandoverMs: live, extraMs: (row.heldUpMs as number) - live });
    }
  });
  await timed("lost-wakeup", async () => {
    for (const m of MODES) record("lost-wakeup", m.key, await lostWakeup(m.fair));
  });
} finally {
  for (const r of direct) r.disconnect();
  await cluster.stop();
}

const seconds = round((performance.now() - started) / 1000, 1);
const loadAtEnd = loadavg()[0];
const labelOf = (key: string) =>
  MODES.find((m) => m.key === key)?.label ??
  {
    "upstash-lock": "@upstash/lock (1 node)",
    "node-redlock": "node-redlock (TCP)",
    "edge-redlock-previous": `edge-redlock at ${BASELINE}`,
  }[key] ??
  key;
const num = (v: unknown, digits = 1) =>
  v === undefined ? "n/a" : typeof v === "number" ? String(round(v, digits)) : String(v);
const rowsOf = (scenario: string, cells: (r: Row) => unknown[], digits = 1) =>
  Object.entries(scenarios[scenario] ?? {}).map(([key, r]) => [labelOf(key), ...cells(r).map((c) => num(c, digits))]);

/** Steady commands per grant (fair) ÷ one uncontended cycle of the library at the baseline ref, both countings. */
function commandsVsPrevious(): string[] {
  const steadyRow = scenarios.steady?.["edge-redlock"];
  const before = scenarios.uncontended?.["edge-redlock-previous"];
  if (!steadyRow || !before) return [];
  const ratio = (a: unknown, b: unknown) => round(Number(a) / Number(b), 2);
  record("steady-vs-previous", "edge-redlock", {
    baseline: BASELINE,
    perEval: ratio(steadyRow.commandsPerGrant, before.commandsPerCycle),
    inScripts: ratio(steadyRow.commandsInScriptsPerGrant, before.commandsInScriptsPerCycle),
  });
  return [
    `steady commands per grant (fair) ÷ one uncontended cycle at ${BASELINE}: ` +
      `${ratio(steadyRow.commandsPerGrant, before.commandsPerCycle)} counted 1/EVAL, ` +
      `${ratio(steadyRow.commandsInScriptsPerGrant, before.commandsInScriptsPerCycle)} with the calls in scripts ` +
      "(bound 2)",
    `steady (fair) calls inside scripts per grant: ${Object.entries(
      (steadyRow.callsInScriptsPerGrant ?? {}) as Record<string, number>,
    )
      .sort(([, a], [, b]) => b - a)
      .map(([name, n]) => `${name} ${n}`)
      .join(", ")}`,
  ];
}

const out = [
  "1. uncontended acquire+release (ttl 10 s, default options), per cycle",
  table(
    ["impl", "HTTP req", "cmds 1/EVAL", "cmds + in scripts", "acquire p50 ms", "cycle p50 ms"],
    rowsOf("uncontended", (r) => [
      r.httpPerCycle,
      r.commandsPerCycle,
      r.commandsInScriptsPerCycle,
      r.acquireP50Ms,
      r.cycleP50Ms,
    ]),
  ),
  "",
  `2–3. one waiter (maxWait 10 s) behind a holder (ttl 10 s) that lets go after ${HOLD_MS / 1000} s; the waiter's ` +
    `requests until its grant; handover = holder lets go → waiter granted; round = uncontended acquire p50; ` +
    `holder's release = its release round, after the same quiet`,
  table(
    [
      "impl",
      "holder",
      "waiter HTTP req",
      "of them streams",
      "attempts",
      "handover ms",
      "÷ round",
      "holder's release ms",
      "÷ it",
      "holder req",
    ],
    (["behind-holder", "behind-using"] as const).flatMap((scenario) =>
      rowsOf(scenario, (r) => [
        scenario === "behind-holder" ? "release()" : "using() returns",
        r.waiterRequests,
        r.streams,
        r.attempts,
        r.handoverMs,
        r.handoverRounds,
        r.holderReleaseMs,
        r.handoverPerHolderRelease,
        r.holderRequests,
      ]),
    ),
  ),
  "",
  `4. steady: 16 clients loop acquire (maxWait 3 s, ttl 2 s) → hold 50 ms → release, ${STEADY_MS / 1000} s each; ` +
    `limit = 1000 / (hold + 2 × round)`,
  table(
    [
      "impl",
      "grants/s",
      "limit/s",
      "× limit",
      "give-ups",
      "Jain",
      "HTTP req/grant",
      "cmds/grant 1/EVAL",
      "cmds/grant + in scripts",
      "deliveries/grant",
    ],
    rowsOf(
      "steady",
      (r) => [
        r.grantsPerSec,
        r.handoverLimitPerSec,
        r.vsHandover,
        r.giveUps,
        r.jain,
        r.httpRequestsPerGrant,
        r.commandsPerGrant,
        r.commandsInScriptsPerGrant,
        r.deliveriesPerGrant,
      ],
      2,
    ),
  ),
  ...commandsVsPrevious(),
  "",
  "5. outage: 3 of 5 nodes answer 503; one acquire, default options (retryCount 10)",
  table(
    ["impl", "HTTP req in all", "attempts", "reason", "ms"],
    rowsOf("outage", (r) => [r.requests, r.attempts, r.reason, r.ms], 0),
  ),
  "",
  "6. dead waiter: first in line never comes back; the next waiter's wait after the release",
  table(
    ["impl", "dead one's claim ms", "held up ms", "live head's handover ms", "extra ms"],
    rowsOf("dead-waiter", (r) => [r.claimMs, r.heldUpMs, r.liveHandoverMs, r.extraMs]),
  ),
  "",
  `7. lost wakeups: every node drops every message; holder ttl ${LOST_TTL / 1000} s lets go after ` +
    `${LOST_RELEASE_MS / 1000} s`,
  table(
    ["impl", "granted after release ms", "after expiry ms", "messages dropped"],
    rowsOf("lost-wakeup", (r) => [r.pastReleaseMs, r.pastExpiryMs, r.dropped]),
  ),
  "",
  `load average (1 min): ${loadAtStart.toFixed(2)} at start, ${loadAtEnd.toFixed(2)} at the end, on ` +
    `${cpus().length} cores; ${seconds} s (${Object.entries(timings)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")})`,
  ...(checks.length ? ["request counts that do not match:", ...checks.map((c) => `  ${c}`)] : []),
];
process.stdout.write(`${out.join("\n")}\n`);

for (const scenario of Object.values(scenarios))
  for (const row of Object.values(scenario))
    for (const [k, v] of Object.entries(row)) if (typeof v === "number") row[k] = round(v, 3);
const path = "bench/results.json";
const previous = existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>) : {};
writeFileSync(
  path,
  `${JSON.stringify(
    {
      ...previous,
      waiting: {
        date: new Date().toISOString(),
        machine: {
          cpu: cpus()[0]?.model ?? "unknown",
          cores: cpus().length,
          memoryGiB: round(totalmem() / 2 ** 30, 1),
          node: process.version,
          loadAverage: { start: round(loadAtStart, 2), end: round(loadAtEnd, 2) },
        },
        seconds,
        scenarioSeconds: timings,
        counting: {
          http: "bridges' received counters; one client's share by the origins of its links",
          commandsPerEval: "one per plain command, pipeline member, EVAL/EVALSHA and SUBSCRIBE",
          commandsInScripts:
            "plus every redis.call() inside scripts (INFO commandstats), as Upstash's cost tables count",
          deliveries: "Pub/Sub messages written to subscription streams, not counted as commands",
        },
        checks,
        scenarios,
      },
    },
    null,
    2,
  )}\n`,
);
process.stdout.write(`wrote the waiting figures into ${path}\n`);
process.exit(0);
