// No error message, tally, log line or thrown object contains a REST token or a lock value.
import { inspect } from "node:util";
import { Hono } from "hono";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LockExtensionError, Redlock } from "../../src/index.ts";
import { redlock as guard } from "../../src/hono.ts";
import { useCluster } from "./fixture.ts";

const env = useCluster();
const logged: string[] = [];
const originals = { log: console.log, warn: console.warn, error: console.error };

beforeEach(() => {
  for (const level of ["log", "warn", "error"] as const) console[level] = (...args: unknown[]) => void logged.push(args.map((a) => inspect(a, { depth: 10 })).join(" "));
});
afterEach(() => Object.assign(console, originals));

/** Every way a thrown object or result can be turned into text. */
const texts = (thing: unknown): string[] => [String(thing), JSON.stringify(thing) ?? "", inspect(thing, { depth: 10, showHidden: true }), (thing as Error)?.stack ?? ""];

describe("secrets stay out of everything the library produces", () => {
  it("errors, tallies, results, locks and logs never contain a token or a lock value", async () => {
    const token = env.cluster.nodes[0].token;
    const produced: unknown[] = [];
    const values: string[] = [];
    const rl = new Redlock(env.cluster.nodes, { nodeTimeout: 150, retryCount: 1, retryDelay: 10 });
    const keep = async (p: Promise<unknown>) => produced.push(await p.catch((e: unknown) => e));

    const lock = await rl.acquire(["s:held"], 5_000, { fencing: true });
    values.push(lock.value);
    produced.push(lock);
    // @upstash/redis errors embed the command (with the value): WRONGTYPE inside the release script.
    await env.tcp[0].hset("s:typed", "f", "v");
    await env.admins[1].faults({ status: 500 });
    await env.admins[2].faults({ garbage: "html" });
    await env.admins[3].kill();
    await keep(rl.acquire(["s:typed", "s:held"], 5_000));
    await keep(rl.acquire(["s:held"], 5_000, { fencing: true }));
    await env.tcp[0].del("s:held");
    await env.tcp[0].hset("s:held", "f", "v"); // the release script's GET now fails with WRONGTYPE on node 0
    const released = await lock.release();
    produced.push(released, released.votes);
    expect(released.votes[0]).toMatchObject({ outcome: "error", cause: expect.stringMatching(/^WRONGTYPE/) });
    await Promise.all(env.admins.map((a) => a.reset()));
    await env.admins[3].restart();

    // A wrong token: 401 from every node.
    const wrong = new Redlock(env.cluster.nodes.map((n) => ({ url: n.url, token: `${token}-wrong` })), { retryCount: 0 });
    await keep(wrong.acquire(["s:x"], 1_000));
    // An extension of a lock taken over by another holder.
    const short = await rl.acquire(["s:short"], 400);
    values.push(short.value);
    for (const tcp of env.tcp) await tcp.set("s:short", "someone-else", "PX", 5_000);
    const extension = await short.extend(5_000).catch((e: unknown) => e);
    expect(extension).toBeInstanceOf(LockExtensionError);
    produced.push(extension);
    // Bad configuration naming a token-like value.
    await keep(Promise.resolve().then(() => new Redlock([{ url: env.cluster.nodes[0].url, token: ` ${token}` }])));
    // The middleware's responses and logs: busy, unavailable, missing configuration.
    const app = new Hono();
    app.post("/a", guard("s:held2", { redlock: rl }), (c) => c.text("ok"));
    app.post("/m", guard("s:m", { redlock: () => Redlock.fromEnv({ UPSTASH_REDIS_REST_URL_1: env.cluster.nodes[0].url, UPSTASH_REDIS_REST_TOKEN_1: token }) }), (c) => c.text("ok"));
    const holder = await rl.acquire(["s:held2"], 5_000);
    values.push(holder.value);
    produced.push(await (await app.request("/a", { method: "POST" })).text());
    await holder.release();
    produced.push(await (await app.request("/m", { method: "POST" })).text());

    expect(produced.length).toBeGreaterThan(8);
    const all = [...produced.flatMap(texts), ...logged];
    for (const text of all) {
      expect(text).not.toContain(token);
      for (const value of values) expect(text).not.toContain(value);
      expect(text).not.toMatch(/command was/);
    }
    // The lock value is still there for the owner who asks for it.
    expect(lock.value).toMatch(/^[0-9a-f]{40}$/);
  });
});
