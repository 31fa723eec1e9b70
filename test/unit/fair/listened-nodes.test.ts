// Which nodes a waiter listens on: with two streams, the node that answered first and a random other; with one, a
// random node. So the line's streams spread over the nodes that answered, and the head still hears the fastest.
import { describe, expect, it } from "vitest";
import { listenedNodes } from "../../../src/lock/waker.ts";

describe("listenedNodes", () => {
  it("two streams: the first to answer among the eligible, and another eligible node", () => {
    for (let i = 0; i < 200; i++) {
      const [first, second] = listenedNodes([0, 1, 2, 4], [3, 2, 0], 2);
      // 3 answered first but cannot be listened on (not eligible): 2 is the fastest eligible.
      expect(first).toBe(2);
      expect([0, 1, 4]).toContain(second);
    }
  });

  it("the second stream and a single stream land on every eligible node over many waiters", () => {
    const seconds = new Set<number>();
    const singles = new Set<number>();
    for (let i = 0; i < 300; i++) {
      seconds.add(listenedNodes([0, 1, 2, 3, 4], [0, 1, 2, 3, 4], 2)[1]);
      singles.add(listenedNodes([0, 1, 2, 3, 4], [0, 1, 2, 3, 4], 1)[0]);
    }
    expect([...seconds].sort()).toEqual([1, 2, 3, 4]);
    expect([...singles].sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it("never more than asked, never a node twice, never one that is not eligible", () => {
    expect(listenedNodes([2], [2], 2)).toEqual([2]);
    expect(listenedNodes([], [0, 1], 2)).toEqual([]);
    const both = listenedNodes([1, 3], [], 2);
    expect(both.sort()).toEqual([1, 3]);
    expect(listenedNodes([0, 1, 2], [1], 3).sort()).toEqual([0, 1, 2]);
  });
});
