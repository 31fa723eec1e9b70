// Memory nodes have the process controls of real ones: kill (no answer, data gone, until restart), pause and
// resume, restart (empty); a killed node of either kind answers 503 in words that say what brings it back,
// never the Redis client's internals.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalNodes, type LocalNodes } from "../../../src/testing/index.ts";

const ping = (local: LocalNodes, i: number, signal?: AbortSignal) =>
  fetch(local.nodes[i].url, {
    method: "POST",
    headers: { authorization: `Bearer ${local.nodes[i].token}` },
    body: JSON.stringify(["SET", "k", "v"]),
    signal,
  });

describe.each([
  ["memory", true],
  ["redis-server", false],
])("%s nodes", (_, memory) => {
  let local: LocalNodes;
  beforeAll(async () => {
    local = await startLocalNodes({ nodes: 1, memory });
  });
  afterAll(() => local.stop());

  it("kill: 503 naming the fix, no client internals; restart: answers again, empty", async () => {
    expect((await ping(local, 0)).status).toBe(200);
    await local.faults[0].kill();
    const down = await ping(local, 0);
    expect(down.status).toBe(503);
    const { error } = (await down.json()) as { error: string };
    expect(error).toBe(
      "redis unavailable: the server behind this local node is down (faults.restart() starts it again, empty)",
    );
    await local.faults[0].restart();
    const get = await fetch(local.nodes[0].url, {
      method: "POST",
      headers: { authorization: `Bearer ${local.nodes[0].token}` },
      body: JSON.stringify(["GET", "k"]),
    });
    expect(await get.json()).toEqual({ result: null });
  });

  it("pause holds requests until resume", async () => {
    await local.faults[0].pause();
    let answered = false;
    const held = ping(local, 0).then((res) => {
      answered = true;
      return res.status;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(answered).toBe(false);
    await local.faults[0].resume();
    expect(await held).toBe(200);
  });
});

it("a control a node refuses says which one and why, without the admin API's JSON", async () => {
  const local = await startLocalNodes({ nodes: 1, memory: true });
  try {
    await expect(local.faults[0].resume()).rejects.toThrow(
      "edge-redlock/testing: /redis/resume failed (HTTP 400): cannot resume a running memory node",
    );
  } finally {
    await local.stop();
  }
});
