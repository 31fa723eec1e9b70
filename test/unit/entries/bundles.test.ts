// What a Worker bundles of each entry: what a user does not import is not in the bundle. Each entry is bundled
// by esbuild as a Worker build does (bench/bundle-size.ts, which measures the same bundles' sizes); a script is
// in a bundle when its Lua is.
import { describe, expect, it } from "vitest";
import { bundleText as bundle } from "../../../bench/bundle-size.ts";
import * as scripts from "../../../src/scripts/index.ts";
import type { Script } from "../../../src/scripts/script.ts";

const { FAIR_ACQUIRE, FAIR_SEMAPHORE_ACQUIRE, INSPECT, RW_READ_ACQUIRE, RW_WRITE_ACQUIRE, SEMAPHORE_ACQUIRE } = scripts;
// The fenced variants repeat their script's lines (and only go where it goes): left out of the comparison.
const every = Object.entries(scripts)
  .filter(([name]) => !name.startsWith("FENCED_"))
  .map(([, value]) => value)
  .filter((value): value is Script => typeof (value as Script)?.lua === "string");

/** The script's longest line of Lua that no other script has: in a bundle exactly when the script is. */
const signature = (script: Script) =>
  script.lua
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => every.every((other) => other === script || !other.lua.includes(line)))
    .reduce((a, b) => (b.length > a.length ? b : a), "");
const holds = (code: string, script: Script) => code.includes(signature(script));
const others = { SEMAPHORE_ACQUIRE, FAIR_SEMAPHORE_ACQUIRE, RW_READ_ACQUIRE, RW_WRITE_ACQUIRE, INSPECT };

describe("what each entry bundles", () => {
  it("the signatures tell the scripts apart", () => {
    expect(every.length).toBeGreaterThan(10);
    const all = [FAIR_ACQUIRE, ...Object.values(others)].map(signature);
    expect(new Set(all).size).toBe(all.length);
    for (const line of all) expect(line.length).toBeGreaterThan(30);
  });

  it("Redlock of edge-redlock/mutex: the fair mutex, no semaphore, read-write lock or inspection", async () => {
    const code = await bundle('export { Redlock } from "./src/mutex/index.ts";');
    expect(holds(code, FAIR_ACQUIRE)).toBe(true);
    for (const [name, script] of Object.entries(others)) expect(holds(code, script), name).toBe(false);
    expect(code).not.toContain("readWriteLock");
  });

  it("the redlock() middleware: the same; semaphore() and readWrite() bring the rest", async () => {
    const mutexOnly = await bundle('export { redlock } from "./src/hono/index.ts";');
    expect(holds(mutexOnly, FAIR_ACQUIRE)).toBe(true);
    for (const [name, script] of Object.entries(others)) expect(holds(mutexOnly, script), name).toBe(false);
    const withRw = await bundle('export { readWrite } from "./src/hono/index.ts";');
    expect(holds(withRw, RW_WRITE_ACQUIRE)).toBe(true);
  });

  it("Redlock of edge-redlock carries all of them (its methods make them)", async () => {
    const code = await bundle('export { Redlock } from "./src/index.ts";');
    for (const [name, script] of Object.entries({ FAIR_ACQUIRE, ...others }))
      expect(holds(code, script), name).toBe(true);
  });
});
