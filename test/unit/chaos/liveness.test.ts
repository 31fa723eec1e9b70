// The chaos report's liveness figures: the longest stretch with no section on a mutex, and how much of one stretch
// a client of that mutex was free to contend (not held back by a targeted scenario, not crashed), with the
// acquisitions given up on it then, by reason, and the bed's own stalls (threads whose event loop could not run).
import { describe, expect, it } from "vitest";
import { liveness } from "../../../chaos/liveness.ts";
import type { ChaosRecord, CriticalSectionRecord } from "../../../chaos/records.ts";

const A = "chaos:resource:a";
const cs = (client: number, start: number, end: number): CriticalSectionRecord => ({
  type: "cs",
  id: `${client}.${start}`,
  client,
  resource: A,
  acquireCalled: start - 1,
  start,
  validityEnd: start + 800,
  readAccepted: true,
  readDone: start + 1,
  read: 0,
  end,
  stalledMs: 0,
});
const start: ChaosRecord = {
  type: "start",
  seed: 1,
  unsafeRestart: false,
  clients: 2,
  ttl: 1000,
  at: 0,
  resources: [{ name: A, limit: 1 }],
};
const state = (client: number, at: number, s: "running" | "paused"): ChaosRecord => ({
  type: "client-state",
  client,
  at,
  state: s,
});

describe("chaos liveness", () => {
  it("counts only the time a client of the mutex was free to contend, and the give-ups in it by reason", () => {
    const records: ChaosRecord[] = [
      start,
      state(0, 0, "running"),
      state(1, 0, "running"),
      cs(0, 10, 20),
      // 20–10_020: no section. Client 0 is held back 1_000–5_000, client 1 1_000–4_000 then crashed 6_000–9_000.
      state(0, 1_000, "paused"),
      state(1, 1_000, "paused"),
      state(1, 4_000, "running"),
      { type: "miss", client: 1, resource: A, at: 4_900, reason: "LockAcquisitionError", detail: "unreachable, 3" },
      state(0, 5_000, "running"),
      { type: "crash", client: 1, at: 6_000, reason: "random" },
      state(1, 9_000, "running"),
      { type: "miss", client: 0, resource: A, at: 9_500, reason: "LockAcquisitionError", detail: "held, 9" },
      { type: "miss", client: 0, resource: "elsewhere", at: 9_600, reason: "LockAcquisitionError", detail: "held, 1" },
      cs(1, 10_020, 10_030),
      // 10_030–12_030: no section, everyone free all along.
      cs(0, 12_030, 12_040),
    ];
    const l = liveness(records);
    expect(l.longestIdleMs).toBe(10_000);
    // Free: 20–1_000 and 4_000–10_020 (client 1 from 4_000 to 6_000, client 0 from 5_000 on).
    expect(l.longestFreeIdleMs).toBe(980 + 6_020);
    expect(l.longestFreeIdleAt).toContain("given up in it: unreachable 1, held 1");
  });

  it("counts a whole stretch as free in a log without client states", () => {
    const l = liveness([start, cs(0, 10, 20), cs(1, 3_020, 3_030), cs(0, 3_100, 3_200)]);
    expect(l.longestIdleMs).toBe(3_000);
    expect(l.longestFreeIdleMs).toBe(3_000);
    expect(l.longestFreeIdleAt).toContain("given up in it: none");
  });

  it("counts the bed's stalls over a second by thread, and names those within the longest free stretch", () => {
    const l = liveness([
      start,
      cs(0, 10, 20),
      // 20–4_020: no section. The main thread (the bridges) stalls 2.4 s in it, client 1 0.6 s.
      { type: "stall", at: 3_000, maxMs: 2_400 },
      { type: "stall", client: 1, at: 3_100, maxMs: 600 },
      cs(1, 4_020, 4_030),
      // After it: a client thread stalls 1.2 s, a stretch of 100 ms.
      { type: "stall", client: 0, at: 5_100, maxMs: 1_200 },
      { type: "stall", at: 6_000, maxMs: 300 },
      cs(0, 4_130, 4_140),
    ]);
    expect(l.stallsInFreeIdle).toBe("main 2400 ms, client 1 600 ms");
    // Over 1 s: the main thread's 2.4 s and client 0's 1.2 s (not the 600 ms or 300 ms ones).
    expect(l.stalls).toMatchObject({ main: 1, clients: 1, longestMs: 2_400 });
    expect(l.stalls.longestAt).toContain("main");
  });

  it("reports no stall in a stretch without any", () => {
    const l = liveness([start, cs(0, 10, 20), { type: "stall", at: 9_000, maxMs: 1_500 }, cs(1, 3_020, 3_030)]);
    expect(l.stallsInFreeIdle).toBe("none over 250 ms");
    expect(l.stalls.main).toBe(1);
  });
});
