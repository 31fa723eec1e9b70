// Tools these tests share: clients on their own links (far clients), nodes whose clock is shifted, a log of
// who held what when, a forger that publishes its own wakeups, and a reader of the lines as the nodes keep them.
import { createHash } from "node:crypto";
import { expect } from "vitest";
import { Redlock, upstashNode, type RedlockNode } from "../../../src/index.ts";
import type { Script } from "../../../src/scripts/script.ts";
import type { Fixture } from "../fixture.ts";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A Redlock over `nodes`, warnings off. */
export const client = (nodes: readonly RedlockNode[], options: ConstructorParameters<typeof Redlock>[1] = {}) =>
  new Redlock(nodes, { warnings: false, ...options });

/**
 * Nodes reached through links of their own named `name` (one per node), with `faults` on each link: a client
 * far from the databases when the faults are latencies.
 */
export async function linkedNodes(
  fixture: Fixture,
  name: string,
  faults: Parameters<Fixture["admins"][number]["linkFaults"]>[1] = {},
): Promise<RedlockNode[]> {
  return Promise.all(
    fixture.admins.map(async (admin, i) => {
      const url = await admin.addLink(name);
      await admin.linkFaults(name, {
        latencyMs: 0,
        messageDelayMs: 0,
        dropMessages: 0,
        cut: false,
        hang: false,
        status: null,
        ...faults,
      });
      return upstashNode({ url, token: fixture.cluster.nodes[i].token, label: `${name}-${i}` });
    }),
  );
}

const NOW_LUA = "NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)";
const EXPIRE_AT_LUA = 'redis.call("PEXPIREAT", q, by)';

/**
 * A node whose clock, as the line's Lua reads it (`TIME`), is `offsetMs` away from the real one: every script
 * runs on the real redis-server with its `NOW` shifted, and the line key's absolute expiry shifted back to the real
 * clock. Durations (PX, PTTL) do not depend on the offset. A line script whose clock this cannot find throws, so a
 * change to the line's Lua cannot turn the shift off unnoticed.
 */
export function shiftedNode(node: RedlockNode, offsetMs: number): RedlockNode {
  const cache = new Map<Script, Script>();
  const shift = (script: Script): Script => {
    let shifted = cache.get(script);
    if (!shifted) {
      const line = script.lua.includes("node_now()");
      if (line && (!script.lua.includes(NOW_LUA) || !script.lua.includes(EXPIRE_AT_LUA)))
        throw new Error(`shiftedNode: the clock of the line's Lua is not found in ${script.name}`);
      const lua = line
        ? script.lua
            .replace(NOW_LUA, `${NOW_LUA} + (${offsetMs})`)
            .replace(EXPIRE_AT_LUA, `redis.call("PEXPIREAT", q, by - (${offsetMs}))`)
        : script.lua;
      shifted = { name: script.name, lua, vote: script.vote };
      cache.set(script, shifted);
    }
    return shifted;
  };
  return {
    label: `${node.label}${offsetMs >= 0 ? "+" : ""}${offsetMs}ms`,
    run: (script, keys, args, signal) => node.run(shift(script), keys, args, signal),
    ...(node.subscribe ? { subscribe: node.subscribe.bind(node) } : {}),
  };
}

/** Counts the requests (scripts and subscriptions) a client's nodes send. */
export function countedNodes(nodes: readonly RedlockNode[]): { nodes: RedlockNode[]; sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    nodes: nodes.map((node) => ({
      label: node.label,
      run(script, keys, args, signal) {
        sent.push(script.name);
        return node.run(script, keys, args, signal);
      },
      ...(node.subscribe
        ? {
            subscribe(channel: string, onMessage: (payload: string) => void, signal: AbortSignal) {
              sent.push("subscribe");
              return node.subscribe!(channel, onMessage, signal);
            },
          }
        : {}),
    })),
  };
}

/** A `then` handler that notes `name` in `order` when the acquisition it follows resolves. */
export function noted<T>(order: string[], name: string): (value: T) => T {
  return (value) => {
    order.push(name);
    return value;
  };
}

/** How many requests of each kind were sent, as a string for assertion messages. */
export function tally(sent: readonly string[]): string {
  const counts: Record<string, number> = {};
  for (const name of sent) counts[name] = (counts[name] ?? 0) + 1;
  return JSON.stringify(counts);
}

/** The wake channel of a line key, as the scripts derive it. */
export const wakeChannelOf = (lineKey: string) =>
  `edge-redlock:wake:${createHash("sha1").update(lineKey).digest("hex").slice(0, 20)}`;

/** A line as one node keeps it: its entries (ticket, deadline), the key's PTTL and the node's time (ms). */
export async function lineOn(fixture: Fixture, node: number, key: string) {
  const tcp = fixture.tcp[node];
  const [flat, pttl, time] = await Promise.all([tcp.zrange(key, 0, -1, "WITHSCORES"), tcp.pttl(key), tcp.time()]);
  const entries: { ticket: string; deadline: number }[] = [];
  for (let i = 0; i < flat.length; i += 2) entries.push({ ticket: flat[i], deadline: Number(flat[i + 1]) });
  const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
  return { entries, pttl, now };
}

/** One holding: from the moment acquire resolved to the end of the validity it reported, or the release call. */
export interface Holding {
  who: string;
  kind: "exclusive" | "shared";
  start: number;
  end: number;
}

/** Records holdings and checks that they never overlap beyond what their kind allows. */
export class HoldLog {
  readonly holdings: Holding[] = [];

  /** Call right after acquire resolved; returns the function to call right before release. */
  held(
    who: string,
    validityMs: number,
    kind: Holding["kind"] = "exclusive",
  ): { extended(validityMs: number): void; releasing(): void } {
    const start = performance.now();
    const holding: Holding = { who, kind, start, end: start + validityMs };
    this.holdings.push(holding);
    return {
      extended: (v) => {
        holding.end = Math.max(holding.end, performance.now() + v);
      },
      releasing: () => {
        holding.end = Math.min(holding.end, performance.now());
      },
    };
  }

  /** The greatest number of holdings valid at one moment (of `kind`, or all). */
  maxConcurrent(filter: (h: Holding) => boolean = () => true): { count: number; at: Holding[] } {
    const hs = this.holdings.filter(filter);
    let best = { count: 0, at: [] as Holding[] };
    for (const h of hs) {
      const at = hs.filter((o) => o.start <= h.start && o.end > h.start);
      if (at.length > best.count) best = { count: at.length, at };
    }
    return best;
  }

  /** No exclusive holding overlaps any other holding. */
  expectExclusive(): void {
    for (const w of this.holdings.filter((h) => h.kind === "exclusive"))
      for (const o of this.holdings)
        if (o !== w)
          expect(o.start < w.end && w.start < o.end, `overlap: ${JSON.stringify(w)} and ${JSON.stringify(o)}`).toBe(
            false,
          );
  }
}
