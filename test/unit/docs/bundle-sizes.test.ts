// docs/PERFORMANCE.md's "What a Worker bundles" table says what a Worker bundles today: a row for
// edge-redlock/mutex and one for the redlock() middleware, each within 3 % of the size measured now, and no claim that
// a mutex-only user would need an API change. Sizes measured as bench/bundle-size.ts does (one esbuild build each, not
// the benchmark).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { bundleSize } from "../../../bench/bundle-size.ts";

const perf = readFileSync(new URL("../../../docs/PERFORMANCE.md", import.meta.url), "utf8");
const section = perf.slice(perf.indexOf("**What a Worker bundles.**"));
const table = section.slice(0, section.indexOf("\n\n", section.indexOf("| entry |")));
const gzOf = (row: string) => Number(row.split("|")[3].replace(/[^0-9]/g, ""));

describe("docs/PERFORMANCE.md, what a Worker bundles", () => {
  it("has a row for edge-redlock/mutex, with its size", async () => {
    const row = table.split("\n").find((line) => line.includes("of `edge-redlock/mutex`"));
    expect(row, table).toBeDefined();
    const { gz } = await bundleSize('export { Redlock } from "./src/mutex/index.ts";');
    expect(Math.abs(gzOf(row ?? "| | | 0 |") - gz) / gz).toBeLessThan(0.03);
  });

  it("gives the redlock() middleware's bundle as it is now", async () => {
    const row = table.split("\n").find((line) => line.includes("`redlock()` middleware")) ?? "";
    const { gz } = await bundleSize('export { redlock } from "./src/hono/index.ts";');
    expect(Math.abs(gzOf(row) - gz) / gz, `${row} vs ${gz} B gz measured`).toBeLessThan(0.03);
  });

  it("no longer says a mutex-only user would need an API change", () => {
    expect(section).not.toMatch(/Keeping a mutex-only user at ~11 KB would take those as functions of their own/);
  });
});
