// A waiter whose rounds look slow widens its claim window to fit two of them, but never past what two rounds can
// take when their requests are cut at nodeTimeout: a slower round means the client itself stalled (a frozen event
// loop), and a window sized by a stall would let the waiter, should it then die first in line, hold everyone behind
// it up for that long. Once past the stall, its window is at most 2 × nodeTimeout + 20 ms. The nodes' time that a
// clock refusal brings may be stale by the stall too: learning it does not use up the acquisition's one renewal, so
// the next round that did not stall corrects it.
import { describe, expect, it } from "vitest";
import { CLAIM_MS, Line, lineOptions } from "../../../src/lock/line.ts";
import type { RetryPolicy } from "../../../src/options.ts";
import type { Round } from "../../../src/quorum/fan-out.ts";
import { NodeClock, type Clock } from "../../../src/support/clock.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

const policy: RetryPolicy = {
  retryCount: -1,
  retryDelay: 200,
  retryJitter: 100,
  joins: true,
  fair: true,
  maxWait: 5_000,
};
const NODE_TIMEOUT = 500;

function line(slowRoundMs = 0): Line {
  const clock = new VirtualClock();
  return new Line(clock, new NodeClock(clock), ["q"], lineOptions(policy, NODE_TIMEOUT, { slowRoundMs }));
}

describe("a waiter's claim window after a stall", () => {
  it("widens to fit two slow rounds that nodeTimeout allows, with a quarter more", () => {
    const waiter = line();
    expect(waiter.claimMs).toBe(CLAIM_MS);
    expect(waiter.widen(300)).toBe(true);
    expect(waiter.claimMs).toBe(775);
    // A next round a little slower (up to a quarter) asks for no second widening, and so no second renewal.
    expect(waiter.widen(370)).toBe(false);
    expect(waiter.widen(400)).toBe(true);
  });

  it("stops at 2 × nodeTimeout + 20 ms after a round of 1.5 s (a stalled client)", () => {
    const waiter = line();
    expect(waiter.widen(1_500)).toBe(true);
    expect(waiter.claimMs).toBe(2 * NODE_TIMEOUT + 20);
    // Its renewed ticket (the same place in line) carries the window the nodes enforce.
    const place = waiter.ticket.slice(0, 32);
    waiter.requeue(true).renew();
    expect(waiter.ticket.slice(0, 32)).toBe(place);
    expect(waiter.ticket.slice(32, 37)).toBe(String(2 * NODE_TIMEOUT + 20).padStart(5, "0"));
    expect(waiter.widen(3_000)).toBe(false);
  });

  it("starts no wider than that when the Redlock's recent rounds include a stall", () => {
    expect(line(1_500).claimMs).toBe(2 * NODE_TIMEOUT + 20);
    expect(line(50).claimMs).toBe(CLAIM_MS);
    expect(line(300).claimMs).toBe(775);
  });
});

describe("the nodes' time learned after a stall", () => {
  const HOUR = 3_600_000;
  /** Five nodes that refused a ticket as out of step, each answering its time (the client runs an hour behind). */
  const refusedBy = (nodeTime: number): Round => {
    const votes = [0, 1, 2, 3, 4].map((node) => ({ node, outcome: "denied" as const, position: -1, nodeTime }));
    return { granted: 0, denied: 5, errors: 0, votes, settled: votes.map((v) => Promise.resolve(v)) };
  };

  it("learned from a round whose replies reached the client 1.5 s late, it is corrected by the next round", async () => {
    const clock = new VirtualClock();
    const behind: Clock = {
      now: () => clock.now(),
      epoch: () => clock.epoch() - HOUR,
      sleep: (ms, signal) => clock.sleep(ms, signal),
      timeout: (ms) => clock.timeout(ms),
    };
    const nodeClock = new NodeClock(behind);
    const waiter = new Line(clock, nodeClock, ["q"], lineOptions(policy, NODE_TIMEOUT));
    const start = clock.now();
    const answered = clock.epoch();
    await clock.advance(1_500); // the replies were read only after the stall
    expect(await waiter.learn(refusedBy(answered), 3, { start, nodeTimeout: NODE_TIMEOUT })).toBe(true);
    waiter.requeue(true).renew();
    // Stale by the stall: every ticket 1.5 s behind the nodes, out of step. It did not use up the renewal.
    expect(clock.epoch() - Number(waiter.ticket.slice(0, 16))).toBeGreaterThan(1_400);
    const next = clock.now();
    await clock.advance(20);
    expect(await waiter.learn(refusedBy(clock.epoch()), 3, { start: next, nodeTimeout: NODE_TIMEOUT })).toBe(true);
    expect(Math.abs(nodeClock.epoch() - clock.epoch())).toBeLessThan(50);
    waiter.requeue(true).renew();
    expect(Math.abs(Number(waiter.ticket.slice(0, 16)) - clock.epoch())).toBeLessThan(50);
    // A round that did not stall counts: the next one renews no more (nodes whose clocks disagree could swing it).
    await clock.advance(20);
    const later = clock.now() - 20;
    expect(await waiter.learn(refusedBy(clock.epoch() + 5_000), 3, { start: later, nodeTimeout: NODE_TIMEOUT })).toBe(
      false,
    );
  });
});
