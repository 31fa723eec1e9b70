// The Upstash transport with a stand-in fetch: a batch goes as one /pipeline request whose body is the commands as the
// REST API takes them (EVALSHA, the SHA, numkeys, the keys, the args); an error status whose JSON body names no error
// is worded as what happened, never as "undefined, command was: …" with the command.
import { afterEach, describe, expect, it, vi } from "vitest";
import { Redlock, upstashNode } from "../../../src/index.ts";
import { castVote } from "../../../src/node/outcome.ts";
import { ACQUIRE } from "../../../src/scripts/index.ts";

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
});

describe("the Upstash transport", () => {
  it("sends a batch as one /pipeline request whose body is the commands as the REST API takes them", async () => {
    const bodies: { url: string; body: unknown }[] = [];
    vi.stubGlobal("fetch", async (input: string | URL | Request, init?: RequestInit) => {
      const url = String(input);
      const body = JSON.parse(String(init?.body)) as unknown[];
      bodies.push({ url, body });
      const answer = (command: unknown[]) => (command.length >= 6 ? [1] : 1); // an acquire, else a release
      if (url.endsWith("/pipeline")) return Response.json((body as unknown[][]).map((c) => ({ result: answer(c) })));
      return Response.json({ result: answer(body) });
    });
    const nodes = Array.from({ length: 3 }, (_, i) => ({ url: `https://node${i}.hot.test`, token: "hot-path-token" }));
    const redlock = new Redlock(nodes, { retryCount: 0 });
    await (await redlock.acquire(["warm"], 5_000)).release(); // the SHA is known: the batch below is one turn
    bodies.length = 0;
    const [a, b] = await Promise.all([redlock.acquire(["a"], 5_000), redlock.acquire(["b"], 5_000)]);
    const first = bodies.filter((r) => r.url === "https://node0.hot.test/pipeline");
    expect(first).toHaveLength(1);
    // One entry per lock, as the REST API takes a command: EVALSHA, the SHA, numkeys, the keys, the args.
    const entries = first[0].body as unknown[][];
    expect(entries).toHaveLength(2);
    entries.forEach((entry, i) => {
      const [command, sha, numkeys, ...rest] = entry;
      expect([command, typeof sha === "string" && /^[0-9a-f]{40}$/.test(sha), typeof numkeys]).toEqual([
        "evalsha",
        true,
        "number",
      ]);
      expect(rest[0]).toBe(["a", "b"][i]);
      expect(rest.slice(numkeys as number)).toContain([a, b][i].value);
    });
    await Promise.all([a.release(), b.release()]);
  });
});

describe("an error status", () => {
  it.each([
    ['{"result":1}', "HTTP error status without an error text"],
    ['{"error":null}', "HTTP error status without an error text"],
    ['{"error":"ERR boom"}', "ERR boom"],
  ])("an HTTP 500 with %s: the cause is %s, never the command", async (body, cause) => {
    vi.stubGlobal("fetch", async () => new Response(body, { status: 500 }));
    const node = upstashNode({ url: "https://eu1-example.upstash.io", token: "t0ken-not-a-real-one" });
    const vote = await castVote(node, ACQUIRE, ["k"], ["v4lue-of-the-lock", "1000", "1"], new AbortController().signal);
    expect(vote).toEqual({ outcome: "error", cause });
  });
});
