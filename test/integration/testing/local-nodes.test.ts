// edge-redlock/testing as a user calls it: startLocalNodes() gives real nodes the real @upstash/redis
// client reaches through the variables, with faults; stop() really stops them; memoryNodes() lock in-process.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock } from "../../../src/index.ts";
import { memoryNodes, startLocalNodes } from "../../../src/testing/index.ts";

describe("startLocalNodes", () => {
  it("starts five nodes whose variables Redlock.fromEnv reads; a cut node leaves a quorum; stop() ends them", async () => {
    const local = await startLocalNodes();
    try {
      expect(Object.keys(local.env).sort()).toEqual(
        [1, 2, 3, 4, 5].flatMap((n) => [`UPSTASH_REDIS_REST_TOKEN_${n}`, `UPSTASH_REDIS_REST_URL_${n}`]).sort(),
      );
      expect(local.nodes.map((n) => n.url)).toEqual(
        [1, 2, 3, 4, 5].map((n) => local.env[`UPSTASH_REDIS_REST_URL_${n}`]),
      );
      const redlock = Redlock.fromEnv(local.env, { retryCount: 0, nodeTimeout: 1_000 });
      await local.faults[3].cut();
      await local.faults[4].status(500);
      const lock = await redlock.acquire(["testing:a"], 5_000);
      await expect(redlock.acquire(["testing:a"], 5_000)).rejects.toBeInstanceOf(LockAcquisitionError);
      await local.faults[2].kill();
      await expect(redlock.acquire(["testing:b"], 5_000)).rejects.toMatchObject({ reason: "unreachable" });
      await local.faults[2].restart();
      for (const faults of local.faults) await faults.reset();
      await (await lock.release()).pending;
      await redlock.using(["testing:a"], 5_000, async () => {});
    } finally {
      await local.stop();
    }
    const after = await fetch(local.nodes[0].url, { method: "POST", body: "[]" }).then(
      () => "answered",
      () => "refused",
    );
    expect(after).toBe("refused");
  });

  it("fails with the install command for each system when redis-server is not where it was said to be", async () => {
    const error = await startLocalNodes({ redisServer: "/nonexistent/redis-server" }).catch((e: Error) => e);
    expect(String((error as Error).message)).toContain("redis-server was not found at /nonexistent/redis-server");
    for (const line of [
      "Debian/Ubuntu:  sudo apt-get update && sudo apt-get install -y redis-server",
      "macOS:          brew install redis",
      "Windows:        in WSL",
    ])
      expect((error as Error).message).toContain(line);
  });
});

describe("memoryNodes", () => {
  it("lock in-process: a second holder is refused while the first holds; two nodes down still leave a quorum of five", async () => {
    const nodes = memoryNodes(5);
    const redlock = new Redlock(nodes, { retryCount: 0 });
    const lock = await redlock.acquire(["m"], 5_000);
    await expect(redlock.acquire(["m"], 5_000)).rejects.toMatchObject({ reason: "held" });
    await lock.release();
    nodes[0].mode = "down";
    nodes[1].mode = "hang";
    await redlock.using(["m"], 5_000, async () => {});
    nodes[2].mode = "garbage";
    await expect(redlock.acquire(["m"], 5_000)).rejects.toMatchObject({ reason: "unreachable" });
    expect(nodes.map((n) => n.label)).toEqual(["memory-1", "memory-2", "memory-3", "memory-4", "memory-5"]);
  });

  it("keys expire with the ttl on the real clock", async () => {
    const nodes = memoryNodes(3);
    const redlock = new Redlock(nodes, { retryCount: 0, nodeTimeout: 20 });
    await redlock.acquire(["short"], 60);
    await expect(redlock.acquire(["short"], 60)).rejects.toMatchObject({ reason: "held" });
    await new Promise((r) => setTimeout(r, 80));
    await redlock.acquire(["short"], 60);
  });
});
