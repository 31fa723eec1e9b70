// Ways to hand the nodes to Redlock, on the real cluster: @upstash/redis instances built by the user (not waited for
// past nodeTimeout on a hung node), and fromEnv reading UPSTASH_REDIS_REST_URL_n / _TOKEN_n, which names every
// missing variable and never prints a value.
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, MissingConfigurationError, Redlock, envNames } from "../../../src/index.ts";
import { useCluster } from "../fixture.ts";

const env = useCluster();

function envOf(nodes: { url: string; token: string }[]): Record<string, string> {
  return Object.fromEntries(
    nodes.flatMap((n, i) => [
      [envNames(i + 1).url, n.url],
      [envNames(i + 1).token, n.token],
    ]),
  );
}

describe("ways to hand the nodes to Redlock", () => {
  it("accepts @upstash/redis Redis instances built by the user", async () => {
    const clients = env.cluster.nodes.map(
      (n) => new Redis({ url: n.url, token: n.token, retry: { retries: 0 }, enableAutoPipelining: false }),
    );
    const redlock = new Redlock(clients);
    const lock = await redlock.acquire(["user-client"], 5_000);
    await expect(new Redlock(clients, { retryCount: 0 }).acquire(["user-client"], 5_000)).rejects.toBeInstanceOf(
      LockAcquisitionError,
    );
    const result = await lock.release();
    expect(result.released).toBeGreaterThanOrEqual(3);
    await result.pending;
    for (const tcp of env.tcp) expect(await tcp.exists("user-client")).toBe(0);
  });

  it("stops waiting for a user's Redis instance on a hung node after nodeTimeout", async () => {
    const clients = env.cluster.nodes.map((n) => new Redis({ url: n.url, token: n.token, retry: { retries: 0 } }));
    await env.admins[0].faults({ hang: true });
    await env.admins[1].faults({ hang: true });
    await env.admins[2].faults({ hang: true });
    const started = performance.now();
    const error = (await new Redlock(clients, { nodeTimeout: 200, retryCount: 0 })
      .acquire(["k"], 5_000)
      .catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error.reason).toBe("unreachable");
    expect(error.attempts[0].votes.slice(0, 3).map((v) => v.outcome === "error" && v.cause)).toEqual([
      "timeout",
      "timeout",
      "timeout",
    ]);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("fromEnv reads UPSTASH_REDIS_REST_URL_n / _TOKEN_n and works", async () => {
    const redlock = Redlock.fromEnv(envOf(env.cluster.nodes));
    expect(redlock.nodes).toHaveLength(5);
    const lock = await redlock.acquire(["from-env"], 5_000);
    await lock.release();
  });

  it("fromEnv names every missing variable and never prints a value", () => {
    const vars = envOf(env.cluster.nodes);
    delete vars.UPSTASH_REDIS_REST_TOKEN_3;
    delete vars.UPSTASH_REDIS_REST_URL_5;
    const error = (() => {
      try {
        Redlock.fromEnv(vars);
      } catch (e) {
        return e as MissingConfigurationError;
      }
    })();
    expect(error).toBeInstanceOf(MissingConfigurationError);
    expect(error?.missing).toEqual(["UPSTASH_REDIS_REST_TOKEN_3", "UPSTASH_REDIS_REST_URL_5"]);
    expect(error?.message).not.toContain(env.cluster.nodes[0].token);
    expect(Redlock.fromEnv(vars, { nodes: 2 }).quorum).toBe(2);
  });
});
