// The chaos checker must be able to fire: synthetic logs with each kind of violation, and a clean one.
import { describe, expect, it } from "vitest";
import { check } from "../../../chaos/checker.ts";
import type {
  ChaosRecord,
  CrashRecord,
  CriticalSectionRecord,
  Cut,
  EnterRecord,
  FaultKind,
  FaultRecord,
} from "../../../chaos/records.ts";

const cs = (
  client: number,
  fence: number,
  start: number,
  end: number,
  extra: Partial<CriticalSectionRecord> = {},
): CriticalSectionRecord => ({
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

const enter = (client: number, fence: number, start: number, extra: Partial<EnterRecord> = {}): EnterRecord => ({
  type: "enter",
  id: `${client}.0.${fence}`,
  client,
  fence: String(fence),
  acquireCalled: start - 50,
  start,
  validityEnd: start + 800,
  ...extra,
});
const crash = (client: number, at: number, reason: CrashRecord["reason"] = "nemesis"): CrashRecord => ({
  type: "crash",
  client,
  at,
  reason,
});
const partition = (kind: FaultKind, cuts: Cut[]): FaultRecord => ({
  type: "fault",
  kind,
  target: "test",
  at: Math.min(...cuts.map((c) => c.from)),
  until: Math.max(...cuts.map((c) => c.to)),
  cuts,
});

describe("chaos checker: client crashes", () => {
  it("ends a crashed holder's section at the crash: a later holder is no overlap, and the lock came free in time", () => {
    // Client 0 entered at 0 (valid until 800) and was terminated at 300; client 1 began at 500.
    const report = check([start, enter(0, 1, 0), crash(0, 300), cs(1, 2, 500, 600, { read: 0 }), final(1)]);
    expect(report.overlaps).toBe(0);
    expect(report).toMatchObject({
      crashes: 1,
      crashesInSection: 1,
      crashesJudged: 1,
      locksNotFreed: 0,
      slowestFreeMs: 500,
    });
    expect(report.unknownWrites).toBe(1);
    expect(report.violations).toEqual([]);
  });

  it("still finds a holder that began before the crash, while the crashed section was valid", () => {
    const report = check([start, enter(0, 1, 0), cs(1, 2, 200, 300, { read: 0 }), crash(0, 300), final(1)]);
    expect(report.overlaps).toBe(1);
    expect(report.violations.join()).toContain("overlapping");
  });

  it("a section whose client never reported and never crashed stays open until its validity ends", () => {
    const report = check([start, enter(0, 1, 0), cs(1, 2, 500, 600, { read: 0 }), final(1)]);
    expect(report.overlaps).toBe(1);
  });

  it("prefers the finished record when the client reported before it was terminated", () => {
    const entered = enter(0, 1, 0);
    const finished = cs(0, 1, 0, 100, { id: entered.id, read: 0 });
    const report = check([
      start,
      entered,
      finished,
      crash(0, 120, "random"),
      cs(1, 2, 150, 250, { read: 1 }),
      final(2),
    ]);
    expect(report).toMatchObject({ overlaps: 0, crashesInSection: 0, unknownWrites: 0 });
    expect(report.violations).toEqual([]);
  });

  it("fails a quiet crash whose lock nobody took within ttl + slack", () => {
    const report = check([start, enter(0, 1, 0), crash(0, 300), cs(1, 2, 2_500, 2_600, { read: 0 }), final(1)]);
    expect(report.locksNotFreed).toBe(1);
    expect(report.violations.join()).toContain("not taken again");
  });

  it("does not judge a crash while another fault was in force, and says so if no crash could be judged", () => {
    const hang: FaultRecord = { type: "fault", kind: "hang", target: "node 0", at: 1_000, until: 1_500 };
    const report = check([start, enter(0, 1, 0), crash(0, 300), hang, cs(1, 2, 2_500, 2_600, { read: 0 }), final(1)]);
    expect(report).toMatchObject({ crashesInSection: 1, crashesJudged: 0, locksNotFreed: 0 });
    expect(report.violations.join()).toContain("no crash could be judged");
  });
});

describe("chaos checker: partitions", () => {
  it("finds both sides of a split holding within validity, and names the partition", () => {
    const split = partition("partition-split", [
      { clients: [0], nodes: [3, 4], from: 0, to: 2_000 },
      { clients: [1], nodes: [0, 1], from: 0, to: 2_000 },
    ]);
    const report = check([start, split, cs(0, 1, 100, 500), cs(1, 2, 300, 600, { read: 1 }), final(2)]);
    expect(report.overlaps).toBe(1);
    expect(report.overlapExamples[0]).toContain("during partition-split");
  });

  it("fails a grant to a client cut off from a majority for its whole acquisition", () => {
    const minority = partition("partition-minority", [{ clients: [2], nodes: [0, 1, 2], from: 0, to: 2_000 }]);
    const report = check([start, minority, cs(2, 1, 300, 400, { acquireCalled: 100 }), final(1)]);
    expect(report.minorityGrants).toBe(1);
    expect(report.violations.join()).toContain("minority");
  });

  it("does not count a grant whose acquisition began before the cut, or by a client on the majority side", () => {
    const minority = partition("partition-minority", [{ clients: [2], nodes: [0, 1, 2], from: 200, to: 2_000 }]);
    const report = check([
      start,
      minority,
      cs(2, 1, 300, 400, { acquireCalled: 100 }),
      cs(0, 2, 500, 600, { acquireCalled: 450, read: 1 }),
      final(2),
    ]);
    expect(report.minorityGrants).toBe(0);
    expect(report.violations).toEqual([]);
  });

  it("counts a node cut off for everybody (the nemesis' cut) together with a client's own cut", () => {
    const nemesisCut: FaultRecord = {
      ...partition("quorum-crash", [{ clients: "all", nodes: [3, 4], from: 0, to: 2_000 }]),
      struck: true,
    };
    const flapless = partition("partition-minority", [{ clients: [5], nodes: [0], from: 0, to: 2_000 }]);
    const report = check([
      start,
      nemesisCut,
      flapless,
      cs(5, 1, 300, 400, { acquireCalled: 100 }),
      cs(6, 2, 500, 600, { acquireCalled: 450, read: 1 }),
      final(2),
    ]);
    expect(report.minorityGrants).toBe(1);
  });
});

describe("chaos checker: the targeted nemesis and resources with a permit limit", () => {
  it("fails a run whose nemesis never struck", () => {
    const missed: FaultRecord = {
      type: "fault",
      kind: "quorum-crash",
      target: "node 1",
      at: 0,
      until: 10,
      struck: false,
    };
    expect(check([start, missed, cs(0, 1, 0, 100), final(1)]).violations.join()).toContain("never struck");
    expect(check([start, { ...missed, struck: true }, cs(0, 1, 0, 100), final(1)]).violations).toEqual([]);
  });

  it("judges each mutex resource on its own: the same times on two resources are no overlap", () => {
    const two: ChaosRecord = {
      ...start,
      resources: [
        { name: "a", limit: 1 },
        { name: "b", limit: 1 },
      ],
    } as ChaosRecord;
    const report = check([
      two,
      cs(0, 1, 0, 300, { resource: "a" }),
      cs(1, 1, 100, 400, { resource: "b", read: 0 }),
      { type: "final", at: 99_999, counter: 1, counters: { a: 1, b: 1 } },
    ]);
    expect(report.overlaps).toBe(0);
    expect(report.violations).toEqual([]);
    expect(
      check([two, cs(0, 1, 0, 300, { resource: "a" }), cs(1, 2, 100, 400, { resource: "a", read: 1 }), final(2)])
        .overlaps,
    ).toBe(1);
  });

  it("allows up to `limit` valid holders of a resource with a permit limit and finds one more", () => {
    const spec: ChaosRecord = {
      ...start,
      resources: [
        { name: "m", limit: 1 },
        { name: "sem", limit: 3 },
      ],
    } as ChaosRecord;
    const holder = (client: number, at: number) => enter(client, 100 + client, at, { resource: "sem" });
    const three = check([spec, holder(0, 0), holder(1, 10), holder(2, 20), final(0)]);
    expect(three.resources.find((r) => r.name === "sem")).toMatchObject({ maxHolders: 3, excess: 0 });
    expect(three.violations).toEqual([]);
    const four = check([spec, holder(0, 0), holder(1, 10), holder(2, 20), holder(3, 30), final(0)]);
    expect(four.resources.find((r) => r.name === "sem")).toMatchObject({ maxHolders: 4, excess: 1 });
    expect(four.violations.join()).toContain("more than 3 holders");
  });
});

describe("chaos checker: the semaphore resource", () => {
  const spec: ChaosRecord = {
    ...start,
    clients: 7,
    resources: [
      { name: "m", limit: 1 },
      { name: "chaos:semaphore", limit: 3 },
    ],
  } as ChaosRecord;
  /** A finished permit section: no fence, no counter. */
  const permit = (
    client: number,
    begin: number,
    end: number,
    extra: Partial<CriticalSectionRecord> = {},
  ): CriticalSectionRecord => ({
    type: "cs",
    id: `${client}.0.${begin}`,
    client,
    resource: "chaos:semaphore",
    acquireCalled: begin - 20,
    start: begin,
    validityEnd: begin + 980,
    readAccepted: false,
    readDone: 0,
    read: null,
    end,
    stalledMs: 0,
    ...extra,
  });
  const windows: FaultRecord = {
    type: "fault",
    kind: "semaphore-windows",
    target: "clients 2,3,4,5,6",
    at: 0,
    until: 2_000,
    cuts: [2, 3, 4, 5, 6].map((client, j) => ({
      clients: [client],
      nodes: [(j + 3) % 5, (j + 4) % 5],
      from: 10,
      to: 1_900,
    })),
    heldOn: [
      [0, 1, 2],
      [1, 2, 3],
      [2, 3, 4],
      [0, 3, 4],
      [0, 1, 4],
    ],
  };
  const mutex = cs(0, 1, 0, 100, { resource: "m", read: 0 });
  const finalM = (counter: number): ChaosRecord => ({ type: "final", at: 99_999, counter, counters: { m: counter } });

  it("finds five permits valid at once under the windows (the naive semaphore's over-admission) and names them", () => {
    const log = [
      spec,
      windows,
      mutex,
      ...[2, 3, 4, 5, 6].map((c, j) => permit(c, 100 + j, 900 + j, { slot: undefined })),
      finalM(1),
    ];
    const report = check(log);
    const sem = report.resources.find((r) => r.name === "chaos:semaphore")!;
    expect(sem).toMatchObject({ sections: 5, maxHolders: 5, excess: 2 });
    expect(sem.excessExamples[1]).toContain("5 valid at");
    expect(sem.excessExamples[0]).toContain("during semaphore-windows clients 2,3,4,5,6");
    expect(report.violations.join()).toContain("chaos:semaphore: more than 3 holders");
    expect(report).toMatchObject({
      windowsRuns: 1,
      windowsMostSeen: 5,
      overlaps: 0,
      minorityGrants: 0,
      fenceRegressions: 0,
      lostUpdates: 0,
    });
  });

  it("passes three at once, and a fourth that began once one of them released or ran out of validity", () => {
    const a = permit(2, 100, 900, { slot: 0 });
    const b = permit(3, 101, 2_500, { slot: 1, validityEnd: 600, stalledMs: 2_400 }); // stalled past its validity
    const c = permit(4, 102, 950, { slot: 2 });
    const d = permit(5, 700, 1_400, { slot: 1 }); // b's validity ended at 600 (b's end, 2500, does not count)
    const e = permit(6, 905, 1_500, { slot: 0 }); // a released at 900
    const report = check([spec, windows, mutex, a, b, c, d, e, finalM(1)]);
    expect(report.resources.find((r) => r.name === "chaos:semaphore")).toMatchObject({
      sections: 5,
      maxHolders: 3,
      excess: 0,
    });
    expect(report.violations).toEqual([]);
    // The same, had a not released until its validity ran out: four at once.
    expect(check([spec, mutex, { ...a, end: 1_080 }, b, c, d, e, finalM(1)]).resources[1]).toMatchObject({
      maxHolders: 4,
      excess: 1,
    });
  });

  it("ends a crashed permit holder's section at the crash: a fourth holder after the crash is no over-admission", () => {
    const entered: EnterRecord = {
      type: "enter",
      id: "2.0.1",
      client: 2,
      resource: "chaos:semaphore",
      acquireCalled: 80,
      start: 100,
      validityEnd: 1_080,
    };
    const others = [3, 4].map((c, j) => permit(c, 110 + j, 900 + j));
    const log = (crashAt: number) => [
      spec,
      mutex,
      entered,
      ...others,
      crash(2, crashAt, "random"),
      permit(5, 500, 800),
      finalM(1),
    ];
    expect(check(log(400)).violations).toEqual([]);
    expect(check(log(600)).violations.join()).toContain("more than 3 holders");
    // Not judged for "free again within the ttl": the other permits go on regardless.
    expect(check(log(400))).toMatchObject({ crashesInSection: 1, crashesJudged: 0 });
  });

  it("judges client stalls by the fenced counter only where the stalled client held a mutex", () => {
    const stall = (client: number, at: number): FaultRecord => ({
      type: "fault",
      kind: "client-stall",
      target: `client ${client}`,
      at,
      until: at + 2_000,
    });
    const permits = [permit(5, 100, 300), permit(6, 400, 600)];
    const onPermits = check([spec, mutex, ...permits, stall(5, 0), stall(6, 10), stall(5, 20), finalM(1)]);
    expect(onPermits.violations).toEqual([]);
    const onLocks = check([
      spec,
      mutex,
      cs(1, 2, 200, 300, { resource: "m", read: 1 }),
      ...permits,
      stall(0, 0),
      stall(1, 10),
      stall(0, 20),
      finalM(2),
    ]);
    expect(onLocks.violations.join()).toContain("no stale read or write was refused");
  });
});

describe("chaos checker: the read-write resource", () => {
  const rwStart: ChaosRecord = {
    type: "start",
    seed: 1,
    unsafeRestart: false,
    clients: 3,
    ttl: 1000,
    at: 0,
    resources: [
      { name: "m", limit: 1 },
      { name: "rw", limit: 1, readWrite: true },
    ],
  };
  const section = (
    client: number,
    mode: "read" | "write",
    start: number,
    end: number,
    validityEnd = start + 800,
  ): CriticalSectionRecord => ({
    type: "cs",
    client,
    resource: "rw",
    mode,
    start,
    validityEnd,
    readAccepted: false,
    readDone: 0,
    read: null,
    end,
    stalledMs: 0,
  });
  const finalRw: ChaosRecord = { type: "final", at: 99_999, counter: 0, counters: { m: 0 } };

  it("passes readers that overlap, and a writer alone", () => {
    const report = check([
      rwStart,
      section(0, "read", 0, 300),
      section(1, "read", 100, 400),
      section(2, "write", 500, 600),
      finalRw,
    ]);
    expect(report.violations).toEqual([]);
    expect(report.resources.find((r) => r.name === "rw")).toMatchObject({ readWrite: true, maxHolders: 2, excess: 0 });
  });

  it("finds a writer beside a reader, and a writer beside a writer, within validity", () => {
    const report = check([
      rwStart,
      section(0, "read", 0, 300),
      section(2, "write", 200, 350),
      section(1, "write", 320, 400),
      finalRw,
    ]);
    expect(report.resources.find((r) => r.name === "rw")?.excess).toBe(2);
    expect(report.violations.join()).toContain("rw: 2 reader/writer or writer/writer pair(s) valid at once");
  });

  it("does not count a reader's time past its validity", () => {
    const report = check([rwStart, section(0, "read", 0, 2_000, 500), section(2, "write", 600, 700), finalRw]);
    expect(report.violations).toEqual([]);
  });
});
