// Waiters of one Redlock on the same lock take turns to wait on the nodes: in call order, each when the one before
// is done, or after LOCAL_TURN_MS (or its maxWait) when the one before never ends; an abort while waiting its turn
// rejects with the caller's reason and holds nobody up; nothing is kept once its waiters are gone.
import { describe, expect, it } from "vitest";
import { LOCAL_TURN_MS, LocalLine } from "../../../src/lock/local-line.ts";
import { systemClock } from "../../../src/support/clock.ts";

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("the turns of one Redlock's waiters", () => {
  it("go in call order, each once the one before is done", async () => {
    const line = new LocalLine();
    const order: string[] = [];
    const first = await line.enter("L", systemClock, 5_000);
    const waiting = ["b", "c"].map((name) =>
      line.enter("L", systemClock, 5_000).then((leave) => {
        order.push(name);
        return leave;
      }),
    );
    await tick();
    expect(order).toEqual([]);
    first();
    const leaveB = await waiting[0];
    await tick();
    expect(order).toEqual(["b"]);
    leaveB();
    (await waiting[1])();
    expect(order).toEqual(["b", "c"]);
    expect(line.size).toBe(0);
  });

  it("do not hold up other locks", async () => {
    const line = new LocalLine();
    const leaveA = await line.enter("A", systemClock, 5_000);
    const leaveB = await line.enter("B", systemClock, 5_000);
    leaveA();
    leaveB();
    expect(line.size).toBe(0);
  });

  it("come after LOCAL_TURN_MS, or the caller's maxWait if shorter, when the one before never ends", async () => {
    const line = new LocalLine();
    const stuck = await line.enter("L", systemClock, 5_000);
    const began = performance.now();
    const leave = await line.enter("L", systemClock, 150);
    const waited = performance.now() - began;
    expect(waited).toBeGreaterThanOrEqual(140);
    expect(waited).toBeLessThan(LOCAL_TURN_MS);
    // The one that never ended passes nothing when it ends at last; the one that took its turn does.
    const third = line.enter("L", systemClock, 5_000);
    stuck();
    let given = false;
    void third.then(() => (given = true));
    await tick();
    expect(given).toBe(false);
    leave();
    (await third)();
    expect(line.size).toBe(0);
  });

  it("reject with the caller's reason on abort, and the next one is not held up by it", async () => {
    const line = new LocalLine();
    const first = await line.enter("L", systemClock, 5_000);
    const caller = new AbortController();
    const aborted = line.enter("L", systemClock, 5_000, caller.signal);
    const next = line.enter("L", systemClock, 5_000);
    const reason = new Error("the caller gave up");
    caller.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    first();
    (await next)();
    expect(line.size).toBe(0);
  });

  it("pass an abort's turn on when the turn came in the same task", async () => {
    const line = new LocalLine();
    const first = await line.enter("L", systemClock, 5_000);
    const caller = new AbortController();
    const aborted = line.enter("L", systemClock, 5_000, caller.signal);
    const next = line.enter("L", systemClock, 5_000);
    await tick();
    first(); // gives the turn to the one that aborts next
    caller.abort(new Error("gone"));
    await expect(aborted).rejects.toThrow();
    const began = performance.now();
    (await next)();
    // Handed on by the abort, not by LOCAL_TURN_MS.
    expect(performance.now() - began).toBeLessThan(LOCAL_TURN_MS / 2);
    expect(line.size).toBe(0);
  });

  it("ring, per line of the lock released, the waiter with the smallest ticket, and no other", () => {
    const line = new LocalLine();
    const rung: string[] = [];
    const stopLate = line.listen(
      ["A"],
      () => "0002",
      () => rung.push("A late"),
    );
    const stopEarly = line.listen(
      ["A"],
      () => "0001",
      () => rung.push("A early"),
    );
    const stopB = line.listen(
      ["B"],
      () => "0000",
      () => rung.push("B"),
    );
    const stopBoth = line.listen(
      ["A", "C"],
      () => "0003",
      () => rung.push("A and C"),
    );
    line.ring(["A"]);
    expect(rung).toEqual(["A early"]);
    stopEarly();
    line.ring(["A"]);
    expect(rung).toEqual(["A early", "A late"]);
    stopLate();
    // A lock on C and B wakes the first of each, once.
    line.ring(["C", "B"]);
    expect(rung).toEqual(["A early", "A late", "A and C", "B"]);
    stopBoth();
    stopB();
    expect(line.size).toBe(0);
  });

  it("tell a lock of this Redlock holds every line asked, while it is valid", () => {
    const line = new LocalLine();
    let validity = 1_000;
    line.hold(["A", "B"], {
      get validityMs() {
        return validity;
      },
    });
    expect(line.heldHere(["A"])).toBe(true);
    expect(line.heldHere(["A", "B"])).toBe(true);
    expect(line.heldHere(["A", "C"])).toBe(false);
    validity = 0;
    expect(line.heldHere(["A"])).toBe(false);
    validity = 1_000;
    line.ring(["A", "B"]);
    expect(line.heldHere(["B"])).toBe(false);
    expect(line.size).toBe(0);
  });
});
