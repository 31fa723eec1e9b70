// Issue 21, the hot path's cheaper mechanisms, each with the property it must keep: random values drawn in
// blocks never repeat; deadlines of one synchronous run share one timer but keep their own abort; the
// lock's own request signals announce their abort to the batcher (no listener each) and a batch member
// still stops waiting on its own; a settled request is never aborted afterwards; a pipeline body is one
// JSON array built per batch.
import { afterEach, describe, expect, it, vi } from "vitest";
import { Abandoned, batching, type Outcome, type Transport } from "../../src/node/batch.ts";
import { fanOut } from "../../src/quorum/fan-out.ts";
import { Redlock } from "../../src/index.ts";
import { announceAbort, announcingController, unwatchAbort, watchAbort } from "../../src/support/abort.ts";
import { systemClock } from "../../src/support/clock.ts";
import { pooledValue, randomUnit } from "../../src/support/random.ts";
import type { Vote } from "../../src/scripts/vote.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const settled = <T>(p: Promise<T>) => p.then((value) => ({ value }), (error: unknown) => ({ error }));

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
});

describe("random values drawn in blocks", () => {
  it("never repeat, are 160 bits of hex, and cost one getRandomValues call per 200 values", () => {
    const draws = vi.spyOn(crypto, "getRandomValues");
    const values = Array.from({ length: 10_000 }, pooledValue);
    expect(new Set(values).size).toBe(10_000);
    for (const value of values) expect(value).toMatch(/^[0-9a-f]{40}$/);
    expect(draws.mock.calls.length).toBeGreaterThanOrEqual(50);
    expect(draws.mock.calls.length).toBeLessThanOrEqual(51);
  });

  it("give no two values a byte in common position by construction: every value is 20 fresh bytes", () => {
    // Where a block is shared, values that reused bytes would repeat pairs of hex digits in lockstep.
    const values = Array.from({ length: 2_000 }, pooledValue);
    const collisions = values.slice(1).filter((v, i) => v.slice(0, 16) === values[i].slice(0, 16)).length;
    expect(collisions).toBe(0);
  });

  it("randomUnit stays in [0, 1) and is drawn from the same blocks", () => {
    const units = Array.from({ length: 5_000 }, randomUnit);
    for (const u of units) expect(u >= 0 && u < 1).toBe(true);
    expect(new Set(units).size).toBeGreaterThan(4_990);
  });
});

describe("deadlines: one timer per synchronous run, an abort per deadline", () => {
  it("deadlines made together share one setTimeout; each aborts with a TimeoutError; a cleared one never aborts", async () => {
    const timers = vi.spyOn(globalThis, "setTimeout");
    const deadlines = Array.from({ length: 5 }, () => systemClock.timeout(30));
    expect(timers).toHaveBeenCalledTimes(1);
    deadlines[2].clear();
    await sleep(60);
    deadlines.forEach((d, i) => expect(d.signal.aborted, `deadline ${i}`).toBe(i !== 2));
    expect((deadlines[0].signal.reason as DOMException).name).toBe("TimeoutError");
  });

  it("a deadline made after a microtask, or with another length, gets a timer of its own", async () => {
    const timers = vi.spyOn(globalThis, "setTimeout");
    const first = systemClock.timeout(1_000);
    const other = systemClock.timeout(2_000);
    await Promise.resolve();
    const later = systemClock.timeout(1_000);
    expect(timers).toHaveBeenCalledTimes(3);
    for (const d of [first, other, later]) d.clear();
  });

  it("clearing every deadline of a group stops its timer", () => {
    const stops = vi.spyOn(globalThis, "clearTimeout");
    const deadlines = Array.from({ length: 3 }, () => systemClock.timeout(1_000));
    deadlines[0].clear();
    deadlines[1].clear();
    expect(stops).not.toHaveBeenCalled();
    deadlines[2].clear();
    deadlines[2].clear(); // twice is harmless
    expect(stops).toHaveBeenCalledTimes(1);
  });

  it("a round's requests are cut at nodeTimeout on the real clock, and only the ones still out", async () => {
    const signals: AbortSignal[] = [];
    const round = await fanOut(
      5,
      (node, signal) => {
        signals.push(signal);
        // nodes 0-2 answer at once, 3 and 4 never (they answer only when cut)
        if (node < 3) return Promise.resolve<Vote>({ outcome: "granted" });
        return new Promise<Vote>((resolve) => signal.addEventListener("abort", () => resolve({ outcome: "error", cause: "timeout" })));
      },
      { quorum: 3, nodeTimeout: 40, clock: systemClock, decide: "all", cancelStragglers: false },
    );
    expect([round.granted, round.errors]).toEqual([3, 2]);
    expect(signals.map((s) => s.aborted)).toEqual([false, false, false, true, true]);
    expect((signals[3].reason as DOMException).name).toBe("TimeoutError");
  });
});

describe("announced aborts", () => {
  it("a plain signal is not watchable; an announcing one takes one watcher, told once after its listeners", () => {
    expect(watchAbort(new AbortController().signal, { aborted: () => {} })).toBe(false);
    const controller = announcingController();
    const order: string[] = [];
    controller.signal.addEventListener("abort", () => order.push("listener"));
    expect(watchAbort(controller.signal, { aborted: () => order.push("watcher") })).toBe(true);
    expect(watchAbort(controller.signal, { aborted: () => order.push("second") })).toBe(false);
    announceAbort(controller, new Error("cut"));
    announceAbort(controller, new Error("again"));
    expect(order).toEqual(["listener", "watcher"]);
    expect(controller.signal.reason).toEqual(new Error("cut"));
  });

  it("an unwatched signal tells nobody", () => {
    const controller = announcingController();
    const told: AbortSignal[] = [];
    const watcher = { aborted: (s: AbortSignal) => void told.push(s) };
    watchAbort(controller.signal, watcher);
    unwatchAbort(controller.signal, watcher);
    announceAbort(controller, new Error("cut"));
    expect(told).toEqual([]);
  });
});

/** A transport that records each request and holds every reply until `answer`. */
function held() {
  const calls: { commands: string[]; signal: AbortSignal }[] = [];
  const waiting: (() => void)[] = [];
  const transport: Transport<string> = {
    one: (command, signal) => new Promise((resolve) => waiting.push(() => resolve(`reply:${command}`))).then((v) => (signal.throwIfAborted(), v)),
    many: (commands, signal) => {
      calls.push({ commands, signal });
      return new Promise<Outcome[]>((resolve, reject) =>
        waiting.push(() => (signal.aborted ? reject(signal.reason) : resolve(commands.map((c) => ({ ok: true, value: `reply:${c}` }))))),
      );
    },
  };
  return { transport, calls, answer: () => waiting.splice(0).forEach((go) => go()) };
}

describe("a batch of announcing signals (the lock's own requests)", () => {
  it("a member whose signal aborts stops waiting at once, told when its request is over; the others get their replies", async () => {
    const { transport, calls, answer } = held();
    const send = batching(transport);
    const quitter = announcingController();
    const stays = announcingController();
    const a = send("a", quitter.signal).catch((e: unknown) => e);
    const b = settled(send("b", stays.signal));
    await sleep(0);
    expect(calls).toHaveLength(1);
    announceAbort(quitter, new Error("gave up"));
    const abandoned = (await a) as Abandoned;
    expect(abandoned).toBeInstanceOf(Abandoned);
    expect(abandoned.reason).toEqual(new Error("gave up"));
    expect(calls[0].signal.aborted).toBe(false);
    let over = false;
    void abandoned.landed.then(() => (over = true));
    await sleep(0);
    expect(over).toBe(false);
    answer();
    expect(await b).toEqual({ value: "reply:b" });
    await abandoned.landed;
    // Once the request is over, the signals are no longer followed: a later abort tells nobody.
    announceAbort(stays, new Error("late"));
  });

  it("cuts the pipeline request when every member stopped, announcing and plain signals mixed", async () => {
    const { transport, calls } = held();
    const send = batching(transport);
    const own = announcingController();
    const caller = new AbortController();
    const replies = [settled(send("own", own.signal)), settled(send("caller", caller.signal))];
    await sleep(0);
    announceAbort(own, new Error("first"));
    expect(calls[0].signal.aborted).toBe(false);
    caller.abort(new Error("second"));
    expect(calls[0].signal.aborted).toBe(true);
    const [first, second] = (await Promise.all(replies)) as { error: unknown }[];
    expect(first.error).toBeInstanceOf(Abandoned);
    expect(second).toEqual({ error: new Error("second") });
  });
});

describe("fan-out: a settled request is never aborted afterwards", () => {
  it("neither by the decision (cancelStragglers) nor by the deadline; the ones still out are", async () => {
    const clock = new VirtualClock();
    const signals: AbortSignal[] = [];
    const ask = (node: number, signal: AbortSignal) => {
      signals.push(signal);
      return new Promise<Vote>((resolve) => {
        signal.addEventListener("abort", () => resolve({ outcome: "error", cause: "cut" }));
        if (node < 3) clock.schedule(10 * (node + 1), () => resolve({ outcome: "granted" }));
      });
    };
    await clock.run(fanOut(5, ask, { quorum: 3, nodeTimeout: 1_000, clock, decide: "outcome", cancelStragglers: true }));
    await clock.drain();
    expect(signals.map((s) => s.aborted)).toEqual([false, false, false, true, true]);
  });
});

describe("the Upstash transport", () => {
  it("sends a batch as one /pipeline request whose body is the commands as the REST API takes them", async () => {
    const bodies: { url: string; body: unknown }[] = [];
    vi.stubGlobal("fetch", async (input: string | URL | Request, init?: RequestInit) => {
      const url = String(input);
      const body = JSON.parse(String(init?.body)) as unknown[];
      bodies.push({ url, body });
      const answer = (command: unknown[]) => (command.length >= 6 ? [1] : 1); // an acquire, else a release
      if (url.endsWith("/pipeline")) return Response.json((body as unknown[][]).map((c) => ({ result: answer(c) })));
      return Response.json({ result: answer(body) });
    });
    const nodes = Array.from({ length: 3 }, (_, i) => ({ url: `https://node${i}.hot.test`, token: "hot-path-token" }));
    const redlock = new Redlock(nodes, { retryCount: 0 });
    await (await redlock.acquire(["warm"], 5_000)).release(); // the SHA is known: the batch below is one turn
    bodies.length = 0;
    const [a, b] = await Promise.all([redlock.acquire(["a"], 5_000), redlock.acquire(["b"], 5_000)]);
    const first = bodies.filter((r) => r.url === "https://node0.hot.test/pipeline");
    expect(first).toHaveLength(1);
    // One entry per lock, as the REST API takes a command: EVALSHA, the SHA, numkeys, the keys, the args.
    const entries = first[0].body as unknown[][];
    expect(entries).toHaveLength(2);
    entries.forEach((entry, i) => {
      const [command, sha, numkeys, ...rest] = entry;
      expect([command, typeof sha === "string" && /^[0-9a-f]{40}$/.test(sha), typeof numkeys]).toEqual(["evalsha", true, "number"]);
      expect(rest[0]).toBe(["a", "b"][i]);
      expect(rest.slice(numkeys as number)).toContain([a, b][i].value);
    });
    await Promise.all([a.release(), b.release()]);
  });
});
