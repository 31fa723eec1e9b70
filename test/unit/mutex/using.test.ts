// using() on the simulator: it extends whenever half the ttl is left and releases at the end, also when the routine
// throws (rethrowing its error) and at the end of an `await using` scope; it aborts the routine's signal when a majority
// goes down (LockExtensionError), at the expiry while an extension still hangs, at maxHold (MaxHoldError, no further
// extension), and passes the caller's abort on; once the routine returned, its signal is left as it was.
import { describe, expect, it } from "vitest";
import { LockExtensionError, MaxHoldError } from "../../../src/index.ts";
import type { VirtualClock } from "../../sim/virtual-clock.ts";
import { simSetup } from "../../sim/sim-redlock.ts";

/** A routine that waits `ms` of virtual time or until its signal aborts, and reports which. */
const waitOrAbort =
  (clock: VirtualClock, ms: number) =>
  (signal: AbortSignal): Promise<{ aborted: boolean; at: number; reason?: unknown }> =>
    clock.sleep(ms, signal).then(
      () => ({ aborted: false, at: clock.now() }),
      () => ({ aborted: true, at: clock.now(), reason: signal.reason as unknown }),
    );

describe("using", () => {
  it("extends before validity runs out, each time half the ttl is left, and releases at the end", async () => {
    const { clock, nodes, redlock } = simSetup();
    const result = await clock.run(redlock.using(["job"], 1_000, waitOrAbort(clock, 2_600)));
    expect(result.aborted).toBe(false);
    const extends_ = nodes[0].requests.filter((r) => r.script === "extend").map((r) => r.sentAt);
    // validity ends at t1 + ttl − drift (12 ms); the next extension starts when 500 ms of it are left.
    expect(extends_).toEqual([488, 976, 1_464, 1_952, 2_440]);
    await clock.drain(); // using() returned once a quorum answered the release; the rest lands now
    expect(nodes.flatMap((n) => n.liveKeys())).toEqual([]);
    expect(nodes[0].requests.at(-1)?.script).toMatch(/^(release|leave)$/);
  });

  it("aborts the routine's signal with LockExtensionError when a majority goes down mid-routine", async () => {
    const { clock, nodes, redlock } = simSetup();
    clock.schedule(700, () => {
      for (const n of nodes.slice(0, 3)) n.mode = "down";
    });
    const result = await clock.run(redlock.using(["job"], 1_000, waitOrAbort(clock, 10_000)));
    expect(result.aborted).toBe(true);
    expect(result.reason).toBeInstanceOf(LockExtensionError);
    expect((result.reason as LockExtensionError).reason).toBe("unreachable");
    expect(result.at).toBeLessThan(1_000);
  });

  it("aborts at the expiry, as a safety net, while an extension round is still hanging", async () => {
    const { clock, nodes, redlock } = simSetup({ nodeTimeout: 300 });
    let deadline = 0;
    const routine = async (signal: AbortSignal, lock: { validityMs: number }) => {
      deadline = clock.now() + lock.validityMs;
      for (const n of nodes) n.mode = "hang";
      return waitOrAbort(clock, 10_000)(signal);
    };
    const result = await clock.run(redlock.using(["job"], 1_000, routine, { extendThreshold: 100 }));
    expect(result.aborted).toBe(true);
    expect(result.at).toBe(deadline);
    expect((result.reason as LockExtensionError).reason).toBe("lost");
  });

  it("aborts with MaxHoldError when maxHold is reached, and stops extending", async () => {
    const { clock, nodes, redlock } = simSetup();
    const result = await clock.run(redlock.using(["job"], 1_000, waitOrAbort(clock, 10_000), { maxHold: 1_700 }));
    expect(result.reason).toBeInstanceOf(MaxHoldError);
    expect(result.at).toBe(1 + 1_700);
    expect(nodes[0].requests.filter((r) => r.script === "extend").length).toBe(3);
  });

  it("releases when the routine throws and rethrows its error", async () => {
    const { clock, nodes, redlock } = simSetup();
    const boom = new Error("routine failed");
    const outcome = clock.run(
      redlock.using(["job"], 1_000, async () => {
        await clock.sleep(50);
        throw boom;
      }),
    );
    await expect(outcome).rejects.toBe(boom);
    await clock.drain();
    expect(nodes.flatMap((n) => n.liveKeys())).toEqual([]);
  });

  it("passes the caller's abort on to the routine", async () => {
    const { clock, redlock } = simSetup();
    const controller = new AbortController();
    clock.schedule(300, () => controller.abort(new Error("shutdown")));
    const result = await clock.run(
      redlock.using(["job"], 1_000, waitOrAbort(clock, 10_000), { signal: controller.signal }),
    );
    expect(result).toMatchObject({ aborted: true, at: 300 });
    expect(String(result.reason)).toContain("shutdown");
  });

  it("leaves the routine's signal unaborted once it returned, and no listener on the caller's signal", async () => {
    const { clock, redlock } = simSetup();
    const caller = new AbortController();
    let held = 0;
    const add = caller.signal.addEventListener.bind(caller.signal);
    const remove = caller.signal.removeEventListener.bind(caller.signal);
    caller.signal.addEventListener = ((type: string, listener: EventListener, options?: AddEventListenerOptions) => {
      if (type === "abort") held++;
      add(type, listener, options);
    }) as typeof caller.signal.addEventListener;
    caller.signal.removeEventListener = ((type: string, listener: EventListener) => {
      if (type === "abort") held--;
      remove(type, listener);
    }) as typeof caller.signal.removeEventListener;
    // The runtime has no AbortSignal.any: the library combines signals with listeners of its own.
    const any = AbortSignal.any;
    (AbortSignal as { any?: unknown }).any = undefined;
    try {
      const signals: AbortSignal[] = [];
      for (let i = 0; i < 20; i++)
        await clock.run(
          redlock.using(["job"], 1_000, (signal) => void signals.push(signal), { signal: caller.signal }),
        );
      expect(held).toBe(0);
      // Work the routine handed back (a response body still being read) may still use it.
      expect(signals.some((s) => s.aborted)).toBe(false);
      expect(caller.signal.aborted).toBe(false);
    } finally {
      AbortSignal.any = any;
    }
  });

  it("releases at the end of an `await using` scope", async () => {
    const { clock, nodes, redlock } = simSetup();
    await clock.run(
      (async () => {
        await using lock = await redlock.acquire(["scoped"], 1_000);
        expect(nodes[0].get("scoped")).toBe(lock.value);
      })(),
    );
    await clock.drain();
    expect(nodes.flatMap((n) => n.liveKeys())).toEqual([]);
  });
});
