// Nodes whose `fetch` is answered in-process: no network, no bridge, so what is measured is the client's
// own CPU. Shared by `npm run bench:where`, the in-process profile and the CPU scenario of `npm run bench`.
import { createHash } from "node:crypto";
import type { ClusterNode } from "../dev/cluster.ts";
import { LEAVE, RELEASE, RW_READ_RELEASE, withoutKeyLocking } from "../src/scripts/index.ts";

/** The SHA-1s (flagged and not) of the current library's releases: their reply is an integer, not `[1]`. */
const RELEASES = new Set(
  [RELEASE, LEAVE, RW_READ_RELEASE].flatMap(({ lua }) =>
    [lua, withoutKeyLocking(lua)].map((text) => createHash("sha1").update(text).digest("hex")),
  ),
);

/**
 * `count` nodes at addresses nothing listens on (fetch never reaches them once {@link answerInProcess} runs).
 * @example
 * const nodes = fakeNodes(5);
 */
export function fakeNodes(count: number): ClusterNode[] {
  return Array.from({ length: count }, (_, i) => ({
    url: `http://127.0.0.1:${1 + i}`,
    token: `in-process-token-${i}`,
    redisUrl: "",
    adminUrl: "",
  }));
}

/**
 * Replaces the global fetch with one that grants every acquire (`EVALSHA sha 1 key value ttl n`, of any
 * version of the library: `[1]`) and answers 1 to everything shorter and to the current library's releases
 * (a fair lock releases through LEAVE, as long as an acquire), plain or pipelined. `turn`: answer after a macrotask
 * (setImmediate), as a network would, so the requests of concurrent cycles meet in the batches they would meet in.
 * Returns the fetch it replaced.
 * @example
 * const realFetch = answerInProcess({ turn: true });
 */
export function answerInProcess(options: { turn?: boolean } = {}): typeof fetch {
  const answer = (command: unknown[]) => (command.length >= 6 && !RELEASES.has(String(command[1])) ? [1] : 1);
  const previous = globalThis.fetch;
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const body = JSON.parse(String(init?.body)) as unknown[];
    if (options.turn) await new Promise((r) => setImmediate(r));
    if (String(input).endsWith("/pipeline"))
      return Response.json((body as unknown[][]).map((c) => ({ result: answer(c) })));
    return Response.json({ result: answer(body) });
  }) as typeof fetch;
  return previous;
}
