// The A/B of the healthy scenario: the library as it was at a baseline git ref, run in the same process
// beside the current one. Its src/ is taken from git into .tmp/ (ignored), so it resolves
// @upstash/redis from this checkout's node_modules.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { ClusterNode } from "../dev/cluster.ts";
import { edgeRedlockImpl, type Impl, type ImplOptions } from "./impls.ts";
import type { Redlock } from "./lib.ts";

/**
 * The default baseline: the last commit, so a run compares the change in the working tree with what it changes.
 * `--baseline=<ref>` (any git ref: a commit, a tag, `HEAD~5`) or `EDGE_REDLOCK_PREVIOUS=<ref>` picks another, e.g.
 * the release a change should be compared with.
 */
export const DEFAULT_BASELINE = "HEAD";

/** The ref the A/B builds: `--baseline=<ref>`, else `EDGE_REDLOCK_PREVIOUS`, else {@link DEFAULT_BASELINE}. */
export const BASELINE =
  process.argv.find((arg) => arg.startsWith("--baseline="))?.slice("--baseline=".length) ||
  process.env.EDGE_REDLOCK_PREVIOUS ||
  DEFAULT_BASELINE;

/**
 * The `Redlock` class of the library at {@link BASELINE}, or a reason it cannot load here (no git, or a clone
 * without that commit).
 * @example
 * const Previous = await previousRedlock();
 */
export async function previousRedlock(): Promise<typeof Redlock | string> {
  const root = fileURLToPath(new URL("..", import.meta.url));
  try {
    // A ref such as origin/main moves: the copy in .tmp/ is named by the commit it resolves to today.
    const commit = execFileSync("git", ["rev-parse", "--verify", `${BASELINE}^{commit}`], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
    }).trim();
    const dir = join(root, ".tmp", `edge-redlock-${commit}`);
    const entry = join(dir, "src", "index.ts");
    if (!existsSync(entry)) {
      mkdirSync(dir, { recursive: true });
      const archive = execFileSync("git", ["archive", commit, "src"], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
      });
      execFileSync("tar", ["-x", "-C", dir], { input: archive });
    }
    return ((await import(pathToFileURL(entry).href)) as { Redlock: typeof Redlock }).Redlock;
  } catch (error) {
    const why = String((error as Error).message).split("\n")[0];
    return `edge-redlock-previous skipped: ${BASELINE} not available (${why})`;
  }
}

/**
 * `edge-redlock-previous`, or a reason it cannot run here (see {@link previousRedlock}).
 * @example
 * const previous = await previousImpl(cluster.nodes, OPTIONS);
 */
export async function previousImpl(nodes: ClusterNode[], options: ImplOptions): Promise<Impl | string> {
  const Previous = await previousRedlock();
  return typeof Previous === "string"
    ? Previous
    : edgeRedlockImpl(nodes, options, "edge-redlock-previous", {}, Previous);
}
