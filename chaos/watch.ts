// Watches a protected resource on the lock nodes themselves, over plain TCP (not through the bridges,
// so no injected fault hides what the nodes hold).
import { Redis } from "ioredis";

/** What one node holds for a key: a value (compare only; never log it), nothing, or no answer. */
export type Holding = string | null | "down";

/**
 * One TCP connection per lock node.
 * @example
 * const watch = new ResourceWatch(lockNodes.map((n) => n.redisUrl));
 * const held = await watch.holders("chaos:resource:0"); // e.g. ["v1", "v1", "v1", null, null]
 */
export class ResourceWatch {
  #nodes: Redis[];

  constructor(redisUrls: string[]) {
    this.#nodes = redisUrls.map((url) => {
      const node = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 200, retryStrategy: () => 50 });
      node.on("error", () => {});
      return node;
    });
  }

  /** What every node holds for `key` right now. */
  holders(key: string): Promise<Holding[]> {
    return Promise.all(this.#nodes.map((node) => node.get(key).catch((): Holding => "down")));
  }

  /** Polls until `done(holders)` or `timeoutMs`; resolves with the last look and whether it was done. */
  async until(key: string, done: (held: Holding[]) => boolean, timeoutMs: number, everyMs = 10): Promise<{ ok: boolean; held: Holding[] }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const held = await this.holders(key);
      if (done(held)) return { ok: true, held };
      if (Date.now() > deadline) return { ok: false, held };
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }

  close(): void {
    for (const node of this.#nodes) node.disconnect();
  }
}

/**
 * The nodes that hold one and the same value, if exactly `nodes` hold it and every other node answered
 * and holds nothing: the resource is held on exactly that set.
 */
export function heldExactlyOn(held: Holding[], nodes: number[]): boolean {
  const value = held[nodes[0]];
  if (typeof value !== "string" || value === "down") return false;
  return held.every((h, i) => (nodes.includes(i) ? h === value : h === null));
}
