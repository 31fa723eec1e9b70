// A user-supplied `Redis` instance (the ScriptClient path of upstashNode) is never handed a request whose signal has
// already aborted. A request started anyway would have no landing in its vote, so a cleanup would not wait for it: the
// release that undoes an acquire would go out while that acquire is still on its way.
// Reachable through the public API: the first use of a script computes its SHA (crypto.subtle, a later
// macrotask), and a caller's abort in that window reaches the requests before they are sent.
import { describe, expect, it } from "vitest";
import { Redlock, upstashNode, type ScriptClient } from "../../../src/index.ts";
import { ACQUIRE } from "../../../src/scripts/index.ts";
import { castVote, landingOf } from "../../../src/node/outcome.ts";

interface Call {
  kind: "acquire" | "release";
  abortedAtSend: boolean;
  /** Acquire requests to this client still on their way when this one was sent. */
  acquiresInFlight: number;
}

/** A ScriptClient that records each request: whether `watch` had aborted, and what was still in flight. */
function recording(watch: () => AbortSignal | undefined) {
  const calls: Call[] = [];
  let acquiresInFlight = 0;
  const answer = (args: string[]) => {
    const kind = args.length === 1 ? "release" : "acquire";
    calls.push({ kind, abortedAtSend: watch()?.aborted === true, acquiresInFlight });
    if (kind === "acquire") acquiresInFlight++;
    return new Promise<unknown>((resolve) =>
      setTimeout(() => {
        if (kind === "acquire") acquiresInFlight--;
        resolve(kind === "acquire" ? [1] : 1);
      }, 20),
    );
  };
  const client: ScriptClient = {
    evalsha: (_sha, _keys, args) => answer(args),
    eval: (_lua, _keys, args) => answer(args),
  };
  return { client, calls };
}

describe("ScriptClient node: no request starts on an aborted signal", () => {
  it("node.run with an already-aborted signal starts no request on the user's client (or its vote says when it lands)", async () => {
    const aborted = AbortSignal.abort(new DOMException("cut", "AbortError"));
    const { client, calls } = recording(() => aborted);
    const node = upstashNode(client, "user");
    const vote = await castVote(node, ACQUIRE, ["k"], ["v".repeat(20), "5000"], aborted);
    expect(vote.outcome).toBe("error");
    if (calls.length > 0) expect(landingOf(vote), "a request was started but its vote has no landing").toBeDefined();
    expect(calls).toEqual([]);
  });

  it("an acquisition aborted by the caller in the same tick (first use: SHA still being computed): nothing sent after the abort, no release overtakes its acquire", async () => {
    const controller = new AbortController();
    const nodes = Array.from({ length: 3 }, () => recording(() => controller.signal));
    const redlock = new Redlock(
      nodes.map((n, i) => upstashNode(n.client, `user-${i}`)),
      { retryCount: 0, nodeTimeout: 500 },
    );
    const acquired = redlock.acquire(["first-use"], 5_000, { signal: controller.signal }).then(
      () => "held",
      (e: unknown) => (e as Error).name,
    );
    controller.abort();
    expect(await acquired).not.toBe("held");
    await new Promise((r) => setTimeout(r, 80));
    const calls = nodes.map((n) => n.calls);
    // The release of the failed attempt must not start while the acquire it undoes is still out.
    expect(calls.flat().filter((c) => c.kind === "release" && c.acquiresInFlight > 0)).toEqual([]);
    expect(calls.flat().filter((c) => c.kind === "acquire" && c.abortedAtSend)).toEqual([]);
  });
});
