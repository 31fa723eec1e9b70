// `edge-redlock dev` and `npm run cluster` as a user runs them: the variables land in a file only its owner
// can read (other lines kept), the nodes answer, and SIGTERM (also sent to npm, which does not pass it on)
// stops every child.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseEnvFile } from "../../../cli/env-file.ts";
import { LockAcquisitionError, Redlock, checkNodes, nodesFromEnv } from "../../../src/index.ts";

const repo = new URL("../../../", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "edge-redlock-dev-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts a command and resolves once `ready` shows in its stderr. */
function start(
  file: string,
  args: string[],
  ready: RegExp,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(file, args, { cwd: repo, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let output = "";
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += String(chunk);
      if (ready.test(output)) resolve({ child, output: () => output });
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`exited ${code} before it was ready:\n${output}`)));
  });
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", resolve),
  );

/** Whether a node answers PING with its token. */
async function answers(url: string, token: string): Promise<boolean> {
  return fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: '["ping"]' }).then(
    async (res) => ((await res.json()) as { result?: string }).result === "PONG",
    () => false,
  );
}

/** Polls until no node of `vars` answers (at most 5 s). */
async function allDown(vars: Record<string, string>, nodes: number): Promise<boolean> {
  for (let i = 0; i < 50; i++) {
    const up = await Promise.all(
      Array.from({ length: nodes }, (_, n) =>
        answers(vars[`UPSTASH_REDIS_REST_URL_${n + 1}`], vars[`UPSTASH_REDIS_REST_TOKEN_${n + 1}`]),
      ),
    );
    if (up.every((u) => !u)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

describe("edge-redlock dev", () => {
  it("writes the variables with mode 0600, keeps the file's other lines, and stops every node on SIGTERM", async () => {
    const file = join(dir, ".dev.vars");
    writeFileSync(file, "API_KEY=keep-me\nUPSTASH_REDIS_REST_URL_1=http://stale\n", { mode: 0o644 });
    const { child, output } = await start(
      process.execPath,
      ["cli/main.ts", "dev", "--nodes", "3", "--out", file],
      /Ctrl-C/,
    );
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const vars = parseEnvFile(readFileSync(file, "utf8"));
    expect(vars.API_KEY).toBe("keep-me");
    expect(vars.UPSTASH_REDIS_REST_URL_1).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    for (const n of [1, 2, 3])
      expect(await answers(vars[`UPSTASH_REDIS_REST_URL_${n}`], vars[`UPSTASH_REDIS_REST_TOKEN_${n}`])).toBe(true);
    expect(output()).not.toContain(vars.UPSTASH_REDIS_REST_TOKEN_1);
    child.kill("SIGTERM");
    expect(await exited(child)).toBe(0);
    expect(output()).toContain("stopped.");
    expect(await allDown(vars, 3)).toBe(true);
  });

  it("an unknown flag exits 2 with the help, which names --out (not --env-file: Node 24 takes that flag itself)", async () => {
    const child = spawn(process.execPath, ["cli/main.ts", "dev", "--vars", "x"], {
      cwd: repo,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let err = "";
    child.stderr!.on("data", (c) => (err += String(c)));
    expect(await exited(child)).toBe(2);
    expect(err).toContain("--out PATH");
  });
});

describe("edge-redlock dev --memory", () => {
  it("serves memory nodes with nothing installed: a lock works, the doctor passes, SIGTERM stops them", async () => {
    const file = join(dir, ".dev.vars.memory");
    // No redis-server on PATH: memory mode must not look for it.
    const { child, output } = await start(
      process.execPath,
      ["cli/main.ts", "dev", "--memory", "--out", file],
      /Ctrl-C/,
      { PATH: dirname(process.execPath) },
    );
    expect(output()).toMatch(/5 memory nodes \(the library's scripts on an in-process store\) running/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const vars = parseEnvFile(readFileSync(file, "utf8"));
    for (const n of [1, 2, 3, 4, 5])
      expect(await answers(vars[`UPSTASH_REDIS_REST_URL_${n}`], vars[`UPSTASH_REDIS_REST_TOKEN_${n}`])).toBe(true);
    const redlock = Redlock.fromEnv(vars);
    const lock = await redlock.acquire(["dev:memory"], 5_000);
    await expect(redlock.acquire(["dev:memory"], 5_000, { retryCount: 0 })).rejects.toBeInstanceOf(
      LockAcquisitionError,
    );
    await (await lock.release()).pending;
    const report = await checkNodes(nodesFromEnv(vars), { samples: 2, settleMs: 20 });
    expect(report.ok).toBe(true);
    // No warning either: a script's publish is delivered there, as on redis-server.
    expect(report.checks.filter((c) => c.status !== "ok").map((c) => `${c.name}: ${c.message}`)).toEqual([]);
    child.kill("SIGTERM");
    expect(await exited(child)).toBe(0);
    expect(await allDown(vars, 5)).toBe(true);
  });

  it("without --memory and without redis-server, says so and suggests --memory", async () => {
    const child = spawn(process.execPath, ["cli/main.ts", "dev", "--out", join(dir, "never.vars")], {
      cwd: repo,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PATH: dirname(process.execPath), EDGE_REDLOCK_NO_INSTALL: "1" },
    });
    let err = "";
    child.stderr!.on("data", (c) => (err += String(c)));
    expect(await exited(child)).toBe(1);
    expect(err).toContain("redis-server is not installed");
    expect(err).toContain("npx edge-redlock dev --memory");
  });
});

describe("npm run cluster", () => {
  it("stops every node when npm itself gets SIGTERM", async () => {
    const file = join(dir, "local.env");
    const { child } = await start("npm", ["run", "-s", "cluster", "--", "--nodes=2", `--out=${file}`], /Ctrl-C/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const vars = parseEnvFile(readFileSync(file, "utf8"));
    expect(await answers(vars.UPSTASH_REDIS_REST_URL_2, vars.UPSTASH_REDIS_REST_TOKEN_2)).toBe(true);
    child.kill("SIGTERM");
    await exited(child);
    expect(await allDown(vars, 2)).toBe(true);
  });
});
