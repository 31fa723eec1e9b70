// Pipeline replies of the wrong shape, fuzzed at the fetch level through the real @upstash/redis client the library
// builds. Two acquisitions in one turn go out as one /pipeline request per node. A member counts as granted on a node
// only when the reply is a 2xx JSON array with one entry per command and ITS entry is exactly the success reply
// ({"result":[1]}, no error) — the rule the plain-request path applies (@upstash/redis throws on any truthy `error`):
// any truthy `error` in a pipeline entry is an error (src/node/upstash.ts toOutcomes). Every later request (NOSCRIPT
// fallbacks, cleanups) is answered HTTP 500.
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LockAcquisitionError, Redlock } from "../../../src/index.ts";
import { PUBLISH_FROM_SCRIPT } from "../../../src/scripts/publish-probe.ts";

const entryArb = fc.oneof(
  { weight: 5, arbitrary: fc.constant<unknown>({ result: [1] }) },
  { weight: 1, arbitrary: fc.constant<unknown>({ result: [1], error: null }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom<unknown>(
      { result: [1], error: "ERR boom" },
      { result: [1], error: true },
      { result: [1], error: 1 },
      { result: [1], error: {} },
      { error: "NOSCRIPT No matching script" },
      { result: [0, 5] },
      { result: ["1"] },
      { result: [1, 1] },
      { result: 1 },
      {},
      null,
      1,
      [1],
      "OK",
    ),
  },
  { weight: 1, arbitrary: fc.jsonValue() },
);
const bodyArb = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(entryArb, entryArb).map((entries) => JSON.stringify(entries)) },
  { weight: 1, arbitrary: fc.array(entryArb, { maxLength: 4 }).map((entries) => JSON.stringify(entries)) },
  { weight: 1, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('{"result":[[1],[1]]}', "<html>502</html>", "", '[{"result":[1]},{"result":[1]}'),
  },
);
const replyArb = fc.record({
  status: fc.oneof(
    { weight: 5, arbitrary: fc.constant(200) },
    { weight: 1, arbitrary: fc.constantFrom(400, 500, 503) },
  ),
  body: bodyArb,
});

/** Whether member `i` of a 2-command pipeline got exactly the success reply. */
function grants(reply: { status: number; body: string }, i: number): boolean {
  if (reply.status !== 200) return false;
  try {
    const parsed = JSON.parse(reply.body) as unknown;
    if (!Array.isArray(parsed) || parsed.length !== 2) return false;
    // A null entry makes @upstash/redis throw for the whole reply: every member an error (conservative, fine).
    if (parsed.some((entry) => entry === null)) return false;
    const entry = parsed[i] as { result?: unknown; error?: unknown } | null;
    return (
      typeof entry === "object" &&
      entry !== null &&
      !Array.isArray(entry) &&
      !entry.error &&
      Array.isArray(entry.result) &&
      entry.result.length === 1 &&
      entry.result[0] === 1
    );
  } catch {
    return false;
  }
}

/**
 * A new Redlock's first publishing script carries a probe of PUBLISH from a flagged script as the pipeline's first
 * member: it is answered 0 (accepted), ahead of the fuzzed entries, which stay the scripts' own.
 */
function withProbe(init: RequestInit | undefined, body: string): string {
  const commands = JSON.parse(String(init?.body ?? "[]")) as unknown[][];
  const probed = Array.isArray(commands[0]) && String(commands[0][1]).endsWith(PUBLISH_FROM_SCRIPT);
  if (!probed) return body;
  try {
    const entries = JSON.parse(body) as unknown;
    return Array.isArray(entries) ? JSON.stringify([{ result: 0 }, ...entries]) : body;
  } catch {
    return body;
  }
}

afterEach(() => vi.unstubAllGlobals());

describe("fuzzed pipeline replies (fast-check)", () => {
  it("each member is held exactly when a quorum answered ITS entry with the exact success reply", async () => {
    const nodes = Array.from({ length: 5 }, (_, i) => ({
      url: `https://node${i}.pipe.test`,
      token: "pipe-token-secret",
    }));
    let shown = false;
    await fc.assert(
      fc.asyncProperty(fc.array(replyArb, { minLength: 5, maxLength: 5 }), async (replies) => {
        const first = new Set<number>();
        vi.stubGlobal("fetch", async (input: string | URL | Request, init?: RequestInit) => {
          const url = String(input instanceof Request ? input.url : input);
          const node = Number(/node(\d)/.exec(url)?.[1]);
          if (url.endsWith("/pipeline") && !first.has(node)) {
            first.add(node);
            return new Response(withProbe(init, replies[node].body), { status: replies[node].status });
          }
          return new Response(JSON.stringify({ error: "later request" }), { status: 500 });
        });
        const redlock = new Redlock(nodes, { nodeTimeout: 100, retryCount: 0 });
        const outcomes = await Promise.all(
          [0, 1].map((i) =>
            redlock.acquire([`pipe:${i}`], 1_000).then(
              () => "acquired",
              (e: unknown) => (e instanceof LockAcquisitionError ? "refused" : String(e)),
            ),
          ),
        );
        expect(first.size).toBe(5); // both went out as one pipeline per node
        const expected = [0, 1].map((i) => (replies.filter((r) => grants(r, i)).length >= 3 ? "acquired" : "refused"));
        if (!shown && JSON.stringify(outcomes) !== JSON.stringify(expected)) {
          shown = true;
          console.log(`replies ${JSON.stringify(replies)} → ${outcomes} (expected ${expected})`);
        }
        expect(outcomes).toEqual(expected);
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 300) },
    );
  }, 120_000);
});

describe("an entry that carries an error (not a string) and the success result", () => {
  it("is an error in a plain request and must be one in a pipeline too", async () => {
    const nodes = Array.from({ length: 5 }, (_, i) => ({
      url: `https://node${i}.pipe.test`,
      token: "pipe-token-secret",
    }));
    vi.stubGlobal("fetch", async (input: string | URL | Request) => {
      const url = String(input instanceof Request ? input.url : input);
      if (url.endsWith("/pipeline"))
        return new Response(
          JSON.stringify([
            { result: [1], error: true },
            { result: [1], error: { code: 1 } },
          ]),
          { status: 200 },
        );
      return new Response(JSON.stringify({ result: [1], error: true }), { status: 200 });
    });
    const redlock = new Redlock(nodes, { nodeTimeout: 100, retryCount: 0 });
    const lone = await redlock.acquire(["lone"], 1_000).then(
      () => "acquired",
      () => "refused",
    );
    const batched = await Promise.all(
      [0, 1].map((i) =>
        redlock.acquire([`both:${i}`], 1_000).then(
          () => "acquired",
          () => "refused",
        ),
      ),
    );
    console.log(`same entry {result:[1], error:<not a string>}: plain request → ${lone}; pipeline → ${batched}`);
    expect(lone).toBe("refused");
    expect(batched).toEqual(["refused", "refused"]);
  });
});
