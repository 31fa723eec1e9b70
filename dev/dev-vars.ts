// The local nodes' env file (.dev.vars): written by `edge-redlock dev`, keeping every other line of it; read back
// to check that the nodes it names are running.
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { checkLocalNodes, LocalNodesNotRunningError } from "../src/doctor/running.ts";
import { parseEnvFile } from "./env-file.ts";

const OURS = /^\s*(?:export\s+)?UPSTASH_REDIS_REST_(?:URL|TOKEN)_\d+\s*=/;
const MARK = "# edge-redlock dev:";

/**
 * Puts `vars` into the env file at `path` with mode 0600 (the tokens are secrets): the lines of an earlier
 * run and any other UPSTASH_REDIS_REST_URL_n / _TOKEN_n lines are replaced; every other line is kept.
 * @example
 * ```ts
 * writeDevVars(".dev.vars", local.env);
 * ```
 */
export function writeDevVars(path: string, vars: Record<string, string>): void {
  const kept = existsSync(path)
    ? readFileSync(path, "utf8")
        .split(/\r?\n/)
        .filter((line) => !OURS.test(line) && !line.startsWith(MARK))
    : [];
  while (kept.length > 0 && kept[kept.length - 1].trim() === "") kept.pop();
  const ours = [
    `${MARK} local nodes, rewritten by each run of \`edge-redlock dev\``,
    ...Object.entries(vars).map(([k, v]) => `${k}=${v}`),
  ];
  const text = `${[...kept, ...(kept.length > 0 ? [""] : []), ...ours].join("\n")}\n`;
  writeFileSync(path, text, { mode: 0o600 });
  chmodSync(path, 0o600); // an existing file keeps its mode on write
}

/**
 * Whether the local nodes named in the env file at `path` answer: their variables, or the one line that says
 * why not and what to run (the file missing included). Never a token.
 * @example
 * ```ts
 * const checked = await checkDevVars(".dev.vars");
 * if ("problem" in checked) console.error(checked.problem);
 * ```
 */
export async function checkDevVars(
  path: string,
  timeoutMs?: number,
): Promise<{ vars: Record<string, string> } | { problem: string }> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "error";
    const start = `Start them in another terminal: ${startCommand(path)} (it writes ${path})`;
    return {
      problem:
        code === "ENOENT"
          ? `edge-redlock: ${path} does not exist, so no local nodes are configured. ${start}`
          : `edge-redlock: cannot read ${path} (${code}), so the local nodes cannot be checked. ${start}`,
    };
  }
  const vars = parseEnvFile(text);
  try {
    await checkLocalNodes(vars, { source: path, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
  } catch (error) {
    if (error instanceof LocalNodesNotRunningError)
      return { problem: error.message.replace(/npx edge-redlock dev$/, startCommand(path)) };
    throw error;
  }
  return { vars };
}

/**
 * {@link checkDevVars}, for a test runner's global setup: resolves with the variables when the nodes answer;
 * otherwise prints the one line to stderr and ends the process with exit code 1 (a thrown error would bring
 * the runner's stack trace and its own complaints before the line that matters).
 * @example
 * ```ts
 * const vars = await requireDevVars(".dev.vars");
 * ```
 */
export async function requireDevVars(path: string, timeoutMs?: number): Promise<Record<string, string>> {
  const checked = await checkDevVars(path, timeoutMs);
  if ("vars" in checked) return checked.vars;
  process.stderr.write(`${checked.problem}\n`);
  process.exit(1);
}

/** The command that writes the env file at `path`: `dev` writes .dev.vars, `dev --out PATH` any other. */
function startCommand(path: string): string {
  return path === ".dev.vars" ? "npx edge-redlock dev" : `npx edge-redlock dev --out ${path}`;
}
