// `npm start` / `npm run start:deno`: five local nodes plus the demo worker bound to them, until Ctrl-C.
// The tokens reach wrangler through a file only this user can read (not the command line, where `ps` shows them).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startCluster } from "./cluster.ts";
import { startMemoryCluster } from "./memory-cluster.ts";
import { MissingRedisServer, freePort } from "./redis-server.ts";
import { envNames } from "../src/node/env.ts";
import { checkLocalNodes } from "../src/doctor/running.ts";
import { watchNodes } from "./watch-nodes.ts";

const runtime = process.argv.includes("--deno") ? "deno" : "workers";
// Real redis-server processes when they can be had; else, with nothing to install, memory nodes behind the
// same Upstash-compatible bridge (the library's own scripts on an in-process store).
let memory = false;
const cluster = await startCluster({ nodes: 5 }).catch(async (error: unknown) => {
  if (!(error instanceof MissingRedisServer)) throw error;
  memory = true;
  process.stderr.write(
    "redis-server is not installed: the demo runs on memory nodes (npx edge-redlock dev --memory).\n",
  );
  return startMemoryCluster({ nodes: 5 });
});
const vars: Record<string, string> = {};
cluster.nodes.forEach((node, i) => {
  const names = envNames(i + 1);
  vars[names.url] = node.url;
  vars[names.token] = node.token;
});
// The nodes answer before the demo starts: a failure here is one line, not a Worker that fails every request.
await checkLocalNodes(vars, { source: "npm start's local nodes" }).catch(async (error: Error) => {
  process.stderr.write(`${error.message}\n`);
  await cluster.stop();
  process.exit(1);
});
const port = Number(process.env.PORT ?? 0) || (await freePort());
const quiet = {
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_SEND_METRICS: "false",
  DENO_NO_UPDATE_CHECK: "1",
  NO_COLOR: "1",
};
const bin = (path: string) => fileURLToPath(new URL(`../node_modules/${path}`, import.meta.url));

let child: ChildProcess;
let secrets: string | undefined;
let unwatch = () => {};
if (runtime === "workers") {
  const wrangler = bin("wrangler/bin/wrangler.js");
  secrets = mkdtempSync(join(tmpdir(), "edge-redlock-demo-"));
  const envFile = join(secrets, ".env");
  writeFileSync(
    envFile,
    Object.entries(vars)
      .map(([name, value]) => `${name}=${value}\n`)
      .join(""),
    { mode: 0o600 },
  );
  child = spawn(
    process.execPath,
    [
      wrangler,
      "dev",
      "--port",
      String(port),
      "--ip",
      "127.0.0.1",
      "--show-interactive-dev-session=false",
      "--env-file",
      envFile,
    ],
    {
      env: { ...process.env, ...quiet },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    },
  );
} else {
  const deno = bin("deno/bin.cjs");
  child = spawn(process.execPath, [deno, "run", "--allow-net", "--allow-env", "worker/deno.ts"], {
    env: { ...process.env, ...quiet, ...vars, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
}
let log = "";
let partial = "";
/** The demo's own log lines (each document run's start and end, its errors) are shown as they come. */
const echo = (chunk: unknown) => {
  log += String(chunk);
  const lines = (partial + String(chunk)).split("\n");
  partial = lines.pop() ?? "";
  for (const line of lines) if (/^\s*(doc \S+: |demo: )/.test(line)) process.stdout.write(`${line.trim()}\n`);
};
child.stdout?.on("data", echo);
child.stderr?.on("data", echo);

let stopping = false;
async function stop(code = 0): Promise<never> {
  if (!stopping) {
    stopping = true;
    unwatch();
    if (child.pid) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
    await cluster.stop();
    if (secrets) rmSync(secrets, { recursive: true, force: true });
  }
  process.exit(code);
}
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());
child.once("exit", (code) => {
  if (!stopping) {
    process.stderr.write(`${runtime} exited (${code}):\n${log}\n`);
    void stop(1);
  }
});

const url = `http://127.0.0.1:${port}`;
const deadline = Date.now() + 60_000;
for (;;) {
  const up = await fetch(url).then(
    (r) => r.ok,
    () => false,
  );
  if (up) break;
  if (Date.now() > deadline) {
    process.stderr.write(`the demo did not answer on ${url} within 60 s:\n${log}\n`);
    await stop(1);
  }
  await new Promise((r) => setTimeout(r, 200));
}

process.stdout.write(
  `
edge-redlock demo on ${runtime === "workers" ? "Cloudflare Workers (wrangler dev)" : "Deno"}: ${url}
five local ${memory ? "memory" : "Redis"} nodes: ${cluster.nodes.map((n) => n.url).join(" ")}

Try:
  # with the lock: 8 buyers, 3 in stock → 3 reserved, orders 3, oversold 0
  curl -X PUT ${url}/stock/widget -d '{"count": 3}'
  for i in $(seq 8); do curl -s -X POST "${url}/stock/widget/reserve?wait=10000" & done; wait; echo
  curl ${url}/stock/widget

  # without it: the same race oversells (orders > reserved, oversold > 0)
  curl -X PUT ${url}/stock/gadget -d '{"count": 3}'
  for i in $(seq 8); do curl -s -X POST ${url}/stock/gadget/reserve-unsafe & done; wait; echo
  curl ${url}/stock/gadget

  curl -X POST ${url}/jobs/nightly/run
  curl ${url}/status/lock:stock:widget

  # a semaphore: 10 renders at once, never more than 2 inside (mostAtOnce)
  curl -X DELETE ${url}/renders
  for i in $(seq 10); do curl -s -X POST "${url}/renders/r$i?wait=20000" & done; wait; echo
  curl ${url}/renders

  # a read-write lock: 6 reads run side by side, the write waits for them and runs alone, the 6 reads
  # that came after the write wait for it (mostReadersAtOnce 6, writerOverlaps 0; the worker logs each start/end)
  curl -X DELETE ${url}/docs/readme/runs
  for i in $(seq 6); do curl -s "${url}/docs/readme?wait=10000" & done; sleep 0.1; ` +
    `curl -s -X PUT "${url}/docs/readme?wait=10000" -d 'v2' & sleep 0.1; ` +
    `for i in $(seq 6); do curl -s "${url}/docs/readme?wait=10000" & done; wait; echo
  curl ${url}/docs/readme/runs

  # a streamed report holds its lock until the last line is out (a second run meanwhile: 423)
  curl -N -X POST "${url}/reports/daily/stream?lines=20"

Ctrl-C stops everything.
`,
);
unwatch = watchNodes(vars, (line) => process.stderr.write(`${line}\n`));
