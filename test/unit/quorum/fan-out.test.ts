// fanOut, the one round every operation goes through: it decides success as soon as a quorum granted and failure as
// soon as a quorum is impossible (or waits for every node when asked); it cuts a request that does not answer within
// nodeTimeout (on the real clock too) and counts it as an error, as it counts a rejected ask, never as a grant; it
// cancels stragglers once decided when asked to, or keeps them and reports their late votes; and it never aborts a
// request that has already settled, neither by the decision nor by the deadline.
import { describe, expect, it } from "vitest";
import { fanOut, type Ask } from "../../../src/quorum/fan-out.ts";
import type { Vote } from "../../../src/scripts/vote.ts";
import { systemClock } from "../../../src/support/clock.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

/** Node i answers `votes[i]` after `delays[i]` ms (undefined delay: never answers). */
function scripted(clock: VirtualClock, votes: Vote[], delays: (number | undefined)[], cut: number[] = []): Ask {
  return (node, signal) =>
    new Promise((resolve) => {
      let answered = false;
      signal.addEventListener("abort", () => {
        if (answered) return;
        cut.push(node);
        resolve({ outcome: "error", cause: "timeout" });
      });
      const delay = delays[node];
      if (delay !== undefined)
        clock.schedule(delay, () => {
          answered = true;
          resolve(votes[node]);
        });
    });
}

const G: Vote = { outcome: "granted" };
const D: Vote = { outcome: "denied", pttl: 900 };
const E: Vote = { outcome: "error", cause: "HTTP 500" };
const options = (clock: VirtualClock) => ({
  quorum: 3,
  nodeTimeout: 1_000,
  clock,
  decide: "outcome" as const,
  cancelStragglers: false,
});

describe("fanOut", () => {
  it("decides success as soon as a quorum granted, without waiting for the slow nodes", async () => {
    const clock = new VirtualClock();
    const round = await clock.run(fanOut(5, scripted(clock, [G, G, G, G, G], [10, 20, 30, 700, 800]), options(clock)));
    expect(clock.now()).toBe(30);
    expect(round.granted).toBe(3);
    expect(round.votes.map((v) => v.outcome)).toEqual(["granted", "granted", "granted", "unanswered", "unanswered"]);
  });

  it("decides failure as soon as a quorum is impossible", async () => {
    const clock = new VirtualClock();
    const round = await clock.run(fanOut(5, scripted(clock, [D, E, D, G, G], [10, 20, 30, 700, 800]), options(clock)));
    expect(clock.now()).toBe(30);
    expect([round.granted, round.denied, round.errors]).toEqual([0, 2, 1]);
  });

  it("waits for every node when not deciding early", async () => {
    const clock = new VirtualClock();
    const round = await clock.run(
      fanOut(5, scripted(clock, [G, G, G, G, D], [10, 20, 30, 700, 800]), {
        ...options(clock),
        decide: "all" as const,
      }),
    );
    expect(clock.now()).toBe(800);
    expect([round.granted, round.denied]).toEqual([4, 1]);
  });

  it("cuts a request that does not answer within nodeTimeout and counts it as an error", async () => {
    const clock = new VirtualClock();
    const cut: number[] = [];
    const round = await clock.run(
      fanOut(5, scripted(clock, [G, G, D, D, G], [10, 20, 30, 40, undefined], cut), {
        ...options(clock),
        decide: "all" as const,
      }),
    );
    expect(clock.now()).toBe(1_000);
    expect(cut).toEqual([4]);
    expect(round.votes[4]).toEqual({ outcome: "error", cause: "timeout", node: 4 });
  });

  it("cancels stragglers once decided when asked to", async () => {
    const clock = new VirtualClock();
    const cut: number[] = [];
    await clock.run(
      fanOut(5, scripted(clock, [G, G, G, G, G], [10, 20, 30, 500, 600], cut), {
        ...options(clock),
        cancelStragglers: true,
      }),
    );
    await clock.drain();
    expect(cut.sort()).toEqual([3, 4]);
  });

  it("keeps stragglers running for acquire rounds and reports their late votes through settled", async () => {
    const clock = new VirtualClock();
    const cut: number[] = [];
    const round = await clock.run(
      fanOut(5, scripted(clock, [G, G, G, D, G], [10, 20, 30, 500, 600], cut), options(clock)),
    );
    const late = await clock.run(Promise.all(round.settled));
    expect(cut).toEqual([]);
    expect(late.map((v) => v.outcome)).toEqual(["granted", "granted", "granted", "denied", "granted"]);
  });

  it("counts a rejected ask as an error, never a grant", async () => {
    const clock = new VirtualClock();
    const ask: Ask = (node) => (node < 3 ? Promise.reject(new Error("boom")) : Promise.resolve(G));
    const round = await clock.run(fanOut(5, ask, options(clock)));
    expect(round.errors).toBe(3);
    expect(round.granted).toBeLessThan(3);
  });
});

describe("fanOut on the real clock", () => {
  it("a round's requests are cut at nodeTimeout on the real clock, and only the ones still out", async () => {
    const signals: AbortSignal[] = [];
    const round = await fanOut(
      5,
      (node, signal) => {
        signals.push(signal);
        // nodes 0-2 answer at once, 3 and 4 never (they answer only when cut)
        if (node < 3) return Promise.resolve<Vote>({ outcome: "granted" });
        return new Promise<Vote>((resolve) =>
          signal.addEventListener("abort", () => resolve({ outcome: "error", cause: "timeout" })),
        );
      },
      { quorum: 3, nodeTimeout: 40, clock: systemClock, decide: "all", cancelStragglers: false },
    );
    expect([round.granted, round.errors]).toEqual([3, 2]);
    expect(signals.map((s) => s.aborted)).toEqual([false, false, false, true, true]);
    expect((signals[3].reason as DOMException).name).toBe("TimeoutError");
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
    await clock.run(
      fanOut(5, ask, { quorum: 3, nodeTimeout: 1_000, clock, decide: "outcome", cancelStragglers: true }),
    );
    await clock.drain();
    expect(signals.map((s) => s.aborted)).toEqual([false, false, false, true, true]);
  });
});
