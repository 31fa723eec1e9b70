// `npm start` (dev/start.ts): when a local node stops answering, the demo says so in one line, once,
// and not the workerd output a user would blame on the library.
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { freePort } from "../../dev/redis-server.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
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
  const redis = children.split("\n").filter((l) => l.includes("redis-server")).map((l) => Number(l.trim().split(/\s+/)[0]));
  expect(redis).toHaveLength(5);
  process.kill(redis[1], "SIGSTOP");
  // Requests meanwhile still work (4 of 5) and print nothing.
  const res = await fetch(`http://127.0.0.1:${port}/jobs/nightly/run`, { method: "POST" });
  expect(res.status).toBe(200);
  await until(/1 of the 5 local nodes in npm start's local nodes do not answer/, 15_000);
  await new Promise((r) => setTimeout(r, 5_000)); // two more checks: still one line
  const lines = output.split("\n").filter((l) => l.startsWith("edge-redlock: "));
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^edge-redlock: 1 of the 5 local nodes in npm start's local nodes do not answer \(UPSTASH_REDIS_REST_URL_2 127\.0\.0\.1:\d+: no answer within 2000 ms\)\. Restart npm start\.$/);
  process.kill(redis[1], "SIGCONT");
  await until(/edge-redlock: the local nodes answer again/, 15_000);
  expect(output).not.toContain("Network connection lost");
}, 150_000);
