// Every public function and option given invalid input throws InvalidArgumentError before any request:
// the bridges' request counters stay at 0.
import { Redis } from "@upstash/redis";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import {
  InvalidArgumentError,
  MissingConfigurationError,
  Redlock,
  fencedRead,
  fencedWrite,
  nodesFromEnv,
} from "../../../src/index.ts";
import { useCluster } from "../fixture.ts";

const env = useCluster();

async function rejects(name: string, call: () => unknown): Promise<void> {
  let outcome: unknown;
  try {
    outcome = await call();
  } catch (error) {
    outcome = error;
  }
  expect(outcome, name).toBeInstanceOf(InvalidArgumentError);
}

describe("invalid input", () => {
  it("is refused with InvalidArgumentError before any request reaches a node", async () => {
    const nodes = env.cluster.nodes.map(({ url, token }) => ({ url, token }));
    const redlock = new Redlock(nodes, { nodeTimeout: 200 });
    const held = await redlock.acquire(["held"], 5_000, { fencing: true });
    await new Promise((r) => setTimeout(r, 30));
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    const db = new Redis({ url: nodes[0].url, token: nodes[0].token });

    const cases: [string, () => unknown][] = [
      // constructor and options
      ["nodes not an array", () => new Redlock("nodes" as never)],
      ["no node", () => new Redlock([])],
      ["null node", () => new Redlock([null as never])],
      ["url not a string", () => new Redlock([{ url: 5 as never, token: "t" }])],
      ["malformed url", () => new Redlock([{ url: "http://", token: "t" }])],
      ["ftp url", () => new Redlock([{ url: "ftp://x.test", token: "t" }])],
      ["token empty", () => new Redlock([{ url: "https://x.test", token: "" }])],
      ["token padded", () => new Redlock([{ url: "https://x.test", token: " secret" }])],
      ["same node twice", () => new Redlock([nodes[0], { ...nodes[0] }])],
      ["a resource over Upstash's 32 KB key limit", () => redlock.acquire(["k".repeat(40 * 1024)], 5_000)],
      ["a resource of 11k 3-byte characters (33 KB in UTF-8)", () => redlock.acquire(["€".repeat(11_000)], 5_000)],
      ["a 1 MB resource through using", () => redlock.using(["x".repeat(1 << 20)], 5_000, async () => {})],
      ["a node label that is empty", () => new Redlock([{ ...nodes[0], label: "" }])],
      ["same node twice, one with /#a", () => new Redlock([nodes[0], { ...nodes[0], url: `${nodes[0].url}/#a` }])],
      ["same node twice, one with /?a", () => new Redlock([nodes[0], { ...nodes[0], url: `${nodes[0].url}/?a` }])],
      [
        "same node twice, one with a trailing slash",
        () => new Redlock([nodes[0], { ...nodes[0], url: `${nodes[0].url}/` }]),
      ],
      [
        "same node twice, one as an IPv4-mapped IPv6 address",
        () => new Redlock([nodes[0], { ...nodes[0], url: nodes[0].url.replace("127.0.0.1", "[::ffff:127.0.0.1]") }]),
      ],
      [
        "same host twice, one with a trailing dot",
        () =>
          new Redlock([
            { url: "https://db.example", token: "token-one" },
            { url: "https://db.example.", token: "token-two" },
          ]),
      ],
      [
        "same host and port twice, http and https",
        () =>
          new Redlock([
            { url: "https://db.example:8443", token: "token-one" },
            { url: "http://db.example:8443", token: "token-two" },
          ]),
      ],
      ["token shorter than 8 characters", () => new Redlock([{ url: "https://db.example", token: "short" }])],
      ["url with $ host", () => new Redlock([{ url: "https://$host.example", token: "t" }])],
      ["url with a trailing newline", () => new Redlock([{ url: "https://db.example\n", token: "t" }])],
      ["url with a space", () => new Redlock([{ url: "https://db.example/ x", token: "t" }])],
      ["url with credentials", () => new Redlock([{ url: "https://user:pass@db.example", token: "t" }])],
      ["token with a newline", () => new Redlock([{ url: "https://db.example", token: "abc\ndef" }])],
      ["token with a space inside", () => new Redlock([{ url: "https://db.example", token: "abc def" }])],
      ["options not an object", () => new Redlock(nodes, "fast" as never)],
      ["retryCount fractional", () => new Redlock(nodes, { retryCount: 1.5 })],
      ["retryCount NaN", () => new Redlock(nodes, { retryCount: Number.NaN })],
      ["retryCount below -1", () => new Redlock(nodes, { retryCount: -2 })],
      ["retryDelay negative", () => new Redlock(nodes, { retryDelay: -1 })],
      ["retryJitter string", () => new Redlock(nodes, { retryJitter: "10" as never })],
      ["driftFactor negative", () => new Redlock(nodes, { driftFactor: -0.1 })],
      ["driftFactor 1", () => new Redlock(nodes, { driftFactor: 1 })],
      ["nodeTimeout 0", () => new Redlock(nodes, { nodeTimeout: 0 })],
      ["nodeTimeout huge", () => new Redlock(nodes, { nodeTimeout: 2 ** 40 })],
      ["nodeTimeout fractional", () => new Redlock(nodes, { nodeTimeout: 10.5 })],
      ["clock without methods", () => new Redlock(nodes, { clock: {} as never })],
      // acquire
      ["resources empty", () => redlock.acquire([], 1_000)],
      ["resources not strings", () => redlock.acquire([1 as never], 1_000)],
      ["empty key", () => redlock.acquire(["ok", ""], 1_000)],
      ["duplicate keys", () => redlock.acquire(["a", "b", "a"], 1_000)],
      ["resources object", () => redlock.acquire({} as never, 1_000)],
      // biome-ignore lint/suspicious/noSparseArray: a sparse array is the input under test
      ["resources sparse", () => redlock.acquire(["a", , "b"] as string[], 1_000)],
      ["resource in the fence namespace", () => redlock.acquire(["edge-redlock:fence:orders"], 1_000)],
      ["ttl NaN", () => redlock.acquire(["a"], Number.NaN)],
      ["ttl Infinity", () => redlock.acquire(["a"], Number.POSITIVE_INFINITY)],
      ["ttl negative", () => redlock.acquire(["a"], -1_000)],
      ["ttl fractional", () => redlock.acquire(["a"], 1_000.5)],
      ["ttl string", () => redlock.acquire(["a"], "1000" as never)],
      ["ttl huge", () => redlock.acquire(["a"], 2 ** 31)],
      ["ttl = nodeTimeout", () => redlock.acquire(["a"], 200)],
      ["ttl < nodeTimeout", () => redlock.acquire(["a"], 100)],
      ["options null", () => redlock.acquire(["a"], 1_000, null as never)],
      ["signal not a signal", () => redlock.acquire(["a"], 1_000, { signal: "stop" as never })],
      ["retryCount -2 per call", () => redlock.acquire(["a"], 1_000, { retryCount: -2 })],
      ["maxWait negative", () => redlock.acquire(["a"], 1_000, { maxWait: -1 })],
      ["fencing not boolean", () => redlock.acquire(["a"], 1_000, { fencing: "yes" as never })],
      // extend and using
      ["extend NaN", () => held.extend(Number.NaN)],
      ["extend negative", () => held.extend(-5)],
      ["extend ≤ nodeTimeout", () => held.extend(150)],
      ["using ttl", () => redlock.using(["a"], -1, async () => 1)],
      ["using routine", () => redlock.using(["a"], 1_000, "go" as never)],
      ["using maxHold 0", () => redlock.using(["a"], 1_000, async () => 1, { maxHold: 0 })],
      ["using threshold ≥ ttl", () => redlock.using(["a"], 1_000, async () => 1, { extendThreshold: 1_000 })],
      ["using resources", () => redlock.using([], 1_000, async () => 1)],
      // environment
      ["env null", () => Redlock.fromEnv(null as never)],
      ["env missing", () => Redlock.fromEnv({})],
      ["env nodes 0", () => nodesFromEnv({}, { nodes: 0 })],
      // fencing helpers
      ["fencedWrite empty key", () => fencedWrite(db, "", "v", "1")],
      ["fencedWrite value not string", () => fencedWrite(db, "k", 5 as never, "1")],
      ["fencedWrite fence leading zero", () => fencedWrite(db, "k", "v", "01")],
      ["fencedWrite fence negative", () => fencedWrite(db, "k", "v", "-1")],
      ["fencedWrite fence number", () => fencedWrite(db, "k", "v", 7 as never)],
      ["fencedWrite tokenKey = key", () => fencedWrite(db, "k", "v", "1", { tokenKey: "k" })],
      ["fencedRead fence text", () => fencedRead(db, "k", "seven")],
    ];
    for (const [name, call] of cases) await rejects(name, call);
    expect(() => Redlock.fromEnv({})).toThrow(MissingConfigurationError);

    const states = await Promise.all(env.admins.map((a) => a.state()));
    expect(states.map((s) => s.counters.received)).toEqual([0, 0, 0, 0, 0]);
    await held.release();
  });

  it("the middleware refuses a bad key with a 500 and sends nothing", async () => {
    const { redlock } = await import("../../../src/hono/index.ts");
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    const app = new Hono();
    app.onError((error, c) => c.json({ error: error.name }, 500));
    app.post(
      "/x",
      redlock(() => "", { redlock: new Redlock(env.cluster.nodes) }),
      (c) => c.text("ran"),
    );
    const res = await app.request("/x", { method: "POST" });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: "InvalidArgumentError" });
    const states = await Promise.all(env.admins.map((a) => a.state()));
    expect(states.map((s) => s.counters.received)).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("middleware options", () => {
  it("are checked when the route is defined", async () => {
    const { redlock } = await import("../../../src/hono/index.ts");
    for (const options of [
      { ttl: 0 },
      { ttl: 1.5 },
      { ttl: Number.NaN },
      { wait: -1 },
      { maxHold: 0 },
      { lostHeader: "bad header" },
    ]) {
      expect(() => redlock("k", options), JSON.stringify(options)).toThrow(InvalidArgumentError);
    }
    // A ttl not above nodeTimeout: the default Redlock's (500 ms), or the given one's.
    expect(() => redlock("k", { ttl: 300 })).toThrow(InvalidArgumentError);
    expect(() => redlock("k", { ttl: 300, redlock: new Redlock(env.cluster.nodes, { nodeTimeout: 400 }) })).toThrow(
      InvalidArgumentError,
    );
    expect(() =>
      redlock("k", { ttl: 300, redlock: new Redlock(env.cluster.nodes, { nodeTimeout: 200 }) }),
    ).not.toThrow();
    expect(() => redlock(42 as never)).toThrow(InvalidArgumentError);
  });
});
