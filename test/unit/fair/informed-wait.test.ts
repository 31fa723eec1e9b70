// How long a refused waiter may sleep before a quorum of nodes could grant it, read from the refusals of one round:
// the quorum-th soonest expiry, where nodes that answered without a holder are free now and nodes the round was
// decided without (or that failed) never make the wait shorter. A round is decided as soon as a quorum refused, so
// the missing answers are the common case, not the exception.
import { describe, expect, it } from "vitest";
import { holderFreeIn, slotFreeIn } from "../../../src/lock/wait.ts";
import type { NodeVote } from "../../../src/scripts/vote.ts";

const held = (node: number, pttl: number): NodeVote => ({ outcome: "denied", pttl, node });
const unanswered = (node: number): NodeVote => ({ outcome: "unanswered", node });
const failed = (node: number): NodeVote => ({ outcome: "error", cause: "timeout", node });
const lineOnly = (node: number): NodeVote => ({ outcome: "denied", pttl: -2, position: 1, node });
const slotsFull = (node: number, pttl: number): NodeVote => ({ outcome: "denied", pttl, free: [], node });
const slotFree = (node: number): NodeVote => ({ outcome: "denied", pttl: 900, free: [0], node });

describe("the time until a quorum could be free of the holder", () => {
  it("is the third soonest expiry when five nodes reported one", () => {
    const votes = [held(0, 100), held(1, 300), held(2, 200), held(3, 500), held(4, 400)];
    expect(holderFreeIn(votes)).toBe(300);
  });

  it("waits for all three reported expiries when the round was decided without two nodes", () => {
    const votes = [held(0, 2_990), held(1, 2_995), unanswered(2), held(3, 2_993), unanswered(4)];
    expect(holderFreeIn(votes)).toBe(2_995);
  });

  it("counts failed nodes as never free sooner than the reported ones", () => {
    const votes = [failed(0), held(1, 50), held(2, 70), held(3, 60), failed(4)];
    expect(holderFreeIn(votes)).toBe(70);
  });

  it("counts nodes that answered without a holder as free now", () => {
    const votes = [lineOnly(0), held(1, 50), held(2, 70), held(3, 60), lineOnly(4)];
    expect(holderFreeIn(votes)).toBe(50);
  });

  it("is unknown when fewer than a quorum reported a holder", () => {
    expect(holderFreeIn([held(0, 50), held(1, 70), unanswered(2), unanswered(3), unanswered(4)])).toBeUndefined();
  });

  it("is Infinity when a quorum holds a key without expiry", () => {
    expect(holderFreeIn([held(0, -1), held(1, -1), held(2, -1), unanswered(3), unanswered(4)])).toBe(
      Number.POSITIVE_INFINITY,
    );
  });
});

describe("the time until a semaphore's permit could be free on a quorum", () => {
  it("waits for all three reported expiries when the round was decided without two nodes", () => {
    const votes = [slotsFull(0, 400), unanswered(1), slotsFull(2, 450), slotsFull(3, 420), unanswered(4)];
    expect(slotFreeIn(votes)).toBe(450);
  });

  it("counts nodes with a free slot as free now", () => {
    const votes = [slotsFull(0, 400), slotFree(1), slotsFull(2, 450), slotsFull(3, 420), unanswered(4)];
    expect(slotFreeIn(votes)).toBe(420);
  });
});
