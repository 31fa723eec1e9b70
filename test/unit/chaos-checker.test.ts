// The chaos checker must be able to fire: synthetic logs with each kind of violation, and a clean one.
import { describe, expect, it } from "vitest";
import { check } from "../../chaos/checker.ts";
import type { ChaosRecord, CriticalSectionRecord } from "../../chaos/records.ts";

const cs = (client: number, fence: number, start: number, end: number, extra: Partial<CriticalSectionRecord> = {}): CriticalSectionRecord => ({
  type: "cs",
  client,
  fence: String(fence),
  start,
  validityEnd: start + 800,
  readAccepted: true,
  readDone: start + 5,
  read: fence - 1,
  writeSent: end - 5,
  writeAccepted: true,
  end,
  stalledMs: 0,
  ...extra,
});
const start: ChaosRecord = { type: "start", seed: 1, unsafeRestart: false, clients: 2, ttl: 1000, at: 0 };
const final = (counter: number): ChaosRecord => ({ type: "final", at: 99_999, counter });

describe("chaos checker", () => {
  it("passes a clean run", () => {
    const report = check([start, cs(0, 1, 0, 100), cs(1, 2, 200, 300), cs(0, 3, 400, 500), final(3)]);
    expect(report.violations).toEqual([]);
    expect(report).toMatchObject({ cycles: 3, overlaps: 0, acceptedWrites: 3, finalCounter: 3 });
  });

  it("finds two critical sections that overlap within validity", () => {
    const report = check([start, cs(0, 1, 0, 300), cs(1, 2, 200, 400, { read: 1 }), final(2)]);
    expect(report.overlaps).toBe(1);
    expect(report.violations.join()).toContain("overlapping");
  });

  it("does not count the part of a stalled section that ran past its validity", () => {
    const stalled = cs(0, 1, 0, 2_500, { validityEnd: 800, writeAccepted: false, stalledMs: 2_400 });
    const report = check([start, stalled, cs(1, 2, 1_000, 1_100, { read: 0 }), final(1)]);
    expect(report.overlaps).toBe(0);
    expect(report.staleRejected).toBe(1);
    expect(report.violations).toEqual([]);
  });

  it("finds a stale write that was accepted after a newer holder's read", () => {
    const stale = cs(0, 1, 0, 2_500, { validityEnd: 800, writeSent: 2_400, writeAccepted: true, read: 0 });
    const report = check([start, stale, cs(1, 2, 1_000, 1_100, { read: 0 }), final(1)]);
    expect(report.staleAccepted).toBe(1);
    expect(report.duplicateValues).toBe(1);
    expect(report.lostUpdates).toBe(1);
  });

  it("finds fencing tokens that go backwards", () => {
    const report = check([start, cs(0, 5, 0, 100), cs(1, 4, 200, 300, { read: 5 }), final(2)]);
    expect(report.fenceRegressions).toBe(1);
  });
});
