// Writes the local nodes' variables into an env file (.dev.vars), keeping every other line of it.
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";

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
