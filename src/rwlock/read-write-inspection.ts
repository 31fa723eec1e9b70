// A read-write lock's inspection: its writer and its readers on each node, read without taking anything.
import { digest } from "../lock/lock-inspection.ts";
import type { Rounds } from "../quorum/rounds.ts";
import { isRwReading, RW_INSPECT } from "../scripts/rw.ts";
import type { RwKeys } from "./keys.ts";

/**
 * What {@link ReadWriteLock.inspect} reports.
 * @example
 * ```ts
 * const { readers, writer, freeInMs } = await redlock.readWriteLock("doc:7").inspect();
 * ```
 */
export interface ReadWriteInspection {
  /** The lock's name. */
  key: string;
  /** How many nodes make a quorum. */
  quorum: number;
  /** Readers held on a quorum of nodes now. */
  readers: number;
  /** Whether one writer holds it on a quorum of nodes now. */
  writer: boolean;
  /**
   * ms until a quorum of nodes has neither a writer nor a reader (a writer could take it then), if nothing
   * extends or takes it meanwhile; undefined when too many nodes gave no answer or a key never expires.
   */
  freeInMs: number | undefined;
  /** Per node: whether a writer is set, how many readers are live, the longest time either has left. */
  nodes: { node: number; label: string; writer?: boolean; readers?: number; pttl?: number; error?: string }[];
}

/**
 * Reads a read-write lock's keys on every node (see {@link ReadWriteInspection}).
 */
export async function inspectReadWrite(rounds: Rounds, key: string, keys: RwKeys): Promise<ReadWriteInspection> {
  const replies = await rounds.read(RW_INSPECT, [keys.writer, keys.readers]);
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const writers = new Map<string, number>();
  const readers = new Map<string, number>();
  const nodes = await Promise.all(
    replies.map(async (reply, node): Promise<ReadWriteInspection["nodes"][number]> => {
      const label = rounds.nodes[node].label;
      if (!reply.ok) return { node, label, error: reply.cause };
      if (!isRwReading(reply.reply)) return { node, label, error: "unexpected reply" };
      const [writer, writerPttl, entries] = reply.reply;
      if (writer !== 0) count(writers, await digest(writer, salt));
      let pttl = writer === 0 ? 0 : writerPttl === -1 ? Infinity : writerPttl;
      for (let i = 0; i < entries.length; i += 2) {
        count(readers, await digest(String(entries[i]), salt));
        pttl = Math.max(pttl, Number(entries[i + 1]));
      }
      const live = entries.length / 2;
      return {
        node,
        label,
        writer: writer !== 0,
        readers: live,
        ...(writer === 0 && live === 0 ? {} : { pttl: Number.isFinite(pttl) ? pttl : -1 }),
      };
    }),
  );
  const onQuorum = (holders: Map<string, number>) => [...holders.values()].filter((n) => n >= rounds.quorum).length;
  const freeAt = nodes
    .map((n) => (n.error ? Infinity : n.pttl === undefined ? 0 : n.pttl === -1 ? Infinity : n.pttl))
    .sort((a, b) => a - b);
  const freeIn = freeAt[rounds.quorum - 1];
  return {
    key,
    quorum: rounds.quorum,
    readers: onQuorum(readers),
    writer: onQuorum(writers) > 0,
    freeInMs: Number.isFinite(freeIn) ? freeIn : undefined,
    nodes,
  };
}

function count(holders: Map<string, number>, holder: string): void {
  holders.set(holder, (holders.get(holder) ?? 0) + 1);
}
