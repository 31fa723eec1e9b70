// A node that answers an error status whose JSON body names no error: `@upstash/redis` words it as
// "undefined, command was: …"; the vote's cause and the warning say what happened instead.
import { afterEach, expect, it, vi } from "vitest";
import { upstashNode } from "../../src/index.ts";
import { castVote } from "../../src/node/outcome.ts";
import { ACQUIRE } from "../../src/scripts/index.ts";

afterEach(() => vi.unstubAllGlobals());

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
