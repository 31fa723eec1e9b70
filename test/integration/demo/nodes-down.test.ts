// `npm start` (dev/start.ts): when a local node stops answering, the demo says so in one line, once,
// and not the workerd output a user would blame on the library.
import { spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { freePort } from "../../../dev/redis-server.ts";

const repo = fileURLToPath(new URL("../../../", import.meta.url));
let pid: number | undefined;

afterAll(() => {
  if (pid !== undefined) {
    try {
      process.kill(-pid, "SIGTERM");
    } catch {
      // gone
    }
  }
});

it("npm start prints one line naming the node that stopped answering, and one when it is back", async () => {
  const port = await freePort();
  const child = spawn(process.execPath, ["dev/start.ts"], {
    cwd: repo,
    env: { ...process.env, PORT: String(port), NODE_ENV: undefined },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  pid = child.pid;
  let output = "";
  child.stdout.on("data", (chunk) => (output += String(chunk)));
  child.stderr.on("data", (chunk) => (output += String(chunk)));
  const until = async (what: RegExp, ms: number) => {
    for (const deadline = Date.now() + ms; !what.test(output); ) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no ${what} within ${ms} ms:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  await until(/Ctrl-C stops everything\./, 90_000);

  // The demo's redis-servers are its children: stop one (SIGSTOP: it neither answers nor restarts).
  const children = spawnSync("ps", ["-o", "pid=,comm=", "--ppid", String(child.pid)], { encoding: "utf8" }).stdout;
  const redis = children
    .split("\n")
    .filter((l) => l.includes("redis-server"))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
  expect(redis).toHaveLength(5);
  process.kill(redis[1], "SIGSTOP");
  // Requests meanwhile still work (4 of 5) and print nothing.
  const res = await fetch(`http://127.0.0.1:${port}/jobs/nightly/run`, { method: "POST" });
  expect(res.status).toBe(200);
  await until(/1 of the 5 local nodes in npm start's local nodes do not answer/, 15_000);
  await new Promise((r) => setTimeout(r, 5_000)); // two more checks: still one line
  const lines = output.split("\n").filter((l) => l.startsWith("edge-redlock: "));
  expect(lines).toHaveLength(1);
  const named =
    /^edge-redlock: 1 of the 5 local nodes in npm start's local nodes do not answer \((UPSTASH_REDIS_REST_URL_\d) 127\.0\.0\.1:\d+: no answer within 2000 ms\)\. Restart npm start\.$/.exec(
      lines[0],
    );
  expect(named, lines[0]).not.toBeNull();
  // The line names the node whose redis-server stopped (ps lists them by pid, not in node order): the one
  // whose bridge does not answer a PING now, by the demo's own env file.
  expect(named?.[1]).toBe(await silentNode(output));
  process.kill(redis[1], "SIGCONT");
  await until(/edge-redlock: the local nodes answer again/, 15_000);
  expect(output).not.toContain("Network connection lost");
}, 150_000);

/** The env name of the one node whose bridge gives no answer to a PING within a second. */
async function silentNode(output: string): Promise<string> {
  const first = /five local Redis nodes: (\S+)/.exec(output)?.[1] ?? "";
  const dir = readdirSync(tmpdir()).find((d) => d.startsWith("edge-redlock-demo-") && envOf(d).includes(`=${first}\n`));
  const vars = Object.fromEntries(
    envOf(dir ?? "")
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split("=", 2) as [string, string]),
  );
  const silent: string[] = [];
  for (let n = 1; n <= 5; n++) {
    const url = vars[`UPSTASH_REDIS_REST_URL_${n}`];
    const ping = fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${vars[`UPSTASH_REDIS_REST_TOKEN_${n}`]}` },
      body: '["ping"]',
      signal: AbortSignal.timeout(1_000),
    });
    if (
      !(await ping.then(
        (r) => r.ok,
        () => false,
      ))
    )
      silent.push(`UPSTASH_REDIS_REST_URL_${n}`);
  }
  expect(silent).toHaveLength(1);
  return silent[0];
}

function envOf(dir: string): string {
  try {
    return readFileSync(join(tmpdir(), dir, ".env"), "utf8");
  } catch {
    return "";
  }
}
