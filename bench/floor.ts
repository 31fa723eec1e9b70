// The physical floor: raw fetch carrying the library's scripts to the bridges, fanned out and decided the
// way the library decides, with no library in between. Optionally with the library's per-node pipelining.
import type { ClusterNode } from "../dev/cluster.ts";
import { ACQUIRE, RELEASE, scriptShaOf } from "./lib.ts";
import { decide, retryFor, type Impl, type ImplOptions } from "./impl-kit.ts";

type Command = (string | number)[];
type Send = (command: Command) => Promise<unknown>;

export interface FloorOptions {
  /** SCRIPT LOAD both scripts on every node first (off where fetch is answered in-process). */
  loadScripts?: boolean;
  /**
   * The requests to one node that start in the same turn go out as one `/pipeline` request (a lone one
   * as a plain request), as the library batches: the batched floor of the throughput scenario.
   */
  batching?: boolean;
  name?: string;
}

/**
 * Acquire: EVALSHA of the acquire script on every node at once (EVAL where a node answers NOSCRIPT),
 * held once a quorum granted, released everywhere once that cannot happen. Release: resolves once a
 * quorum answered (the library's rule since release is decided at a quorum), the rest run on.
 * @example
 * const options = { nodeTimeout: 500, retryDelay: 200, retryJitter: 100 };
 * const floor = await floorImpl(cluster.nodes, options, { batching: true });
 */
export async function floorImpl(nodes: ClusterNode[], options: ImplOptions, floor: FloorOptions = {}): Promise<Impl> {
  const { loadScripts = true, batching = false, name = batching ? "floor-batched" : "floor" } = floor;
  const [acquireSha, releaseSha] = await Promise.all([scriptShaOf(ACQUIRE.lua), scriptShaOf(RELEASE.lua)]);
  const quorum = Math.floor(nodes.length / 2) + 1;
  const sends = nodes.map((node) =>
    batching
      ? pipelined(node, options.nodeTimeout)
      : (command: Command) => post(node, "/", command, options.nodeTimeout),
  );
  for (const send of loadScripts ? sends : []) {
    await send(["script", "load", ACQUIRE.lua]);
    await send(["script", "load", RELEASE.lua]);
  }
  const script = (send: Send, sha: string, lua: string, key: string, args: (string | number)[]) =>
    send(["evalsha", sha, 1, key, ...args]).catch((error: Error) => {
      if (!error.message.includes("NOSCRIPT")) throw error;
      return send(["eval", lua, 1, key, ...args]);
    });
  const release = (key: string, v: string) =>
    new Promise<void>((resolve) => {
      let answered = 0;
      let settled = 0;
      for (const send of sends) {
        void script(send, releaseSha, RELEASE.lua, key, [v])
          .then(
            () => ++answered === quorum && resolve(),
            () => null,
          )
          .finally(() => ++settled === sends.length && resolve());
      }
    });
  const once = async (key: string, ttl: number): Promise<string> => {
    const v = crypto.randomUUID();
    const grants = sends.map((send) =>
      script(send, acquireSha, ACQUIRE.lua, key, [v, ttl]).then(
        (r) => Array.isArray(r) && r.length === 1 && r[0] === 1,
        () => false,
      ),
    );
    await decide(grants, quorum, () => release(key, v));
    return v;
  };
  return {
    name,
    acquire: (key, ttl, { wait = 0 } = {}) =>
      retryFor(wait, options, async () => {
        const v = await once(key, ttl);
        return { release: () => release(key, v) };
      }),
    close: async () => {},
  };
}

/** One POST to a bridge, cut after `timeoutMs`; resolves with the reply's `result`, rejects with its `error`. */
async function post(node: ClusterNode, path: string, body: unknown, timeoutMs: number): Promise<unknown> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const res = await fetch(node.url + path, {
      method: "POST",
      headers: { authorization: `Bearer ${node.token}` },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    const reply = (await res.json()) as unknown;
    if (path !== "/") return reply;
    const { result, error } = reply as { result?: unknown; error?: string };
    if (error !== undefined) throw new Error(error);
    return result;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A batch is sent once it stopped growing for this many microtask hops (at the latest after 32): the library's rule.
 */
const QUIET_HOPS = 2;
const MAX_HOPS = 32;

/** Commands to `node` that start within one turn share one `/pipeline` request; a lone one goes to `/`. */
function pipelined(node: ClusterNode, timeoutMs: number): Send {
  let open: { command: Command; resolve(v: unknown): void; reject(e: unknown): void }[] | undefined;
  const flush = async (batch: NonNullable<typeof open>) => {
    for (let hop = 0, quiet = 0, seen = batch.length; hop < MAX_HOPS && quiet < QUIET_HOPS; hop++) {
      await undefined;
      quiet = batch.length === seen ? quiet + 1 : 0;
      seen = batch.length;
    }
    open = undefined;
    if (batch.length === 1) return post(node, "/", batch[0].command, timeoutMs).then(batch[0].resolve, batch[0].reject);
    try {
      const replies = (await post(
        node,
        "/pipeline",
        batch.map((m) => m.command),
        timeoutMs,
      )) as { result?: unknown; error?: string }[];
      if (!Array.isArray(replies) || replies.length !== batch.length) throw new Error("unexpected pipeline reply");
      batch.forEach((m, i) => {
        if (replies[i]?.error === undefined) m.resolve(replies[i]?.result);
        else m.reject(new Error(replies[i].error));
      });
    } catch (error) {
      for (const m of batch) m.reject(error);
    }
  };
  return (command) =>
    new Promise((resolve, reject) => {
      if (open) return void open.push({ command, resolve, reject });
      open = [{ command, resolve, reject }];
      void flush(open);
    });
}
