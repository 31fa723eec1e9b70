// Partial partitions in the test bed: each client gets a listener (link) of its own in front of a node,
// and a fault on a link hits that client alone. Real redis-server and bridge.
import { Redis as TcpRedis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { nodeAdmin } from "../../../dev/admin.ts";
import { startCluster, type Cluster } from "../../../dev/cluster.ts";

let cluster: Cluster;
let tcp: TcpRedis;
const admin = () => nodeAdmin(cluster.nodes[0].adminUrl);

beforeAll(async () => {
  cluster = await startCluster({ nodes: 1 });
  tcp = new TcpRedis(cluster.nodes[0].redisUrl);
});
afterAll(async () => {
  tcp.disconnect();
  await cluster.stop();
});
beforeEach(async () => {
  await admin().reset();
  await tcp.flushall();
});

/** One command through `url`: the reply, or "timeout" when nothing came back within `ms`. */
async function command(url: string, args: unknown[], ms = 300): Promise<unknown> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${cluster.nodes[0].token}` },
      body: JSON.stringify(args),
      signal: AbortSignal.timeout(ms),
    });
    return res.ok ? ((await res.json()) as { result: unknown }).result : `HTTP ${res.status}`;
  } catch (error) {
    if ((error as Error).name === "TimeoutError") return "timeout";
    throw error;
  }
}

describe("links: one listener per client in front of a node", () => {
  it("a cut link loses the node for its client only; the others and the plain URL still reach it", async () => {
    const a = await admin().addLink("client-a");
    const b = await admin().addLink("client-b");
    expect(await admin().addLink("client-a")).toBe(a);
    await admin().linkFaults("client-a", { cut: true });
    expect(await command(a, ["set", "k", "from-a"])).toBe("timeout");
    expect(await command(b, ["set", "k", "from-b"])).toBe("OK");
    expect(await command(cluster.nodes[0].url, ["get", "k"])).toBe("from-b");
    const state = await admin().state();
    expect(state.links["client-a"].faults.cut).toBe(true);
    expect(state.links["client-b"].faults.cut).toBe(false);
  });

  it("a request dropped by a cut never runs, also after the cut heals (lost, not delayed)", async () => {
    const a = await admin().addLink("client-a");
    await admin().linkFaults("client-a", { cut: true });
    const dropped = command(a, ["set", "dropped", "1"], 2_000);
    await new Promise((r) => setTimeout(r, 100));
    await admin().linkFaults("client-a", { cut: false });
    expect(await dropped).toBe("timeout");
    expect(await tcp.get("dropped")).toBeNull();
    expect(await command(a, ["set", "after", "1"])).toBe("OK");
  });

  it("a hang on a link holds its requests and lets them go on when cleared (a slow route, not a lost one)", async () => {
    const a = await admin().addLink("client-a");
    await admin().linkFaults("client-a", { hang: true });
    const held = command(a, ["set", "held", "1"], 2_000);
    await new Promise((r) => setTimeout(r, 100));
    expect(await tcp.get("held")).toBeNull();
    await admin().linkFaults("client-a", { hang: false });
    expect(await held).toBe("OK");
    expect(await tcp.get("held")).toBe("1");
  });

  it("node-wide faults still hit every link; a link's status answers for that link alone", async () => {
    const a = await admin().addLink("client-a");
    const b = await admin().addLink("client-b");
    await admin().faults({ status: 503 });
    expect(await command(a, ["ping"])).toBe("HTTP 503");
    expect(await command(b, ["ping"])).toBe("HTTP 503");
    await admin().faults({ status: null });
    await admin().linkFaults("client-b", { status: 500 });
    expect(await command(a, ["ping"])).toBe("PONG");
    expect(await command(b, ["ping"])).toBe("HTTP 500");
    await admin().reset();
    expect(await command(b, ["ping"])).toBe("PONG");
  });
});
