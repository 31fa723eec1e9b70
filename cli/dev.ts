// `edge-redlock dev`: start local nodes, write their variables to .dev.vars (mode 0600), run until Ctrl-C or
// SIGTERM, then stop every child. Not `--env-file`: Node 24 reads that flag anywhere in argv and refuses
// to start when the file does not exist yet (docs/TOOLCHAIN notes), so the flag is `--out`.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { startLocalNodes } from "../src/testing/index.ts";
import type { Io } from "./doctor.ts";
import { checkDevVars, writeDevVars } from "../dev/dev-vars.ts";

export const DEV_HELP = `Usage: edge-redlock dev [options]

Starts local nodes (redis-server processes behind an Upstash-compatible REST bridge on 127.0.0.1;
with --memory, in-process memory nodes behind the same bridge: nothing to install),
writes UPSTASH_REDIS_REST_URL_1 … _N and UPSTASH_REDIS_REST_TOKEN_1 … _N into .dev.vars (mode 0600;
its other lines are kept) and runs until Ctrl-C or SIGTERM, then stops them. wrangler dev and
@cloudflare/vitest-plugin read .dev.vars; for Node, Bun or Deno use --out .env.
Needs redis-server and the ioredis package (npm install --save-dev ioredis), except with --memory.

Options:
  --out PATH        write the variables to PATH instead of .dev.vars
  --check           start nothing: check that the nodes whose variables are in .dev.vars (or --out PATH)
                    answer; exit 0, or 1 with one line saying they are not running (e.g. as "predev")
  --nodes N         how many nodes (default 5)
  --redis-server P  the redis-server binary (default: found on PATH)
  --memory          memory nodes instead of redis-server: the library's own scripts on an in-process store
                    (conformance-tested against Redis), not a Redis server: no durability, no network timing
  -h, --help        show this help
`;

/**
 * Runs `dev` with `args` (what follows the word `dev`); resolves with the exit code once the nodes are
 * stopped (on SIGINT or SIGTERM, or when the parent process is gone).
 * @example
 * ```ts
 * process.exitCode = await dev(["--out", ".env"], io);
 * ```
 */
export async function dev(args: string[], io: Io): Promise<number> {
  let values: {
    out?: string;
    nodes?: string;
    "redis-server"?: string;
    memory?: boolean;
    check?: boolean;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        out: { type: "string" },
        nodes: { type: "string" },
        "redis-server": { type: "string" },
        memory: { type: "boolean" },
        check: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    io.err(`edge-redlock dev: ${(error as Error).message}\n\n${DEV_HELP}`);
    return 2;
  }
  if (values.help) {
    io.out(DEV_HELP);
    return 0;
  }
  if (values.check) return check(values.out ?? ".dev.vars", io);
  const nodes = values.nodes === undefined ? 5 : Number(values.nodes);
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > 32) {
    io.err("edge-redlock dev: --nodes must be an integer from 1 to 32\n");
    return 2;
  }
  const out = values.out ?? ".dev.vars";
  let local: Awaited<ReturnType<typeof startLocalNodes>>;
  try {
    local = await startLocalNodes({ nodes, redisServer: values["redis-server"], memory: values.memory === true });
  } catch (error) {
    io.err(`${(error as Error).message}\n`);
    return 1;
  }
  const stopped = untilStopSignal();
  try {
    writeDevVars(out, local.env);
    const kind = values.memory ? "memory nodes (the library's scripts on an in-process store)" : "local nodes";
    io.err(
      `${nodes} ${kind} running; their variables are in ${resolve(out)} (mode 600).\n` +
        "Ctrl-C (or SIGTERM) stops them.\n",
    );
    for (const [i, node] of local.nodes.entries()) io.err(`  node ${i + 1}: ${node.url} (admin ${node.adminUrl})\n`);
    const signal = await stopped;
    io.err(`${signal}: stopping the local nodes ...\n`);
  } catch (error) {
    io.err(`edge-redlock dev: ${(error as Error).message}\n`);
    await local.stop();
    return 1;
  }
  await local.stop();
  io.err("stopped.\n");
  return 0;
}

/** `dev --check`: whether the nodes whose variables `dev` wrote to `path` answer; one line either way. */
async function check(path: string, io: Io): Promise<number> {
  const checked = await checkDevVars(path);
  if ("problem" in checked) {
    io.err(`${checked.problem}\n`);
    return 1;
  }
  io.err(`edge-redlock: the local nodes in ${path} answer\n`);
  return 0;
}

/**
 * Resolves on SIGINT, SIGTERM or SIGHUP, or when the parent process is gone (npm and npx do not always pass
 * a signal on: the process is then re-parented).
 */
function untilStopSignal(): Promise<string> {
  return new Promise((done) => {
    const parent = process.ppid;
    const watch = setInterval(() => {
      if (process.ppid !== parent) finish("parent process gone");
    }, 500);
    const finish = (why: string) => {
      clearInterval(watch);
      for (const name of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.removeAllListeners(name);
      done(why);
    };
    for (const name of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(name, () => finish(name));
  });
}
