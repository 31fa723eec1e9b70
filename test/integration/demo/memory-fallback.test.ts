// `npm start` with no redis-server to be had (hidden from PATH, installing turned off): the demo falls back
// to memory nodes with a one-line notice, and every curl line of the README's demo section and of the
// lines `npm start` prints gets its documented answer.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../dev/redis-server.ts";

const repo = new URL("../../..", import.meta.url).pathname;
let child: ChildProcess;
let url = "";
let output = "";

/** A PATH with what npm needs to run a script, and no redis-server. */
function pathWithoutRedis(): string {
  const bin = mkdtempSync(join(tmpdir(), "edge-redlock-nobin-"));
  for (const tool of ["sh", "env", "node", "npm"]) {
    symlinkSync(execFileSync("sh", ["-c", `command -v ${tool}`], { encoding: "utf8" }).trim(), join(bin, tool));
  }
  return bin;
}

/** Runs one README line in sh with $URL set; resolves with what it printed. */
function sh(line: string): string {
  return execFileSync("sh", ["-c", line], { env: { ...process.env, URL: url }, encoding: "utf8", timeout: 60_000 });
}

/** The shell lines of the README's demo section, each with the answer written after `#` (if any). */
function readmeLines(): { line: string; expected?: string }[] {
  const readme = readFileSync(join(repo, "docs/demo.md"), "utf8");
  const section = readme.slice(readme.indexOf("## The demo worker"), readme.indexOf("### Deploying it"));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  return blocks.flatMap((block) =>
    block
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => {
        const [command, comment] = line.split(/\s+# /);
        return { line: command, expected: comment };
      }),
  );
}

/**
 * Whether `actual` matches the documented answer: a JSON object whose scalar fields must be equal, and
 * whose arrays are examples (`…` stands for anything there): only that an array is there is checked.
 */
function matches(actual: string, expected: string): boolean {
  const documented = JSON.parse(expected.replace(/\}: .*$/, "}").replaceAll("…", "null")) as Record<string, unknown>;
  const answer = JSON.parse(actual) as Record<string, unknown>;
  // "…" stands for a value that depends on timing: the field must be there, with any value.
  return Object.entries(documented).every(([key, value]) =>
    Array.isArray(value) ? Array.isArray(answer[key]) : value === null ? key in answer : answer[key] === value,
  );
}

beforeAll(async () => {
  const port = await freePort();
  child = spawn("npm", ["start"], {
    cwd: repo,
    env: { ...process.env, PATH: pathWithoutRedis(), EDGE_REDLOCK_NO_INSTALL: "1", PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  child.stdout?.on("data", (chunk) => (output += String(chunk)));
  child.stderr?.on("data", (chunk) => (output += String(chunk)));
  const deadline = Date.now() + 90_000;
  while (!output.includes("Ctrl-C stops everything.")) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not come up:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  url = `http://127.0.0.1:${port}`;
}, 120_000);

afterAll(async () => {
  if (child?.pid) {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // gone
    }
  }
  await new Promise((r) => setTimeout(r, 500));
});

describe("npm start without redis-server (memory nodes)", () => {
  it("says in one line that it runs on memory nodes", () => {
    const notices = output.split("\n").filter((line) => /memory nodes/.test(line));
    expect(notices[0]).toBe(
      "redis-server is not installed: the demo runs on memory nodes (npx edge-redlock dev --memory).",
    );
    expect(output).toMatch(/five local memory nodes: http:\/\/127\.0\.0\.1:\d+/);
  });

  it("every curl line of the README's demo section gets its documented answer", () => {
    const lines = readmeLines();
    expect(lines.length).toBeGreaterThanOrEqual(9);
    let before = "";
    for (const { line, expected } of lines) {
      const printed = sh(line);
      if (expected === undefined) {
        before = `${line}\n  printed:    ${printed}`; // shown when the line after it fails
        continue;
      }
      if (line.includes("gadget")) {
        // The unsafe race: how far it oversells varies; that it does, does not.
        const stock = JSON.parse(printed) as { reserved: number; orders: number; oversold: number };
        expect(stock.orders, printed).toBeGreaterThan(stock.reserved);
        expect(stock.oversold, printed).toBeGreaterThan(0);
      } else
        expect(
          matches(printed, expected),
          `${line}\n  printed:    ${printed}\n  documented: ${expected}\n  after: ${before}`,
        ).toBe(true);
      before = "";
    }
  }, 120_000);

  it("the lines npm start prints to try answer too", () => {
    const tried = output
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line.startsWith("curl ") || line.startsWith("for i in"));
    expect(tried.length).toBeGreaterThanOrEqual(10);
    const answers = tried.map((line) => sh(line));
    expect(answers.join("\n")).not.toMatch(/internal error|"error":"lock unavailable"/);
    const job = tried.findIndex((line) => line.includes("/jobs/nightly/run"));
    expect(JSON.parse(answers[job])).toMatchObject({ ran: expect.any(Boolean) });
    const status = tried.findIndex((line) => line.includes("/status/"));
    expect(JSON.parse(answers[status])).toMatchObject({ quorum: 3, heldByQuorum: false });
    const report = tried.findIndex((line) => line.includes("/reports/daily/stream"));
    expect(answers[report].trim().split("\n")).toHaveLength(20);
  }, 120_000);
});
