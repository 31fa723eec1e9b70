// A fault the memory backend cannot play is refused, never taken and ignored: a memory node runs no Lua, so a test
// that asks it to refuse PUBLISH in flagged scripts would otherwise pass without testing anything.
import { expect, it } from "vitest";
import { nodeAdmin } from "../../../dev/admin.ts";
import { startMemoryCluster } from "../../../dev/memory-cluster.ts";

it("refuseScriptPublish is refused on a memory node, directly and through the admin API; other faults still apply", async () => {
  const cluster = await startMemoryCluster({ nodes: 1 });
  try {
    expect(() => cluster.bridges[0].setFaults({ refuseScriptPublish: true })).toThrow(/redis-server backend/);
    await expect(nodeAdmin(cluster.nodes[0].adminUrl).faults({ refuseScriptPublish: true })).rejects.toThrow(
      /redis-server backend/,
    );
    expect(cluster.bridges[0].faults.refuseScriptPublish).toBe(false);
    cluster.bridges[0].setFaults({ refuseScriptPublish: false, latencyMs: 5 });
    expect(cluster.bridges[0].faults.latencyMs).toBe(5);
  } finally {
    await cluster.stop();
  }
});
