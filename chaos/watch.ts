// Watches a protected resource on the lock nodes themselves, over plain TCP (not through the bridges,
// so no injected fault hides what the nodes hold).
import { Redis } from "ioredis";

/** What one node holds for a key: a value (compare only; never log it), nothing, or no answer. */
export type Holding = string | null | "down";

/**
 * Where a semaphore's permits live on a node: the sound semaphore's slot keys (each a mutex holding its
 * permit's value), or the naive semaphore's sorted set (member → expiry in ms).
 */
export type PermitKeys = { slots: string[] } | { naive: string };

/** The permits one node holds now, as their values or members (compare only; never log them), or no answer. */
export type PermitHolding = string[] | "down";

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
      const node = new Redis(url, {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: 200,
        retryStrategy: () => 50,
      });
      node.on("error", () => {});
      return node;
    });
  }

  /** What every node holds for `key` right now. */
  holders(key: string): Promise<Holding[]> {
    return Promise.all(this.#nodes.map((node) => node.get(key).catch((): Holding => "down")));
  }

  /** Polls until `done(holders)` or `timeoutMs`; resolves with the last look and whether it was done. */
  until(
    key: string,
    done: (held: Holding[]) => boolean,
    timeoutMs: number,
    everyMs = 10,
  ): Promise<{ ok: boolean; held: Holding[] }> {
    return poll(() => this.holders(key), done, timeoutMs, everyMs);
  }

  /**
   * The live permits of a semaphore on every node (naive: members not yet expired by this machine's clock, which the
   * nodes share).
   */
  permits(keys: PermitKeys): Promise<PermitHolding[]> {
    return Promise.all(
      this.#nodes.map(async (node): Promise<PermitHolding> => {
        try {
          if ("naive" in keys) return await node.zrangebyscore(keys.naive, `(${Date.now()}`, "+inf");
          return (await node.mget(...keys.slots)).filter((v): v is string => v !== null);
        } catch {
          return "down";
        }
      }),
    );
  }

  /** Polls {@link ResourceWatch.permits} until `done` or `timeoutMs`. */
  untilPermits(
    keys: PermitKeys,
    done: (held: PermitHolding[]) => boolean,
    timeoutMs: number,
    everyMs = 10,
  ): Promise<{ ok: boolean; held: PermitHolding[] }> {
    return poll(() => this.permits(keys), done, timeoutMs, everyMs);
  }

  close(): void {
    for (const node of this.#nodes) node.disconnect();
  }
}

async function poll<T>(
  look: () => Promise<T>,
  done: (held: T) => boolean,
  timeoutMs: number,
  everyMs: number,
): Promise<{ ok: boolean; held: T }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const held = await look();
    if (done(held)) return { ok: true, held };
    if (Date.now() > deadline) return { ok: false, held };
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Each permit the nodes hold, as the sorted list of nodes that hold it (its value or member appears
 * there), e.g. [[0,1,2],[1,2,3]]; sorted. Those held on at least a quorum are valid as far as the nodes go.
 */
export function permitsHeldOn(held: PermitHolding[]): number[][] {
  const on = new Map<string, number[]>();
  held.forEach((values, node) => {
    if (values === "down") return;
    for (const v of values) on.set(v, [...(on.get(v) ?? []), node]);
  });
  return [...on.values()].sort((a, b) => a.join().localeCompare(b.join()));
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
