// One real five-node cluster per test file; faults, counters and data cleared before each test.
import { Redis as TcpRedis } from "ioredis";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { nodeAdmin, settle as settleAdmins } from "../../dev/admin.ts";
import { startCluster, type Cluster } from "../../dev/cluster.ts";

export interface Fixture {
  cluster: Cluster;
  admins: ReturnType<typeof nodeAdmin>[];
  /** Plain TCP clients straight to each redis-server. */
  tcp: TcpRedis[];
}

export function useCluster(nodes = 5): Fixture {
  const fixture = {} as Fixture;
  beforeAll(async () => {
    fixture.cluster = await startCluster({ nodes });
    fixture.admins = fixture.cluster.nodes.map((n) => nodeAdmin(n.adminUrl));
    fixture.tcp = fixture.cluster.nodes.map((n) => {
      const client = new TcpRedis(n.redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
      client.on("error", () => {});
      return client;
    });
  });
  beforeEach(async () => {
    for (const [i, server] of fixture.cluster.servers.entries()) {
      if (server.state === "paused") server.resume();
      if (server.state === "killed") await fixture.admins[i].restart();
    }
    await Promise.all(fixture.admins.map((a) => a.reset()));
    await Promise.all(fixture.tcp.map((c) => c.flushall()));
    await Promise.all(fixture.tcp.map((c) => c.script("FLUSH")));
    await Promise.all(fixture.admins.map((a) => a.resetCounters()));
  });
  afterAll(async () => {
    for (const client of fixture.tcp ?? []) client.disconnect();
    await fixture.cluster?.stop();
  });
  return fixture;
}

/** Waits until no request is in flight at any bridge, at most `timeoutMs`. */
export function settle(fixture: Fixture, timeoutMs = 3_000): Promise<void> {
  return settleAdmins(fixture.admins, timeoutMs);
}
