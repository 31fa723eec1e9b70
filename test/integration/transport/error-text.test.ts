// Failures are judged by the database's words, not by the command echoed back. @upstash/redis appends the command JSON
// to the message of every HTTP-status error (`…, command was: ["evalsha", sha, "1", "<key>", …]`; for EVAL the script
// text, which carries "allow-key-locking"), so a resource NAME holding "NOSCRIPT" or "unexpected flag" +
// "allow-key-locking" (user input through the Hono middleware's key function) must neither turn an error reply into a
// NOSCRIPT → EVAL re-send nor drop the key-locking flag for the node for good: both are judged from errorText() (the
// command stripped).
import { describe, expect, it } from "vitest";
import { Redlock } from "../../../src/index.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";

const env = useCluster();
const config = () => env.cluster.nodes.map(({ url, token }) => ({ url, token }));
const counters = async () => (await Promise.all(env.admins.map((a) => a.state()))).map((s) => s.counters);

describe("failures are judged by the database's words, not by the command echoed back (real cluster)", () => {
  it("an HTTP error on EVALSHA is one request, whatever the key is called", async () => {
    await loadScripts(env);
    const redlock = new Redlock(config(), { retryCount: 0 });
    await env.admins[0].faults({ status: 500 });
    await env.admins[0].resetCounters();
    await (await redlock.acquire(["order:plain"], 5_000)).release();
    const plain = (await counters())[0].received;
    await env.admins[0].resetCounters();
    await (await redlock.acquire(["order:NOSCRIPT"], 5_000)).release();
    const named = (await counters())[0].received;
    console.log(
      `node 0 requests (acquire+release) under HTTP 500: key "order:plain" ${plain}, key "order:NOSCRIPT" ${named}`,
    );
    expect(named).toBe(plain);
  });

  it("one HTTP error on a lock whose name holds the words does not drop the key-locking flag for the node for good", async () => {
    const redlock = new Redlock(config(), { retryCount: 0 });
    await env.admins[0].faults({ status: 500 });
    await (await redlock.acquire(["NOSCRIPT Unexpected flag"], 5_000)).release();
    await env.admins[0].faults({ status: null });
    await settle(env);
    await Promise.all(env.admins.map((a) => a.resetCounters()));
    await (await (await redlock.acquire(["later:ordinary"], 5_000)).release()).pending;
    const flagged = (await counters()).map((c) => c.flaggedScripts);
    console.log(`scripts carrying allow-key-locking per node after the error:`, flagged);
    expect(flagged[0]).toBeGreaterThan(0);
  });
});
