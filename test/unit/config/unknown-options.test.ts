// A misspelled option is refused, before any request, with InvalidArgumentError naming it, what it may have meant and
// the options there are; it would otherwise be ignored and the call would run with the default. The options a call
// does take still pass, using()'s own ones included.
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { InvalidArgumentError, Redlock, type AcquireOptions } from "../../../src/index.ts";
import { readWrite, redlock, semaphore } from "../../../src/hono/index.ts";
import { simCluster } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

function setup() {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  return { clock, nodes, redlock: new Redlock(nodes, { clock, nodeTimeout: 100, fair: false }) };
}

const refusal = async (call: () => Promise<unknown> | unknown): Promise<InvalidArgumentError> => {
  try {
    await call();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    return error as InvalidArgumentError;
  }
  throw new Error("not refused");
};

describe("an option that is not one", () => {
  it("new Redlock refuses it, naming it and the options", async () => {
    const { nodes } = setup();
    const error = await refusal(() => new Redlock(nodes, { retrycount: 1 } as never));
    expect(error.argument).toBe("options.retrycount");
    expect(error.message).toContain("(did you mean retryCount?)");
    expect(error.message).toContain("the options are retryCount, retryDelay");
  });

  it("acquire, a semaphore's acquire and a read-write lock's refuse it before any request", async () => {
    const { clock, nodes, redlock } = setup();
    const wait = await refusal(() => clock.run(redlock.acquire(["k"], 1_000, { wait: 100 } as AcquireOptions)));
    expect(wait.message).toBe(
      "options.wait is not an option here (did you mean maxWait (wait is the middlewares' name)?); the options are " +
        "signal, retryCount, retryDelay, retryJitter, maxWait, maxRequests, fair, fencing",
    );
    const slip = await refusal(() => clock.run(redlock.acquire(["k"], 1_000, { retryCont: 3 } as never)));
    expect(slip.argument).toBe("options.retryCont");
    expect(slip.message).toContain("(did you mean retryCount?)");
    await refusal(() => clock.run(redlock.semaphore("s", 2).acquire(1_000, { maxwait: 5 } as never)));
    await refusal(() => clock.run(redlock.readWriteLock("d").acquireRead(1_000, { fenced: true } as never)));
    // A name left undefined asks for nothing: it passes (a caller may spread a wider object).
    const { clock: c2, redlock: r2 } = setup();
    const lock = await c2.run(r2.acquire(["u"], 1_000, { maxWait: undefined, wait: undefined } as AcquireOptions));
    await c2.run(lock.release());
    // maxHold belongs to using(), not to acquire.
    await refusal(() => clock.run(redlock.acquire(["k"], 1_000, { maxHold: 5 } as never)));
    expect(nodes.map((n) => n.requests.length)).toEqual([0, 0, 0, 0, 0]);
  });

  it("using() takes its own options and an acquisition's, and refuses others", async () => {
    const { clock, redlock } = setup();
    const ran = await clock.run(
      redlock.using(["k"], 1_000, async () => "ran", { maxHold: 500, extendThreshold: 300, retryCount: 0 }),
    );
    expect(ran).toBe("ran");
    const error = await refusal(() => clock.run(redlock.using(["k"], 1_000, async () => 0, { maxhold: 5 } as never)));
    expect(error.message).toContain("(did you mean maxHold?)");
  });

  it("the middlewares refuse it when the route is defined", async () => {
    const wiat = await refusal(() => redlock("k", { wiat: 5_000 } as never));
    expect(wiat.argument).toBe("options.wiat");
    expect(wiat.message).toContain("(did you mean wait?)");
    expect(wiat.message).toContain("the options are ttl, wait, redlock");
    expect(wiat.message).toContain("onBusy");
    await refusal(() => semaphore("k", { limit: 2, onBusy: () => new Response() } as never));
    await refusal(() => readWrite("k", { onFull: () => new Response() } as never));
    // Their own options pass.
    new Hono().get("/", semaphore("k", { limit: 2, onFull: (c) => c.text("full") }), (c) => c.text("ok"));
    new Hono().get("/", readWrite("k", { onBusy: (c) => c.text("busy"), serverTiming: true }), (c) => c.text("ok"));
  });

  it("fromEnv takes nodes beside the Redlock options", async () => {
    const env = Object.fromEntries(
      [1, 2, 3].flatMap((n) => [
        [`UPSTASH_REDIS_REST_URL_${n}`, `https://n${n}.example.test`],
        [`UPSTASH_REDIS_REST_TOKEN_${n}`, `token-${n}-long`],
      ]),
    );
    expect(Redlock.fromEnv(env, { nodes: 3, retryCount: 1 }).nodes).toHaveLength(3);
    const nodez = await refusal(() => Redlock.fromEnv(env, { nodez: 3 } as never));
    expect(nodez.message).toContain("(did you mean nodes?)");
    expect(nodez.message).toMatch(/the options are .*onEvent, nodes$/);
  });
});
