// Runs inside workerd: `edge-redlock/testing/memory` (memoryNodes) needs no Redis, no process and no
// node: module, so a Worker's unit tests can use it. The entry point's own file is imported, as the package exports it.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock } from "../../src/index.ts";
import { memoryNodes } from "../../src/testing/memory.ts";

describe("memoryNodes inside workerd", () => {
  it("runs in workerd (navigator.userAgent says so)", () => {
    expect(navigator.userAgent).toBe("Cloudflare-Workers");
  });

  it("grants one holder, refuses a second, and frees the lock on release", async () => {
    const redlock = new Redlock(memoryNodes(5), { retryCount: 0 });
    const lock = await redlock.acquire(["wd:memory"], 5_000);
    const refused = await redlock.acquire(["wd:memory"], 5_000).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LockAcquisitionError);
    expect((refused as LockAcquisitionError).reason).toBe("held");
    await (await lock.release()).pending;
    await (await redlock.acquire(["wd:memory"], 5_000)).release();
  });

  it("survives two of five nodes down or hung, not three, with the real timers of workerd", async () => {
    const nodes = memoryNodes(5);
    const redlock = new Redlock(nodes, { retryCount: 0, nodeTimeout: 100 });
    nodes[0].mode = "down";
    nodes[1].mode = "hang";
    expect(await redlock.using(["wd:memory:faults"], 5_000, async () => "done")).toBe("done");
    nodes[2].mode = "down";
    const error = await redlock.acquire(["wd:memory:faults"], 5_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).reason).toBe("unreachable");
  });

  it("expires a key by the clock: after its ttl another holder gets it", async () => {
    const redlock = new Redlock(memoryNodes(3), { retryCount: 0, nodeTimeout: 50 });
    await redlock.acquire(["wd:memory:ttl"], 100); // never released
    await expect(redlock.acquire(["wd:memory:ttl"], 5_000)).rejects.toBeInstanceOf(LockAcquisitionError);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await (await redlock.acquire(["wd:memory:ttl"], 5_000)).release();
  });
});
