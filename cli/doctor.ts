// `edge-redlock doctor`: read the five variables (environment and --vars files), check the nodes, print, exit.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { checkNodes } from "../src/doctor/index.ts";
import type { DoctorOptions, NodeHealth } from "../src/doctor/types.ts";
import type { NodeConfig } from "../src/node/node.ts";
import { MissingConfigurationError, envNames, nodesFromEnv } from "../src/node/env.ts";
import { parseEnvFile } from "./env-file.ts";
import { formatReport } from "./table.ts";

/** Exit codes: 0 every check passed (warnings allowed), 1 a check failed, 2 the command could not run. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

export const DOCTOR_HELP = `Usage: edge-redlock doctor [options]

Checks the databases named by UPSTASH_REDIS_REST_URL_1 … _N and UPSTASH_REDIS_REST_TOKEN_1 … _N
(from the environment, or from --vars files): reachable and how fast, every script the library sends
loads and runs (the fenced acquire included), the key-locking flag, independence (a probe key written
on one node must not appear on another), clock offsets, expected lock latency, eviction, and a trial
lock. Prints a table and a verdict.

Options:
  --vars PATH          read variables from PATH (KEY=VALUE lines, e.g. .dev.vars); may repeat,
                       later files win; values from files win over the environment
  --env-file PATH      the same (but Node itself stops first when PATH does not exist)
  --nodes N            how many databases (default: 5, or more if _6 … are set)
  --samples N          timed requests per node after the first (default 10)
  --timeout MS         per-request timeout of the checks (default 3000)
  --node-timeout MS    the lock's nodeTimeout to judge latency against (default 500)
  --ttl MS             the ttl to judge clock offsets against (default 10000)
  --json               print the report as JSON instead of a table
  -h, --help           show this help

Exit status: 0 all checks passed (warnings allowed), 1 a check failed, 2 the command could not run.
Output names variables, never their values.
`;

/** Where the command writes; replaceable for tests. */
export interface Io {
  env: Record<string, string | undefined>;
  out(text: string): void;
  err(text: string): void;
}

/**
 * Runs `doctor` with `args` (what follows the word `doctor`) and resolves with the exit code.
 * @example
 * ```ts
 * const write = (stream: NodeJS.WriteStream) => (text: string) => void stream.write(text);
 * const io = { env: process.env, out: write(process.stdout), err: write(process.stderr) };
 * process.exitCode = await doctor(["--vars", ".dev.vars"], io);
 * ```
 */
export async function doctor(args: string[], io: Io): Promise<number> {
  // biome-ignore lint/suspicious/noImplicitAnyLet: its type is the one parseArgs infers from the options below
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        vars: { type: "string", multiple: true },
        // Node reads --env-file anywhere in its argv and stops when the file is missing: --vars avoids that.
        "env-file": { type: "string", multiple: true },
        nodes: { type: "string" },
        samples: { type: "string" },
        timeout: { type: "string" },
        "node-timeout": { type: "string" },
        ttl: { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }));
  } catch (error) {
    io.err(`edge-redlock doctor: ${(error as Error).message}\n\n${DOCTOR_HELP}`);
    return EXIT.usage;
  }
  if (values.help) {
    io.out(DOCTOR_HELP);
    return EXIT.ok;
  }

  const vars: Record<string, string | undefined> = { ...io.env };
  const files = [...(values["env-file"] ?? []), ...(values.vars ?? [])];
  for (const path of files) {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (error) {
      io.err(`edge-redlock doctor: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? "error"})\n`);
      return EXIT.usage;
    }
    Object.assign(vars, parseEnvFile(text));
  }

  const numbers: Partial<Record<"nodes" | "samples" | "timeout" | "node-timeout" | "ttl", number>> = {};
  for (const name of ["nodes", "samples", "timeout", "node-timeout", "ttl"] as const) {
    const raw = values[name];
    if (raw === undefined) continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) {
      io.err(`edge-redlock doctor: --${name} must be a positive integer\n`);
      return EXIT.usage;
    }
    numbers[name] = n;
  }
  const count = numbers.nodes ?? Math.max(5, highestConfigured(vars));

  let nodes: NodeConfig[];
  try {
    nodes = nodesFromEnv(vars, { nodes: count });
  } catch (error) {
    if (!(error instanceof MissingConfigurationError)) throw error;
    const verb = error.missing.length === 1 ? "is" : "are";
    io.err(
      `edge-redlock doctor: not configured: ${error.missing.join(", ")} ${verb} missing or empty. Set them in ` +
        "the environment or pass --vars PATH (local nodes: npx edge-redlock dev writes them to .dev.vars)\n",
    );
    return EXIT.usage;
  }
  const labels = nodes.map((_, i) => envNames(i + 1).url);
  const options: DoctorOptions = {
    labels,
    samples: numbers.samples ?? 10,
    ...(numbers.timeout ? { timeout: numbers.timeout } : {}),
    ...(numbers["node-timeout"] ? { nodeTimeout: numbers["node-timeout"] } : {}),
    ...(numbers.ttl ? { ttl: numbers.ttl } : {}),
  };
  const report = await checkNodes(nodes, options);
  if (values.json) io.out(`${JSON.stringify(report, null, 2)}\n`);
  else {
    const read = files.length ? ` (with ${files.join(", ")})` : "";
    io.out(`edge-redlock doctor: ${count} nodes from ${envNames(1).url} … _${count}${read}\n\n${formatReport(report)}`);
    for (const hint of hints(report.nodes)) io.out(`${hint}\n`);
  }
  return report.ok ? EXIT.ok : EXIT.failed;
}

/**
 * What to change for the nodes the doctor could not use, one line per cause (a refused token per node);
 * a cause it cannot say more about gets no line (its row in the report says what happened).
 */
export function hints(nodes: NodeHealth[]): string[] {
  const lines: string[] = [];
  const refused = nodes.filter(
    (h) => !h.reachable && h.error !== undefined && /ECONNREFUSED|Connection refused/i.test(h.error),
  );
  const unresolved = nodes.filter((h) => !h.reachable && h.error !== undefined && /ENOTFOUND|EAI_AGAIN/.test(h.error));
  const silent = nodes.filter(
    (h) => !h.reachable && h.error !== undefined && /timeout|timed out|no answer/i.test(h.error),
  );
  for (const h of nodes) {
    if (h.httpStatus !== 401 && h.httpStatus !== 403) continue;
    const token = envNames(h.index + 1).token;
    lines.push(`${token} was refused (HTTP ${h.httpStatus}): check it belongs to the database of ${h.label}.`);
  }
  if (refused.length > 0) {
    lines.push(
      `${urls(refused)} refused the connection (ECONNREFUSED): nothing listens at that address. ` +
        "Check the URL, and that the server is running " +
        "(local nodes: run npx edge-redlock dev in another terminal; it writes .dev.vars).",
    );
  }
  if (unresolved.length > 0) {
    lines.push(`${urls(unresolved)}: the host does not resolve. Copy the URL from the database's REST API section.`);
  }
  if (silent.length > 0) {
    lines.push(
      `${urls(silent)}: no answer in time. Check the URL and the network, or give more time with --timeout MS.`,
    );
  }
  return lines;
}

/** The URL variables of some nodes, shortened as the report does: `UPSTASH_REDIS_REST_URL_3, _4, _5`. */
function urls(nodes: NodeHealth[]): string {
  const [first, ...rest] = nodes.map((h) => envNames(h.index + 1).url);
  return [first, ...rest.map((name) => name.replace(/^.*(_\d+)$/, "$1"))].join(", ");
}

/** The largest n with a UPSTASH_REDIS_REST_URL_n or _TOKEN_n set. */
function highestConfigured(vars: Record<string, string | undefined>): number {
  let highest = 0;
  for (const name of Object.keys(vars)) {
    const match = /^UPSTASH_REDIS_REST_(?:URL|TOKEN)_(\d+)$/.exec(name);
    if (match && vars[name]) highest = Math.max(highest, Number(match[1]));
  }
  return highest;
}
