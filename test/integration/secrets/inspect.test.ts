// What inspection reveals, on the real cluster: it never holds a lock's or a permit's value, and it is no guessing oracle
// for data kept on the lock databases. `holder` is 64 bits of SHA-256 of whatever a key holds, for any key outside the
// library's namespace (the demo keeps its state on database 1 and serves GET /status/:key without authentication), so
// holder digests are salted anew for each inspection (src/lock/lock-inspection.ts).
import { describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { Redlock } from "../../../src/index.ts";
import { createApp } from "../../../worker/app.ts";
import { settle, useCluster } from "../fixture.ts";

const env = useCluster();

describe("inspection output (real cluster)", () => {
  it("never holds a lock's or a permit's value (lock, permit, JSON of both inspections)", async () => {
    const redlock = new Redlock(env.nodes);
    const lock = await redlock.acquire(["insp:k"], 5_000);
    const s = redlock.semaphore("insp:s", 2);
    const permit = await s.acquire(5_000);
    await settle(env);
    const text = JSON.stringify([await redlock.inspect(["insp:k"]), await s.inspect(), lock, permit]);
    expect(text).not.toContain(lock.value);
    expect(text).not.toContain(permit.value);
    expect(text).toContain('"heldByQuorum":true');
    await Promise.all([lock, permit].map(async (l) => (await l.release()).pending));
  });

  it("the demo's GET /status/:key does not let anyone recover a data value kept on the lock databases", async () => {
    // Any data on database 1, e.g. a 4-digit code a route stored there.
    await Promise.all(env.tcp.map((t) => t.set("otp:alice", "4821", "PX", 60_000)));
    const app = createApp({ redlock: new Redlock(env.nodes) });
    const status = (await (await app.request("/status/otp:alice")).json()) as { nodes: { holder?: string }[] };
    const digest = status.nodes[0].holder;
    const digestOf = (v: string) => createHash("sha256").update(v).digest("hex").slice(0, 16);
    let recovered: string | undefined;
    for (let n = 0; n < 10_000 && !recovered; n++)
      if (digestOf(String(n).padStart(4, "0")) === digest) recovered = String(n).padStart(4, "0");
    console.log(`GET /status/otp:alice → holder ${digest}; recovered by 10^4 guesses: ${recovered}`);
    expect(recovered).toBeUndefined();
  });
});
