// Which limit ends an acquisition, and how long it waits between attempts, on the simulator: maxWait, when given,
// decides how long it keeps trying (retryCount does not); maxRequests caps every request it sends, undoing, leaving
// the line and subscriptions included, ends it with reason "budget", and is refused before any request when it
// cannot fit one attempt; after attempts that nodes failed, the waits back off (retryDelay ± retryJitter, doubling
// up to 8×) and never drop below retryDelay − retryJitter, even for a fair waiter the line would send back at once.
// Without maxWait, a woken waiter's retries buy it retryCount × retryDelay of waiting, and it ends once that is spent.
import { describe, expect, it } from "vitest";
import {
  InvalidArgumentError,
  LockAcquisitionError,
  Redlock,
  type AcquireOptions,
  type RedlockNode,
  type RedlockOptions,
} from "../../../src/index.ts";
import { simCluster } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

/**
 * Five simulated nodes behind wrappers that count every request sent to them. The wrappers cannot subscribe unless
 * `subscribe` (then each subscription counts one request too): without, a fair waiter asks every
 * retryDelay ± retryJitter.
 */
function setup(options: RedlockOptions = {}, { subscribe = false } = {}) {
  const clock = new VirtualClock();
  const sims = simCluster(clock);
  let sent = 0;
  const nodes: RedlockNode[] = sims.map((sim) => ({
    label: sim.label,
    run(script, keys, args, signal) {
      sent++;
      return sim.run(script, keys, args, signal);
    },
    ...(subscribe
      ? {
          subscribe(channel: string, onMessage: (payload: string) => void, signal: AbortSignal) {
            sent++;
            return sim.subscribe(channel, onMessage, signal);
          },
        }
      : {}),
  }));
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 100, ...options });
  /** When each attempt was sent (every attempt goes to every node at once). */
  const attemptsAt = () => sims[0].requests.filter((r) => r.script === "fair-acquire").map((r) => r.sentAt);
  return { clock, sims, redlock, sent: () => sent, attemptsAt };
}

/** Runs an acquisition that must fail; its error. */
async function refused(clock: VirtualClock, acquisition: Promise<unknown>): Promise<LockAcquisitionError> {
  const error = await clock.run(acquisition).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(LockAcquisitionError);
  return error as LockAcquisitionError;
}

describe("without maxWait, a woken waiter's retries buy retryCount × retryDelay of waiting", () => {
  it("it sleeps on the holder's time until that is spent, asks once then, and ends: no burst of attempts", async () => {
    const { clock, sims, redlock, attemptsAt } = setup({ retryDelay: 200, retryJitter: 100 }, { subscribe: true });
    for (const n of sims) n.set("k", "other", 60_000);
    const error = await refused(clock, redlock.acquire(["k"], 1_000));
    expect(error.reason).toBe("held");
    const at = attemptsAt();
    // Its first attempt, one when its streams confirmed, one when the 2 s its retries bought were up.
    expect(at.length).toBeLessThanOrEqual(3);
    expect(at[at.length - 1]).toBeGreaterThanOrEqual(10 * 200 - 5);
    expect(clock.now()).toBeLessThan(10 * 200 + 300);
  });

  it("retries at least once, even when its first attempt took longer than the time its retries bought", async () => {
    const { clock, sims, redlock, attemptsAt } = setup({ retryDelay: 10, retryJitter: 5 }, { subscribe: true });
    for (const n of sims) {
      n.set("k", "other", 60_000);
      n.latency = 30;
    }
    const error = await refused(clock, redlock.acquire(["k"], 1_000, { retryCount: 1 }));
    expect(error.attempts).toHaveLength(2);
    expect(attemptsAt()).toHaveLength(2);
  });
});

describe("maxWait decides over retryCount", () => {
  for (const fair of [false, true]) {
    it(`retryCount 1 with maxWait 2000 keeps trying for about 2 s (fair: ${fair})`, async () => {
      const { clock, sims, redlock, attemptsAt } = setup({ fair, retryDelay: 200, retryJitter: 100 });
      for (const n of sims) n.set("k", "other", 60_000);
      const error = await refused(clock, redlock.acquire(["k"], 1_000, { retryCount: 1, maxWait: 2_000 }));
      expect(error.reason).toBe("held");
      const at = attemptsAt();
      // Far more than retryCount + 1 attempts, the last one within one wait (at most 300 ms, and a round) of maxWait.
      expect(at.length).toBeGreaterThan(5);
      expect(error.attempts).toHaveLength(at.length);
      expect(at.at(-1)).toBeLessThanOrEqual(2_000);
      expect(at.at(-1)).toBeGreaterThanOrEqual(2_000 - 300 - 5);
      expect(clock.now()).toBeLessThan(2_000 + 100);
    });
  }

  it("without maxWait, retryCount 1 makes two attempts", async () => {
    const { clock, sims, redlock, attemptsAt } = setup({ fair: false, retryDelay: 200, retryJitter: 100 });
    for (const n of sims) n.set("k", "other", 60_000);
    const error = await refused(clock, redlock.acquire(["k"], 1_000, { retryCount: 1 }));
    expect(error.attempts).toHaveLength(2);
    expect(attemptsAt()).toHaveLength(2);
    expect(clock.now()).toBeLessThan(400);
  });
});

describe("maxRequests caps the requests of one acquisition", () => {
  const MAX = 40;
  const scenarios: {
    name: string;
    options: AcquireOptions;
    subscribe?: boolean;
    prepare(sims: ReturnType<typeof simCluster>): void;
  }[] = [
    {
      name: "held everywhere (fair: false)",
      options: { fair: false },
      prepare: (sims) => {
        for (const n of sims) n.set("k", "other", 600_000);
      },
    },
    {
      name: "split votes with a node down: every attempt is undone where it landed (fair: false)",
      options: { fair: false },
      prepare: (sims) => {
        for (const n of sims.slice(0, 2)) n.set("k", "other", 600_000);
        sims[2].mode = "down";
      },
    },
    {
      name: "fenced, held on a majority (fair: false)",
      options: { fair: false, fencing: true },
      prepare: (sims) => {
        for (const n of sims.slice(0, 3)) n.set("k", "other", 600_000);
      },
    },
    {
      name: "a fair waiter that subscribes",
      options: { fair: true },
      subscribe: true,
      prepare: (sims) => {
        for (const n of sims) n.set("k", "other", 600_000);
      },
    },
  ];

  for (const scenario of scenarios) {
    it(`never sends more than maxRequests and fails with reason "budget": ${scenario.name}`, async () => {
      const { clock, sims, redlock, sent } = setup({}, { subscribe: scenario.subscribe });
      scenario.prepare(sims);
      // No maxWait and endless retries: only the budget can end it.
      const acquisition = redlock.acquire(["k"], 1_000, { ...scenario.options, retryCount: -1, maxRequests: MAX });
      const error = await refused(clock, acquisition);
      await clock.drain(); // leaving the line, and any undo still out, are sent too
      expect(error.reason).toBe("budget");
      expect(error.message).toMatch(/maxRequests/);
      expect(error.message).toContain(String(MAX));
      expect(sent()).toBeLessThanOrEqual(MAX);
      // It stopped only when another attempt (at most 3 requests per node, and one per node to leave) could pass it.
      expect(sent()).toBeGreaterThan(MAX - 4 * sims.length);
      expect(error.attempts.length).toBeGreaterThan(1);
    });
  }

  it("does not cut short an acquisition that holds within it", async () => {
    const { clock, sims, redlock, sent } = setup({ fair: false, retryDelay: 100, retryJitter: 0 });
    for (const n of sims) n.set("k", "other", 250);
    const lock = await clock.run(redlock.acquire(["k"], 1_000, { retryCount: -1, maxRequests: MAX }));
    await clock.drain();
    expect(lock.attempts).toBeGreaterThan(1);
    expect(sent()).toBeLessThanOrEqual(MAX);
  });

  it("is refused with InvalidArgumentError, before any request, when it cannot fit one attempt", async () => {
    // Five nodes: a try sends at most 2 per node (its round, its undo), 3 with fencing; a waiter keeps 1 per node
    // in reserve to leave the line; a single try never joins the line.
    const cases: [AcquireOptions, number][] = [
      [{ retryCount: 0 }, 10],
      [{ retryCount: 3 }, 15],
      [{ maxWait: 1_000 }, 15],
      [{ retryCount: 3, fencing: true }, 20],
      [{ retryCount: 0, fencing: true }, 15],
    ];
    for (const [options, least] of cases) {
      const { clock, redlock, sent } = setup({ fair: false });
      const error = await clock
        .run(redlock.acquire(["k"], 1_000, { ...options, maxRequests: least - 1 }))
        .catch((e: unknown) => e);
      expect(error, JSON.stringify(options)).toBeInstanceOf(InvalidArgumentError);
      expect((error as InvalidArgumentError).argument).toBe("options.maxRequests");
      expect((error as Error).message).toContain(String(least));
      expect(sent()).toBe(0);
      // The least that fits one attempt is accepted, and the free lock is taken.
      const lock = await clock.run(redlock.acquire(["k"], 1_000, { ...options, maxRequests: least }));
      expect(lock.resources).toEqual(["k"]);
      expect(sent()).toBeLessThanOrEqual(least);
    }
  });
});

describe("backoff after attempts that nodes failed", () => {
  const retryDelay = 100;
  const retryJitter = 50;
  /** The documented growth: the n-th failed attempt in a row waits retryDelay ± retryJitter times this. */
  const factor = (n: number) => Math.min(8, 2 ** (n - 1));

  for (const fair of [true, false]) {
    it(`waits grow, and never drop below retryDelay − retryJitter (fair: ${fair})`, async () => {
      const { clock, sims, redlock } = setup({ fair, retryDelay, retryJitter });
      // Three of five nodes fail, after the other two granted: a split vote that cannot reach a quorum, after which
      // the line alone would send a fair waiter back within a few ms (see the control below).
      for (const n of sims.slice(0, 3)) {
        n.mode = "down";
        n.latency = 5;
      }
      const error = await refused(clock, redlock.acquire(["k"], 1_000, { retryCount: 6 }));
      expect(error.reason).toBe("unreachable");
      expect(error.attempts).toHaveLength(7);
      for (const tally of error.attempts) expect(tally).toMatchObject({ granted: 2, errors: 3 });
      expect(clock.sleeps).toHaveLength(6);
      clock.sleeps.forEach((ms, i) => {
        expect(ms, `wait ${i + 1}`).toBeGreaterThanOrEqual(factor(i + 1) * (retryDelay - retryJitter));
        expect(ms, `wait ${i + 1}`).toBeLessThanOrEqual(factor(i + 1) * (retryDelay + retryJitter));
      });
      // From the third failure on, longer than any wait retryDelay ± retryJitter could draw.
      for (const ms of clock.sleeps.slice(2)) expect(ms).toBeGreaterThan(retryDelay + retryJitter);
      await clock.drain();
      expect(sims.flatMap((n) => n.liveKeys())).toEqual([]);
    });
  }

  it("control: the same split vote without node errors sends a fair waiter back within a few ms", async () => {
    const { clock, sims, redlock } = setup({ fair: true, retryDelay, retryJitter });
    // The holder kept the key on three nodes only: two grant, then three refuse; no node fails.
    for (const n of sims.slice(0, 3)) {
      n.set("k", "other", 60_000);
      n.latency = 5;
    }
    const error = await refused(clock, redlock.acquire(["k"], 1_000, { retryCount: 2 }));
    expect(error.reason).toBe("held");
    for (const tally of error.attempts) expect(tally).toMatchObject({ granted: 2, denied: 3, errors: 0 });
    expect(clock.sleeps).toHaveLength(2);
    for (const ms of clock.sleeps) expect(ms).toBeLessThan(retryDelay - retryJitter);
  });
});
