// The A/B of the healthy scenario: the library as it was at PREVIOUS_COMMIT, run in the same process
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
 * The library as it was before the current work: 0296f5b, main before the hot path's CPU work (issue 21).
 * `EDGE_REDLOCK_PREVIOUS=<commit>` picks another (d0ec5ee: before src/ was laid out by concern, issue 16;
 * 7a9cae8: before batching, issue 10).
 */
export const PREVIOUS_COMMIT = process.env.EDGE_REDLOCK_PREVIOUS || "0296f5b";

/**
 * `edge-redlock-previous`, or a reason it cannot run here (no git, or a clone without that commit).
 * @example
 * const previous = await previousImpl(cluster.nodes, OPTIONS);
 */
export async function previousImpl(nodes: ClusterNode[], options: ImplOptions): Promise<Impl | string> {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const dir = join(root, ".tmp", `edge-redlock-${PREVIOUS_COMMIT}`);
  const entry = join(dir, "src", "index.ts");
  try {
    if (!existsSync(entry)) {
      mkdirSync(dir, { recursive: true });
      const archive = execFileSync("git", ["archive", PREVIOUS_COMMIT, "src"], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
      execFileSync("tar", ["-x", "-C", dir], { input: archive });
    }
    const previous = (await import(pathToFileURL(entry).href)) as { Redlock: typeof Redlock };
    return edgeRedlockImpl(nodes, options, "edge-redlock-previous", {}, previous.Redlock);
  } catch (error) {
    return `edge-redlock-previous skipped: ${PREVIOUS_COMMIT} not available (${String((error as Error).message).split("\n")[0]})`;
  }
}
