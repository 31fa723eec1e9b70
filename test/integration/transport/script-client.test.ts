// The ScriptClient path (a user-supplied @upstash/redis `Redis` instance, one Command per request, not the captured
// `request` function) on the real cluster: unknown outcomes are errors, never votes for; @upstash/redis's
// ", command was: [...]" (value, Lua) never reaches an error, a tally or a log; acquire stragglers that land after the
// release's own request are taken back by the follow-up release.
import { Redis } from "@upstash/redis/cloudflare";
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock } from "../../../src/index.ts";
import { capturedWarnings, loadScripts, releaseOvertakingStragglers, settle, textsOf, useCluster } from "../fixture.ts";

const env = useCluster();
const held = async (key: string) => (await Promise.all(env.tcp.map((t) => t.exists(key)))).reduce((a, b) => a + b, 0);
const clients = () =>
  env.cluster.nodes.map(
    (n) =>
      new Redis({
        url: n.url,
        token: n.token,
        retry: { retries: 0 },
        enableAutoPipelining: false,
        automaticDeserialization: false,
      }),
  );

const logged = capturedWarnings();

describe("a user-supplied Redis instance per node", () => {
  it("faults on 3 of 5 nodes: refused, their votes errors, cleanup leaves nothing, no token, value, SHA or command in any text", async () => {
    const tokens = env.cluster.nodes.map((n) => n.token);
    const faults = [
      { status: 500 },
      { status: 400 },
      { garbage: "html" as const },
      { garbage: "json-shape" as const },
      { garbage: "truncated" as const },
      { garbage: "empty" as const },
    ];
    for (const fault of faults) {
      const name = JSON.stringify(fault);
      await Promise.all([0, 1, 2].map((i) => env.admins[i].faults(fault)));
      const redlock = new Redlock(clients(), { retryCount: 0, nodeTimeout: 300 });
      const key = `sc:${name}`;
      const error = (await redlock.acquire([key], 5_000).catch((e: unknown) => e)) as LockAcquisitionError;
      expect(error, name).toBeInstanceOf(LockAcquisitionError);
      const votes = error.attempts[0].votes;
      for (const i of [0, 1, 2]) expect(votes[i].outcome, `${name} node ${i}`).toBe("error");
      expect(error.attempts[0].granted).toBeLessThanOrEqual(2);
      await Promise.all([0, 1, 2].map((i) => env.admins[i].reset()));
      await settle(env);
      await new Promise((r) => setTimeout(r, 50));
      expect(await held(key), name).toBe(0);
      for (const text of [...textsOf(error), ...textsOf(error.attempts), ...logged]) {
        for (const t of tokens) expect(text, name).not.toContain(t);
        expect(text, name).not.toMatch(/command was|redis\.call|[0-9a-f]{40}/);
      }
    }
  });

  it("a release that overtakes acquire stragglers on two slow nodes: the follow-up release takes them back", async () => {
    await loadScripts(env);
    const redlock = new Redlock(clients(), { retryCount: 0, nodeTimeout: 1_000 });
    await releaseOvertakingStragglers(env, redlock, "sc-overtaken", 3);
  });
});
