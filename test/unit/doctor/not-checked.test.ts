// The doctor reports only what it checked: with nodes down, every check that could not run on them names them
// ("not checked on … (node down)"), none claims "every node", the trial lock is listed as not tried, and a
// refused connection gets a hint naming the variable and the command that starts local nodes.
import { describe, expect, it } from "vitest";
import { hints } from "../../../cli/doctor.ts";
import type { NodeHealth } from "../../../src/doctor/types.ts";
import { judge } from "../../../src/doctor/verdict.ts";

const settings = { nodeTimeout: 500, ttl: 10_000, driftFactor: 0.01 };
const label = (i: number) => `UPSTASH_REDIS_REST_URL_${i + 1}`;

function up(index: number): NodeHealth {
  return {
    index,
    label: label(index),
    reachable: true,
    firstMs: 5,
    p50Ms: 2,
    p99Ms: 3,
    scripts: "ok",
    keyLocking: "accepted",
    clockOffsetMs: 0,
    clockUncertaintyMs: 1,
    wakeups: "delivered",
    eviction: "noeviction",
    sameAs: [],
  };
}

function refused(index: number): NodeHealth {
  return { index, label: label(index), reachable: false, error: "network: fetch failed (ECONNREFUSED)", sameAs: [] };
}

describe("the doctor with 3 of 5 nodes down", () => {
  const health = [up(0), up(1), refused(2), refused(3), refused(4)];
  const report = judge(health, 3, settings, new Set([0, 1]), undefined);
  const row = (name: string) => report.checks.find((c) => c.name === name);

  it("lists every check, the trial lock and the wakeups included", () => {
    expect(report.checks.map((c) => c.name)).toEqual([
      "config",
      "reachable",
      "scripts",
      "key-locking",
      "independence",
      "latency",
      "clocks",
      "eviction",
      "wakeups",
      "lock",
    ]);
    expect(report.ok).toBe(false);
  });

  it("names the nodes each per-node check did not run on, and claims no 'every node'", () => {
    for (const name of ["scripts", "key-locking", "independence", "clocks", "eviction", "wakeups"]) {
      expect(row(name)?.message, name).toMatch(/not checked on UPSTASH_REDIS_REST_URL_3, _4, _5 \(node down\)$/);
      expect(row(name)?.message, name).not.toMatch(/on every node(?! that answers)/);
    }
    expect(row("key-locking")?.message).toMatch(
      /^the allow-key-locking flag is accepted on every node that answers \(2 of 5\)/,
    );
    expect(row("eviction")?.message).toMatch(/^noeviction on every node that answers \(2 of 5\);/);
  });

  it("lists the trial lock as not tried (skip), saying why", () => {
    expect(row("lock")).toEqual({
      name: "lock",
      status: "skip",
      message:
        "not tried: 2 of 5 nodes answer, fewer than the quorum of 3; not checked on UPSTASH_REDIS_REST_URL_3, _4, _5 (node down)",
    });
  });

  it("hints, once for all refused nodes, which variables to check and how to start local nodes", () => {
    expect(hints(report.nodes)).toEqual([
      "UPSTASH_REDIS_REST_URL_3, _4, _5 refused the connection (ECONNREFUSED): nothing listens at that address. " +
        "Check the URL, and that the server is running (local nodes: run npx edge-redlock dev in another terminal; it writes .dev.vars).",
    ]);
  });
});

describe("the doctor with every node down", () => {
  const health = [0, 1, 2, 3, 4].map(refused);
  const report = judge(health, 3, settings, new Set(), undefined);

  it("skips every check it could not run instead of leaving it out", () => {
    expect(report.checks.map((c) => [c.name, c.status])).toEqual([
      ["config", "ok"],
      ["reachable", "fail"],
      ["scripts", "skip"],
      ["key-locking", "skip"],
      ["independence", "skip"],
      ["latency", "fail"],
      ["clocks", "skip"],
      ["eviction", "skip"],
      ["wakeups", "skip"],
      ["lock", "skip"],
    ]);
  });
});

it("a refused token still gets its own hint, naming the token's variable", () => {
  const health: NodeHealth = { ...refused(1), error: "HTTP 401: WRONGPASS", httpStatus: 401 };
  expect(hints([up(0), health])).toEqual([
    "UPSTASH_REDIS_REST_TOKEN_2 was refused (HTTP 401): check it belongs to the database of UPSTASH_REDIS_REST_URL_2.",
  ]);
});
