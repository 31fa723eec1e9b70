// A waiter whose rounds look slow widens its claim window to fit two of them, but never past what two rounds can
// take when their requests are cut at nodeTimeout: a slower round means the client itself stalled (a frozen event
// loop), and a window sized by a stall would let the waiter, should it then die first in line, hold everyone behind
// it up for that long. Once past the stall, its window is at most 2 × nodeTimeout + 20 ms.
import { describe, expect, it } from "vitest";
import { CLAIM_MS, Line, lineOptions } from "../../../src/lock/line.ts";
import type { RetryPolicy } from "../../../src/options.ts";
import { NodeClock } from "../../../src/support/clock.ts";
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
  it("widens to fit two slow rounds that nodeTimeout allows", () => {
    const waiter = line();
    expect(waiter.claimMs).toBe(CLAIM_MS);
    expect(waiter.widen(300)).toBe(true);
    expect(waiter.claimMs).toBe(620);
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
    expect(line(300).claimMs).toBe(620);
  });
});
