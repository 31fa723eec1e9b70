// A lock's inspection: who holds some keys on the nodes, read without taking anything. Reads are never votes.
import type { Rounds } from "../quorum/rounds.ts";
import { INSPECT } from "../scripts/inspect.ts";
import { toHex } from "../support/random.ts";

/**
 * What one node says about some keys.
 * @example
 * ```ts
 * const { nodes } = await redlock.inspect(["orders:42"]);
 * nodes[2]; // → { node: 2, label: "eu1-…", held: true, pttl: 8120, holder: "3f2a9c0d11e4b7a2" }
 * ```
 */
export interface NodeInspection {
  /** The node's index in the `nodes` given to `Redlock` (0-based). */
  node: number;
  /** The node's label (its host, or the label you gave). */
  label: string;
  /** Whether any of the keys is set on this node. */
  held: boolean;
  /** The longest PTTL among them (ms; -1: no expiry); absent when not held or unknown. */
  pttl?: number;
  /**
   * Who holds every key here: a digest of the lock's value, the same on every node for one holder within
   * this inspection (salted anew each time: not comparable across inspections, and never the value, which
   * proves ownership). Absent when a key is free or different holders share the keys.
   */
  holder?: string;
  /** Why this node gave no usable answer. */
  error?: string;
}

/**
 * What {@link Redlock.inspect} reports.
 * @example
 * ```ts
 * const { heldByQuorum, freeInMs } = await redlock.inspect(["orders:42"]);
 * ```
 */
export interface Inspection {
  /** The resources read. */
  resources: string[];
  /** How many nodes make a quorum. */
  quorum: number;
  /** Per node, in node order. */
  nodes: NodeInspection[];
  /** Whether one holder holds every resource on a quorum of nodes. */
  heldByQuorum: boolean;
  /**
   * ms until a quorum of nodes holds none of the resources (0: free on a quorum now), if nothing
   * extends or takes them meanwhile; undefined when too many nodes gave no answer or a key never expires.
   */
  freeInMs: number | undefined;
}

/** Per node and key: `{ holder, pttl }` where set, null where free; or why the node gave no usable answer. */
export type Reading = { slots: ({ holder: string; pttl: number } | null)[] } | { error: string };

/**
 * Reads `keys` on every node; holders are digested with a salt of this reading alone.
 */
export async function readAll(rounds: Rounds, keys: string[]): Promise<Reading[]> {
  const replies = await rounds.read(INSPECT, keys);
  const salt = crypto.getRandomValues(new Uint8Array(16));
  return Promise.all(
    replies.map((reply) => (reply.ok ? parse(reply.reply, keys.length, salt) : { error: reply.cause })),
  );
}

async function parse(reply: unknown, count: number, salt: Uint8Array): Promise<Reading> {
  if (!Array.isArray(reply) || reply.length !== count) return { error: "unexpected reply" };
  const slots: ({ holder: string; pttl: number } | null)[] = [];
  for (const entry of reply) {
    if (entry === 0) slots.push(null);
    else if (
      Array.isArray(entry) &&
      entry.length === 2 &&
      typeof entry[0] === "string" &&
      Number.isInteger(entry[1]) &&
      entry[1] >= -1
    ) {
      slots.push({ holder: await digest(entry[0], salt), pttl: entry[1] });
    } else return { error: "unexpected reply" };
  }
  return { slots };
}

/**
 * 64 bits of SHA-256 over a salt and the value: tells holders apart within one inspection without giving
 * the value away; the salt changes with every inspection, so a digest cannot be compared with another
 * reading or tested against guesses of a value.
 * @example
 * ```ts
 * const salt = crypto.getRandomValues(new Uint8Array(16));
 * const holder = await digest(value, salt); // "3f2a9c0d11e4b7a2"
 * ```
 */
export async function digest(value: string, salt: Uint8Array): Promise<string> {
  const text = new TextEncoder().encode(value);
  const input = new Uint8Array(salt.length + text.length);
  input.set(salt);
  input.set(text, salt.length);
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", input)).subarray(0, 8));
}

/** How long a holder seen on nodes with these PTTLs keeps a quorum: the quorum-th longest (-1 never ends). */
export function quorumLasts(pttls: number[], quorum: number): number {
  const sorted = pttls.map((p) => (p === -1 ? Infinity : p)).sort((a, b) => b - a);
  return sorted.length >= quorum ? sorted[quorum - 1] : 0;
}

/**
 * Who holds `resources`, per node and on the whole (see {@link Inspection}).
 */
export async function inspectResources(rounds: Rounds, resources: string[]): Promise<Inspection> {
  const readings = await readAll(rounds, resources);
  const nodes = readings.map((reading, node): NodeInspection => {
    const base = { node, label: rounds.nodes[node].label };
    if ("error" in reading) return { ...base, held: false, error: reading.error };
    const set = reading.slots.filter((slot) => slot !== null);
    if (set.length === 0) return { ...base, held: false };
    const pttl = set.some((s) => s.pttl === -1) ? -1 : Math.max(...set.map((s) => s.pttl));
    const holders = new Set(reading.slots.map((slot) => slot?.holder));
    return {
      ...base,
      held: true,
      pttl,
      ...(holders.size === 1 && !holders.has(undefined) ? { holder: set[0].holder } : {}),
    };
  });
  const counts = new Map<string, number>();
  for (const n of nodes) if (n.holder) counts.set(n.holder, (counts.get(n.holder) ?? 0) + 1);
  // A node is free when none of the keys is set; one in error may never be.
  const freeAt = nodes
    .map((n) => (n.error ? Infinity : !n.held ? 0 : n.pttl === -1 ? Infinity : (n.pttl ?? Infinity)))
    .sort((a, b) => a - b);
  const freeIn = freeAt[rounds.quorum - 1];
  return {
    resources,
    quorum: rounds.quorum,
    nodes,
    heldByQuorum: [...counts.values()].some((count) => count >= rounds.quorum),
    freeInMs: Number.isFinite(freeIn) ? freeIn : undefined,
  };
}
