// One real five-node cluster per test file; faults, counters and data cleared before each test.
import { Redis as TcpRedis } from "ioredis";
import { inspect } from "node:util";
import { afterAll, afterEach, beforeAll, beforeEach, expect } from "vitest";
import { nodeAdmin, settle as settleAdmins } from "../../dev/admin.ts";
import { startCluster, type Cluster } from "../../dev/cluster.ts";
import { upstashNode, type Redlock, type RedlockNode } from "../../src/index.ts";
import {
  ACQUIRE,
  EXTEND,
  FAIR_ACQUIRE,
  FAIR_SEMAPHORE_ACQUIRE,
  FENCE,
  FENCED_ACQUIRE,
  FENCED_FAIR_ACQUIRE,
  LEAVE,
  RELEASE,
  REQUEUE,
  RW_READ_ACQUIRE,
  RW_READ_EXTEND,
  RW_READ_RELEASE,
  RW_WRITE_ACQUIRE,
} from "../../src/scripts/index.ts";

export interface Fixture {
  cluster: Cluster;
  admins: ReturnType<typeof nodeAdmin>[];
  /** Plain TCP clients straight to each redis-server. */
  tcp: TcpRedis[];
  /**
   * The cluster's nodes as the library sees them (real `@upstash/redis` over the bridges), each request
   * counted until its reply is in: {@link settle} waits for them, including those a round no longer waited for.
   */
  nodes: RedlockNode[];
  /** Requests sent through {@link Fixture.nodes} whose reply is not in yet. */
  outstanding: Set<Promise<unknown>>;
  /** Per node, the scripts the library sent through {@link Fixture.nodes} in this test, in order. */
  sent: string[][];
}

function counted(node: RedlockNode, outstanding: Set<Promise<unknown>>, sent: () => string[]): RedlockNode {
  const { subscribe, requestsFor } = node;
  return {
    label: node.label,
    ...(requestsFor ? { requestsFor: requestsFor.bind(node) } : {}),
    ...(subscribe
      ? {
          subscribe(channel: string, onMessage: (payload: string) => void, signal: AbortSignal) {
            sent().push("subscribe");
            return subscribe.call(node, channel, onMessage, signal);
          },
        }
      : {}),
    run(script, keys, args, signal) {
      sent().push(script.name);
      const reply = node.run(script, keys, args, signal);
      outstanding.add(reply);
      const done = () => void outstanding.delete(reply);
      reply.then(done, done);
      return reply;
    },
  };
}

export function useCluster(nodes = 5): Fixture {
  const fixture = {} as Fixture;
  beforeAll(async () => {
    fixture.cluster = await startCluster({ nodes });
    fixture.admins = fixture.cluster.nodes.map((n) => nodeAdmin(n.adminUrl));
    fixture.outstanding = new Set();
    fixture.sent = fixture.cluster.nodes.map(() => []);
    fixture.nodes = fixture.cluster.nodes.map((n, i) =>
      counted(upstashNode({ url: n.url, token: n.token }), fixture.outstanding, () => fixture.sent[i]),
    );
    fixture.tcp = fixture.cluster.nodes.map((n) => {
      const client = new TcpRedis(n.redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
      client.on("error", () => {});
      return client;
    });
  });
  beforeEach(async () => {
    for (const [i, server] of fixture.cluster.servers.entries()) {
      if (server.state === "paused") server.resume();
      if (server.state === "killed") await fixture.admins[i].restart();
    }
    await Promise.all(fixture.admins.map((a) => a.reset()));
    await Promise.all(fixture.tcp.map((c) => c.flushall()));
    await Promise.all(fixture.tcp.map((c) => c.script("FLUSH")));
    await Promise.all(fixture.admins.map((a) => a.resetCounters()));
    fixture.sent = fixture.cluster.nodes.map(() => []);
  });
  afterAll(async () => {
    for (const client of fixture.tcp ?? []) client.disconnect();
    await fixture.cluster?.stop();
  });
  return fixture;
}

/**
 * Loads the lock's scripts on every node through its bridge (each test starts with none; the bridge
 * maps the key-locking flag onto plain Redis), so the next request of each kind is a single EVALSHA:
 * a test that slows a node down then sees one delay per request, not two (NOSCRIPT, then EVAL).
 */
export async function loadScripts(fixture: Fixture): Promise<void> {
  await Promise.all(
    fixture.cluster.nodes.flatMap((node) =>
      [
        ACQUIRE,
        EXTEND,
        FENCE,
        FENCED_ACQUIRE,
        FENCED_FAIR_ACQUIRE,
        RELEASE,
        FAIR_ACQUIRE,
        FAIR_SEMAPHORE_ACQUIRE,
        LEAVE,
        REQUEUE,
        RW_READ_ACQUIRE,
        RW_WRITE_ACQUIRE,
        RW_READ_EXTEND,
        RW_READ_RELEASE,
      ].map(async (script) => {
        const res = await fetch(node.url, {
          method: "POST",
          headers: { authorization: `Bearer ${node.token}` },
          body: JSON.stringify(["script", "load", script.lua]),
        });
        if (!res.ok) throw new Error(`SCRIPT LOAD failed: HTTP ${res.status}`);
      }),
    ),
  );
}

/** Waits until `ready` holds, checking every 5 ms, at most `timeoutMs` (then throws). */
export async function until(ready: () => Promise<boolean>, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * Waits until every request sent through {@link Fixture.nodes} has its reply (so it has run on its
 * node), then until no request is in flight at any bridge (requests a client gave up on may still
 * be running there), at most `timeoutMs` for the second part.
 */
export async function settle(fixture: Fixture, timeoutMs = 3_000): Promise<void> {
  while (fixture.outstanding.size > 0) await Promise.allSettled([...fixture.outstanding]);
  await settleAdmins(fixture.admins, timeoutMs);
}

/**
 * What `console.warn` printed during each test of the file, one string per call (as the console would print
 * it, objects inspected), emptied before each test; the console is given back after each.
 */
export function capturedWarnings(): string[] {
  const logged: string[] = [];
  const original = console.warn;
  beforeEach(() => {
    logged.length = 0;
    console.warn = (...args: unknown[]) => void logged.push(args.map((a) => inspect(a, { depth: 10 })).join(" "));
  });
  afterEach(() => {
    console.warn = original;
  });
  return logged;
}

/** Every way a thing can end up in a log: as a string, as JSON, inspected with its hidden parts, its stack. */
export const textsOf = (thing: unknown): string[] => [
  String(thing),
  JSON.stringify(thing) ?? "",
  inspect(thing, { depth: 10, showHidden: true }),
  (thing as Error)?.stack ?? "",
];

/**
 * A release that overtakes acquire stragglers: `count` locks (keys `prefix:0…`) taken while the acquires to
 * nodes 4 and 5 wait 300 ms at their bridges, released once the wait is gone, so each release reaches those
 * nodes before its acquire ran. Checks that the release saw nothing to delete there (or did not wait for
 * them), and that the follow-up releases of `pending` leave no key on any node.
 */
export async function releaseOvertakingStragglers(
  env: Fixture,
  redlock: Redlock,
  prefix: string,
  count: number,
): Promise<void> {
  await Promise.all([3, 4].map((i) => env.admins[i].faults({ latencyMs: 300 })));
  const keys = Array.from({ length: count }, (_, i) => `${prefix}:${i}`);
  const locks = await Promise.all(keys.map((k) => redlock.acquire([k], 10_000)));
  for (const lock of locks) expect(lock.validityMs).toBeGreaterThan(0);
  await Promise.all([3, 4].map((i) => env.admins[i].faults({ latencyMs: 0 })));
  const results = await Promise.all(locks.map((l) => l.release()));
  // Decided at a quorum of answers: on 4 and 5 the release found nothing (the acquire had not run yet) or is unanswered.
  for (const r of results) for (const i of [3, 4]) expect(["denied", "unanswered"]).toContain(r.votes[i].outcome);
  await Promise.all(results.map((r) => r.pending));
  await settle(env);
  for (const k of keys)
    expect(
      (await Promise.all(env.tcp.map((t) => t.exists(k)))).reduce((a, b) => a + b, 0),
      k,
    ).toBe(0);
}
