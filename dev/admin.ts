// A fetch-only client for a bridge's admin API: works from Node, workerd, Deno and Bun.
import type { Counters, Faults, LinkState } from "./bridge.ts";

/** What `GET /state` returns. */
export interface NodeState {
  faults: Faults;
  counters: Counters;
  /** The node's links (one listener per client, see `Bridge.addLink`), by name. */
  links: Record<string, LinkState>;
  /** The node's server: a redis-server's port, or `memory: true` for a memory node (same states). */
  redis: { state: "running" | "paused" | "killed"; port?: number; memory?: true };
}

/**
 * Controls one node of the local cluster over its `adminUrl`.
 * @example
 * await nodeAdmin(cluster.nodes[0].adminUrl).faults({ latencyMs: 250 });
 * const url = await nodeAdmin(cluster.nodes[0].adminUrl).addLink("client-1");
 * await nodeAdmin(cluster.nodes[0].adminUrl).linkFaults("client-1", { cut: true }); // only client 1 loses node 0
 * await nodeAdmin(cluster.nodes[0].adminUrl).faults({ dropMessages: 1 }); // the next wakeup is lost
 * await nodeAdmin(cluster.nodes[0].adminUrl).cutStreams(); // every subscription stream ends now
 */
export function nodeAdmin(adminUrl: string) {
  const call = async (path: string, body?: unknown): Promise<NodeState> => {
    const res = await fetch(adminUrl + path, body === undefined ? {} : { method: "POST", body: JSON.stringify(body) });
    const json = (await res.json()) as NodeState & { error?: string };
    if (!res.ok) throw new Error(`admin ${path}: ${json.error}`);
    return json;
  };
  return {
    state: () => call("/state"),
    faults: (patch: Partial<Faults>) => call("/faults", patch),
    /** Opens (once) a listener of its own for one client; resolves with its URL. */
    addLink: async (name: string) => (await call("/links", { name })).links[name].url,
    /** Faults on one link only: that client's route to this node. */
    linkFaults: (name: string, patch: Partial<Faults>) => call(`/links/${encodeURIComponent(name)}/faults`, patch),
    /**
     * Ends every open subscription stream of the node now (links' included), after its headers were sent:
     * the connection drops mid-body, or with `graceful` the body ends properly.
     */
    cutStreams: (options: { graceful?: boolean } = {}) => call("/streams/cut", options),
    /** Ends the open subscription streams that came through one link. */
    linkCutStreams: (name: string, options: { graceful?: boolean } = {}) =>
      call(`/links/${encodeURIComponent(name)}/streams/cut`, options),
    reset: () => call("/reset", {}),
    resetCounters: () => call("/counters/reset", {}),
    kill: () => call("/redis/kill", {}),
    pause: () => call("/redis/pause", {}),
    resume: () => call("/redis/resume", {}),
    restart: () => call("/redis/restart", {}),
  };
}

/**
 * Waits until no data request is in flight at any of the given bridges (at most `timeoutMs`): lets the
 * requests a decided round left behind land before a test reads every node.
 * @example
 * await settle(cluster.nodes.map((n) => nodeAdmin(n.adminUrl)));
 */
export async function settle(admins: ReturnType<typeof nodeAdmin>[], timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const states = await Promise.all(admins.map((a) => a.state()));
    if (states.every(({ counters }) => counters.inFlight === 0)) return;
    if (Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * How many of the nodes hold `key`, asked over each node's REST API with `EXISTS` (fetch only: works in
 * every runtime).
 * @example
 * expect(await holding(cluster.nodes, "orders:42")).toBe(0);
 */
export async function holding(nodes: { url: string; token: string }[], key: string): Promise<number> {
  const counts = await Promise.all(
    nodes.map(async (node) => {
      const res = await fetch(node.url, {
        method: "POST",
        headers: { authorization: `Bearer ${node.token}` },
        body: JSON.stringify(["exists", key]),
      });
      return ((await res.json()) as { result: number }).result;
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}
