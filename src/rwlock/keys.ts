// The keys of a read-write lock on the lock nodes: all under the library's reserved prefix, all in KEYS.
import { RESERVED_PREFIX } from "../options.ts";

/** Prefix of every key of the read-write locks. */
export const RW_PREFIX = `${RESERVED_PREFIX}rw:`;

/**
 * The keys of one read-write lock on every node.
 * @example
 * ```ts
 * rwKeys("doc:7").writer; // "edge-redlock:rw:writer:doc:7"
 * ```
 */
export interface RwKeys {
  /** The writer's key: the writer's value, with `PX ttl`, as a mutex's key. */
  writer: string;
  /** The reader set: a sorted set of readers' values scored by their expiry on the set's own clock. */
  readers: string;
  /** The wait queue readers and writers share (tickets ending in `r` or `w`). */
  queue: string;
  /** The writers' fence counter (never expires). */
  fence: string;
}

/**
 * The keys of the read-write lock named `resource`.
 * @example
 * ```ts
 * const { writer, readers, queue } = rwKeys("doc:7");
 * ```
 */
export function rwKeys(resource: string): RwKeys {
  return {
    writer: `${RW_PREFIX}writer:${resource}`,
    readers: `${RW_PREFIX}readers:${resource}`,
    queue: `${RW_PREFIX}line:${resource}`,
    fence: `${RW_PREFIX}fence:${resource}`,
  };
}
