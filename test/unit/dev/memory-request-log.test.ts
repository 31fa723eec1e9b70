// A memory node keeps a bounded log of its requests, so a long `dev --memory` session does not grow without end:
// past `keptRequests` the oldest tenth goes, and the latest requests stay, in order.
import { describe, expect, it } from "vitest";
import { MemoryNode } from "../../../src/memory/memory-node.ts";
import { RELEASE } from "../../../src/scripts/index.ts";

describe("a memory node's request log", () => {
  it("keeps at most keptRequests, dropping the oldest", async () => {
    const node = new MemoryNode("a");
    node.keptRequests = 50;
    for (let i = 0; i < 120; i++) await node.run(RELEASE, [`k${i}`], ["v"], AbortSignal.timeout(1_000));
    expect(node.requests.length).toBeLessThanOrEqual(50);
    expect(node.requests.length).toBeGreaterThanOrEqual(45);
    const keys = node.requests.map((r) => r.keys[0]);
    expect(keys.at(-1)).toBe("k119");
    expect(keys).toEqual(keys.map((_, i) => `k${120 - keys.length + i}`));
  });
});
