// The WAN profile: five databases at different distances from one client, as five Upstash regions seen
// from one Worker location. Applied to the bridges (HTTP implementations) and mirrored onto the TCP proxies
// (node-redlock, redis-semaphore), with the same seeded draws for every implementation.
import type { ClusterNode } from "../dev/cluster.ts";
import type { Bridges } from "./bridges.ts";
import type { Impl } from "./impl-kit.ts";

/** One-way latency to each node (ms). */
export const WAN_ONE_WAY_MS = [2, 12, 40, 75, 120] as const;
/** ±20 % jitter; a 1 % chance per request (per chunk on TCP) of 200 ms more, a retransmit. */
export const WAN_SPREAD = { jitter: 0.2, stallChance: 0.01, stallMs: 200 } as const;

/**
 * Puts the WAN on every node. The whole round trip (2 × one-way) is added before the command runs and the
 * reply leaves at once: the same time for the client as a delay on each leg. Every node's PRNG restarts
 * from a seed derived from `seed` and the node's index, so implementations measured after the same
 * `applyWan(bridges, seed)` meet the same sequence of delays on each node.
 * @example
 * await applyWan(bridges, 3);
 */
export function applyWan(bridges: Bridges, seed: number): Promise<unknown> {
  return Promise.all(
    bridges.admins.map((a, i) =>
      a.faults({ latencyMs: 2 * WAN_ONE_WAY_MS[i], spread: { ...WAN_SPREAD, seed: seed * 16 + i } }),
    ),
  );
}

/**
 * The physical limit under the WAN: a trivial command (PING) by raw fetch to the five nodes at once, done
 * at the 3rd reply (the quorum: no quorum-based lock can be faster). Shaped like an implementation so it
 * runs in the same rounds: its "release" is a second such round, so each node's draws line up with an
 * acquire and a release of the others.
 * @example
 * const limit = roundTripImpl(cluster.nodes);
 */
export function roundTripImpl(nodes: ClusterNode[]): Impl {
  const quorum = Math.floor(nodes.length / 2) + 1;
  const ping = (node: ClusterNode) =>
    fetch(node.url, { method: "POST", headers: { authorization: `Bearer ${node.token}` }, body: '["ping"]' }).then(
      (r) => r.json(),
    );
  const round = () =>
    new Promise<void>((resolve) => {
      let answered = 0;
      let settled = 0;
      for (const node of nodes) {
        void ping(node)
          .then(
            () => ++answered === quorum && resolve(),
            () => null,
          )
          .finally(() => ++settled === nodes.length && resolve());
      }
    });
  return {
    name: "physical-limit",
    acquire: async () => {
      await round();
      return { release: round };
    },
    close: async () => {},
  };
}
