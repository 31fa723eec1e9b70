// The bench's view of the bridges: faults on and off, and their HTTP request counters.
import { nodeAdmin, settle } from "../dev/admin.ts";
import type { ClusterNode } from "../dev/cluster.ts";

export type Admin = ReturnType<typeof nodeAdmin>;

/**
 * The admin clients of `nodes`, with the helpers the scenarios share.
 * @example
 * const bridges = bridgesOf(cluster.nodes);
 * await bridges.resetCounters(); … ; const requests = await bridges.received();
 */
export function bridgesOf(nodes: ClusterNode[]) {
  const admins = nodes.map((n) => nodeAdmin(n.adminUrl));
  return {
    admins,
    /**
     * Clears every fault. Not the admin `/reset`: that also forgets the scripts the bridge has seen, so the
     * next EVALSHA of each HTTP implementation would pay a NOSCRIPT and an EVAL inside a measured cycle.
     */
    clearFaults: () =>
      Promise.all(
        admins.map((a) =>
          a.faults({ latencyMs: 0, spread: null, hang: false, cut: false, status: null, garbage: null }),
        ),
      ),
    resetCounters: () => Promise.all(admins.map((a) => a.resetCounters())),
    /** HTTP requests received by all bridges since the last counter reset, once no request is in flight. */
    async received(): Promise<number> {
      await settle(admins);
      const states = await Promise.all(admins.map((a) => a.state()));
      return states.reduce((sum, s) => sum + s.counters.received, 0);
    },
    /** Lets the requests a decided round left behind land (acquire stragglers, a release's last nodes). */
    settle: () => settle(admins),
  };
}

export type Bridges = ReturnType<typeof bridgesOf>;
