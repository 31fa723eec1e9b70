// onEvent on the real cluster: every acquisition, retry, extension, loss and release is reported, with
// the nodes' tally; a handler that throws never breaks the lock; no event carries a token or a lock value.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LockAcquisitionError, LockExtensionError, Redlock, type LockEvent } from "../../../src/index.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const configs = () => env.cluster.nodes.map(({ url, token }) => ({ url, token }));

/** A Redlock whose events land in `events`. */
function observed(options: ConstructorParameters<typeof Redlock>[1] = {}) {
  const events: LockEvent[] = [];
  const redlock = new Redlock(configs(), { nodeTimeout: 500, onEvent: (event) => events.push(event), ...options });
  return { redlock, events };
}

// Scripts loaded on every node first: a cold node's first EVAL is not what these tests are about.
beforeEach(() => loadScripts(env));

afterEach(async () => {
  await Promise.all(env.admins.map((a) => a.reset()));
  vi.restoreAllMocks();
});

describe("onEvent (real cluster)", () => {
  it("reports an acquisition held on the first attempt with its tally and validity, and its release", async () => {
    const { redlock, events } = observed();
    const lock = await redlock.acquire(["events:a"], 5_000);
    const acquired = events.find((e) => e.type === "acquire");
    expect(acquired).toMatchObject({
      type: "acquire",
      outcome: "held",
      kind: "lock",
      resources: ["events:a"],
      attempts: 1,
    });
    expect(acquired?.type === "acquire" && acquired.tally.granted).toBeGreaterThanOrEqual(3);
    expect(acquired?.type === "acquire" && acquired.validityMs).toBeGreaterThan(4_000);
    expect(acquired?.type === "acquire" && acquired.elapsedMs).toBeGreaterThanOrEqual(0);
    await (await lock.release()).pending;
    const released = events.find((e) => e.type === "release");
    expect(released).toMatchObject({ type: "release", kind: "lock", resources: ["events:a"], errors: 0 });
    expect(released?.type === "release" && released.released).toBeGreaterThanOrEqual(3);
    expect(events.map((e) => e.type)).toEqual(["acquire", "release"]);
  });

  it("reports each retry with its wait, then the failure with the reason and the last tally", async () => {
    const holder = await new Redlock(configs()).acquire(["events:busy"], 5_000);
    // Random retry (fair: false): the waits are retryDelay ± retryJitter.
    const { redlock, events } = observed({ retryDelay: 30, retryJitter: 10, fair: false });
    await expect(redlock.acquire(["events:busy"], 1_000, { retryCount: 2 })).rejects.toBeInstanceOf(
      LockAcquisitionError,
    );
    const retries = events.filter((e) => e.type === "retry");
    expect(retries.map((e) => e.type === "retry" && e.attempt)).toEqual([1, 2]);
    for (const retry of retries) {
      expect(retry).toMatchObject({ kind: "lock", resources: ["events:busy"], reason: "held" });
      expect(retry.type === "retry" && retry.waitMs).toBeGreaterThanOrEqual(20);
      expect(retry.type === "retry" && retry.waitMs).toBeLessThanOrEqual(40);
      expect(retry.type === "retry" && retry.tally.denied).toBeGreaterThanOrEqual(3);
    }
    const failed = events.at(-1);
    expect(failed).toMatchObject({ type: "acquire", outcome: "failed", attempts: 3, reason: "held" });
    expect(failed?.type === "acquire" && failed.tally.denied).toBeGreaterThanOrEqual(3);
    expect(failed?.type === "acquire" && failed.validityMs).toBeUndefined();
    await holder.release();
  });

  it("in the fair queue, each retry carries the waiter's place in line", async () => {
    const holder = await new Redlock(configs()).acquire(["events:line"], 5_000);
    const { redlock, events } = observed();
    // Two clients: waiters of one Redlock would take turns, the second asking only once the first is served.
    const other = new Redlock(configs(), { nodeTimeout: 500, onEvent: (event) => events.push(event) });
    const first = redlock.acquire(["events:line"], 1_000, { maxWait: 3_000 });
    await new Promise((r) => setTimeout(r, 150));
    const second = other.acquire(["events:line"], 1_000, { maxWait: 3_000 });
    await new Promise((r) => setTimeout(r, 300));
    await holder.release();
    const [a, b] = await Promise.all([first, second]);
    const places = events.flatMap((e) => (e.type === "retry" && e.position !== undefined ? [e.position] : []));
    expect(places).toContain(1);
    expect(places).toContain(2);
    await Promise.all([a.release(), b.release()]);
  });

  it("counts errors by kind in the tally: a hung node is a timeout, never its text", async () => {
    await env.admins[0].faults({ hang: true });
    await env.admins[1].faults({ status: 503 });
    await env.admins[2].faults({ garbage: "html" });
    const { redlock, events } = observed();
    await expect(redlock.acquire(["events:faulty"], 5_000, { retryCount: 0 })).rejects.toBeInstanceOf(
      LockAcquisitionError,
    );
    const failed = events.find((e) => e.type === "acquire");
    expect(failed).toMatchObject({ outcome: "failed", reason: "unreachable", tally: { granted: 2, errors: 3 } });
    const kinds = failed?.type === "acquire" ? failed.tally.errorKinds : {};
    expect(kinds).toEqual({ timeout: 1, refused: 1, reply: 1 });
    await env.admins[0].faults({ hang: false });
    await settle(env);
  });

  it("reports extensions, a failed one with its reason, and an aborted acquisition", async () => {
    const { redlock, events } = observed();
    const lock = await redlock.acquire(["events:extend"], 3_000);
    await lock.extend(6_000);
    expect(events.find((e) => e.type === "extend")).toMatchObject({ outcome: "extended", kind: "lock" });
    await lock.release();
    await expect(lock.extend(6_000)).rejects.toBeInstanceOf(LockExtensionError);
    const failed = events.filter((e) => e.type === "extend").at(-1);
    expect(failed).toMatchObject({ type: "extend", outcome: "failed", reason: "released" });
    expect(failed?.type === "extend" && failed.tally).toBeUndefined(); // nothing was sent

    const holder = await new Redlock(configs()).acquire(["events:abort"], 5_000);
    const controller = new AbortController();
    const waiting = redlock.acquire(["events:abort"], 1_000, { retryCount: -1, signal: controller.signal });
    await sleep(100);
    controller.abort(new Error("caller gave up"));
    await expect(waiting).rejects.toThrow("caller gave up");
    expect(events.at(-1)).toMatchObject({
      type: "acquire",
      outcome: "failed",
      reason: "aborted",
      resources: ["events:abort"],
    });
    await holder.release();
    await settle(env);
  });

  it("reports a lock lost while kept, and a permit's events with kind 'permit'", async () => {
    const { redlock, events } = observed({ nodeTimeout: 100 });
    const lost = redlock.using(["events:lost"], 400, async (signal) => {
      await Promise.all(env.admins.slice(0, 3).map((a) => a.pause()));
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      return signal.reason;
    });
    expect(await lost).toBeInstanceOf(LockExtensionError);
    expect(events.find((e) => e.type === "lost")).toMatchObject({ kind: "lock", resources: ["events:lost"] });
    await Promise.all(env.admins.slice(0, 3).map((a) => a.resume()));

    const permit = await redlock.semaphore("events:sem", 2).acquire(2_000);
    await permit.release();
    // The nodes just resumed: a first attempt may time out (then a retry event comes first).
    const permits = events.filter((e) => e.kind === "permit").map((e) => e.type);
    expect(permits.filter((type) => type !== "retry")).toEqual(["acquire", "release"]);
    expect(events.find((e) => e.kind === "permit")).toMatchObject({ resources: ["events:sem"], outcome: "held" });
  });

  it("a handler that throws never breaks the lock, and is reported once through console.error", async () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    let calls = 0;
    const redlock = new Redlock(configs(), {
      onEvent: () => {
        calls++;
        throw new Error("handler bug with a secret-looking value abc123");
      },
    });
    for (let i = 0; i < 3; i++) {
      const lock = await redlock.acquire([`events:throw:${i}`], 2_000);
      await lock.extend(2_000);
      await lock.release();
    }
    expect(calls).toBe(9);
    expect(error).toHaveBeenCalledTimes(1);
    expect(String(error.mock.calls[0][0])).toMatch(/onEvent handler threw on a "acquire" event/);
    expect(String(error.mock.calls[0][0])).not.toContain("abc123");
  });

  it("no event carries a node token or a lock's value", async () => {
    const { redlock, events } = observed();
    const lock = await redlock.acquire(["events:secret"], 3_000, { fencing: true });
    await lock.extend(3_000);
    const holder = lock.value;
    await expect(redlock.acquire(["events:secret"], 1_000, { retryCount: 1, retryDelay: 10 })).rejects.toThrow();
    await lock.release();
    const text = JSON.stringify(events);
    expect(events.length).toBeGreaterThanOrEqual(5);
    expect(text).not.toContain(holder);
    for (const node of env.cluster.nodes) expect(text).not.toContain(node.token);
  });

  it("refuses an onEvent that is not a function, before any request", () => {
    expect(() => new Redlock(configs(), { onEvent: "log" as never })).toThrow("options.onEvent must be a function");
  });
});
