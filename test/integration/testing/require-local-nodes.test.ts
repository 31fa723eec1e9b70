// requireLocalNodes (edge-redlock/testing), for a test runner's global setup: with the nodes of .dev.vars not
// running, or no .dev.vars at all, the process prints exactly one line saying what to run and exits 1 (no
// stack trace); with them running it resolves with the file's variables.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, expect, it } from "vitest";
import { freePort } from "../../../dev/redis-server.ts";
import { startLocalNodes } from "../../../src/testing/index.ts";

const dir = mkdtempSync(join(tmpdir(), "require-local-nodes-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const entry = pathToFileURL(join(import.meta.dirname, "../../../src/testing/index.ts")).href;
writeFileSync(
  join(dir, "setup.ts"),
  `import { requireLocalNodes } from ${JSON.stringify(entry)};\n` +
    "const vars = await requireLocalNodes();\n" +
    "console.log(Object.keys(vars).filter((k) => k.startsWith('UPSTASH_')).length);\n",
);

function run(): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["setup.ts"], { cwd: dir }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}

it("no .dev.vars yet: one line that says to run npx edge-redlock dev, exit code 1", async () => {
  rmSync(join(dir, ".dev.vars"), { force: true });
  expect(await run()).toEqual({
    code: 1,
    stdout: "",
    stderr:
      "edge-redlock: .dev.vars does not exist, so no local nodes are configured. Start them in another terminal: npx edge-redlock dev (it writes .dev.vars)\n",
  });
});

it("nodes not running: one line naming each variable and host, exit code 1, no token", async () => {
  const [a, b] = [await freePort(), await freePort()];
  writeFileSync(
    join(dir, ".dev.vars"),
    `UPSTASH_REDIS_REST_URL_1=http://127.0.0.1:${a}\nUPSTASH_REDIS_REST_TOKEN_1=secret-token-one\n` +
      `UPSTASH_REDIS_REST_URL_2=http://127.0.0.1:${b}\nUPSTASH_REDIS_REST_TOKEN_2=secret-token-two\n`,
  );
  expect(await run()).toEqual({
    code: 1,
    stdout: "",
    stderr: `edge-redlock: the local nodes in .dev.vars are not running (UPSTASH_REDIS_REST_URL_1 127.0.0.1:${a}: ECONNREFUSED; UPSTASH_REDIS_REST_URL_2 127.0.0.1:${b}: ECONNREFUSED). Start them in another terminal: npx edge-redlock dev\n`,
  });
});

it("nodes running: resolves with the variables", async () => {
  const local = await startLocalNodes({ nodes: 2, memory: true });
  try {
    writeFileSync(
      join(dir, ".dev.vars"),
      Object.entries(local.env)
        .map(([k, v]) => `${k}=${v}`)
        .join("\n"),
    );
    expect(await run()).toEqual({ code: 0, stdout: "4\n", stderr: "" });
  } finally {
    await local.stop();
  }
});
