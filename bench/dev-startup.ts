// How long `edge-redlock dev` takes to be ready (its "Ctrl-C" line), with real nodes and with --memory:
// the whole process, Node's start and imports included. `npm run bench:dev-startup [-- --runs N]`.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const runs = Number(process.argv[process.argv.indexOf("--runs") + 1]) || 5;
const repo = new URL("..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "edge-redlock-startup-"));

/** Milliseconds from spawning `edge-redlock dev …` to its ready line; then stops it. */
function readyMs(args: string[]): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, ["cli/main.ts", "dev", "--out", join(dir, "vars"), ...args], {
    cwd: repo,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  let ms: number | undefined;
  return new Promise((resolve, reject) => {
    child.stderr.on("data", (chunk) => {
      err += String(chunk);
      if (ms !== undefined || !err.includes("Ctrl-C")) return;
      ms = performance.now() - started;
      child.kill("SIGTERM");
    });
    child.once("exit", (code) => (ms === undefined ? reject(new Error(`dev exited ${code}: ${err}`)) : resolve(ms)));
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const results: Record<string, number[]> = { "dev --memory": [], dev: [] };
for (let i = 0; i < runs; i++) {
  results["dev --memory"].push(await readyMs(["--memory"]));
  results.dev.push(await readyMs([]));
}
rmSync(dir, { recursive: true, force: true });
for (const [name, times] of Object.entries(results)) {
  console.log(
    `${name.padEnd(14)} ready in ${median(times).toFixed(0)} ms ` +
      `(median of ${runs}; ${times.map((t) => t.toFixed(0)).join(", ")})`,
  );
}
console.log(`dev --memory ÷ dev: ${(median(results["dev --memory"]) / median(results.dev)).toFixed(2)}`);
