// Runs in vitest's edge-runtime environment (@edge-runtime/vm: the Vercel Edge globals).
import { describe, expect, inject, it } from "vitest";
import { holding, nodeAdmin, settle } from "../../dev/admin.ts";
import { LockAcquisitionError, Redlock } from "../../src/index.ts";

const nodes = inject("clusterNodes");

describe("inside the Vercel Edge runtime", () => {
  it("runs in the edge VM (EdgeRuntime is defined)", () => {
    expect(typeof (globalThis as { EdgeRuntime?: string }).EdgeRuntime).toBe("string");
  });

  it("acquires, contends, extends and releases", async () => {
    const redlock = new Redlock(nodes, { retryCount: 0 });
    const lock = await redlock.acquire(["edge:lib"], 5_000);
    expect(lock.value).toMatch(/^[0-9a-f]{40}$/);
    const error = await redlock.acquire(["edge:lib"], 5_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).reason).toBe("held");
    await lock.extend(9_000);
    expect(lock.validityMs).toBeGreaterThan(8_000);
    await settle(nodes.map((n) => nodeAdmin(n.adminUrl))); // every node's acquire has landed
    const result = await lock.release();
    expect(result.released).toBeGreaterThanOrEqual(3); // resolved once a quorum answered
    await result.pending;
    expect(await holding(nodes, "edge:lib")).toBe(0);
    const again = await redlock.acquire(["edge:lib"], 5_000);
    await again.release();
  });

  it("using() holds the lock across an extension", async () => {
    const result = await new Redlock(nodes, { nodeTimeout: 200 }).using(["edge:using"], 600, async (signal) => {
      await new Promise((r) => setTimeout(r, 900));
      return signal.aborted ? "lost" : "kept";
    });
    expect(result).toBe("kept");
  });
});
