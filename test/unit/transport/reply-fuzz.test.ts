// Fuzzing node replies at the fetch level, through the real @upstash/redis client the library builds:
// a reply is a grant only when it is exactly the success reply; everything else is a vote against or an error.
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LockAcquisitionError, Redlock } from "../../../src/index.ts";

const NODE_TIMEOUT = 50;
const SUCCESS = JSON.stringify({ result: [1] });

interface Reply {
  status: number;
  body: string;
  /** whole: at once; drip-fast: in several chunks, no waiting; drip-slow: part of the body, then nothing until cut; hang: no response at all. */
  delivery: "whole" | "drip-fast" | "drip-slow" | "hang";
}

const bodyArb = fc.oneof(
  { weight: 4, arbitrary: fc.constant(SUCCESS) },
  { weight: 1, arbitrary: fc.constant(JSON.stringify({ result: [1], error: null })) },
  { weight: 2, arbitrary: fc.jsonValue().map((result) => JSON.stringify({ result })) },
  { weight: 2, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
  { weight: 1, arbitrary: fc.string() },
  { weight: 1, arbitrary: fc.nat(SUCCESS.length - 1).map((n) => SUCCESS.slice(0, n)) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '{"result":["1"]}',
      '{"result":[true]}',
      '{"result":[1,"x"]}',
      '{"result":[1,null]}',
      '{"result":1}',
      '{"result":"OK"}',
      '[{"result":[1]}]',
      '{"result":[1],"error":"ERR boom"}',
      '{"error":"NOSCRIPT No matching script"}',
      '{"result":[0,5]}',
      '{"result":[1.5]}',
      '{"result":[2]}',
      '{"result":[[1]]}',
      "<html>502</html>",
      "",
    ),
  },
);
const replyArb: fc.Arbitrary<Reply> = fc.record({
  status: fc.oneof(
    { weight: 4, arbitrary: fc.constant(200) },
    { weight: 1, arbitrary: fc.integer({ min: 200, max: 599 }) },
  ),
  body: bodyArb,
  delivery: fc.constantFrom("whole", "whole", "drip-fast", "drip-slow", "hang"),
});

/** What the protocol calls success: a 2xx status, a JSON object whose result is exactly [1] and no error. */
/** Statuses whose responses cannot carry a body. */
const NULL_BODY = new Set([204, 205, 304]);

function isExactSuccess(reply: Reply): boolean {
  if (NULL_BODY.has(reply.status)) return false;
  if (reply.status < 200 || reply.status > 299 || reply.delivery === "drip-slow" || reply.delivery === "hang")
    return false;
  try {
    const parsed = JSON.parse(reply.body) as { result?: unknown; error?: unknown };
    return (
      typeof parsed === "object" &&
      parsed !== null &&
      !Array.isArray(parsed) &&
      !parsed.error &&
      Array.isArray(parsed.result) &&
      parsed.result.length === 1 &&
      parsed.result[0] === 1
    );
  } catch {
    return false;
  }
}

function respond(reply: Reply, signal: AbortSignal | null | undefined): Promise<Response> {
  if (reply.delivery === "hang") {
    return new Promise((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason)));
  }
  if (NULL_BODY.has(reply.status)) return Promise.resolve(new Response(null, { status: reply.status }));
  const bytes = new TextEncoder().encode(reply.body);
  if (reply.delivery === "whole") return Promise.resolve(new Response(bytes, { status: reply.status }));
  const chunks = Math.max(1, Math.min(4, bytes.length));
  const size = Math.ceil(bytes.length / chunks);
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      // slow: half the body, then it stalls until the request is cut (no timing in the oracle)
      if (reply.delivery === "drip-slow" && sent >= Math.floor(chunks / 2)) {
        await new Promise<void>((resolve) => signal?.addEventListener("abort", () => resolve()));
        return controller.error(signal?.reason);
      }
      if (sent >= chunks) return controller.close();
      controller.enqueue(bytes.slice(sent * size, (sent + 1) * size));
      sent++;
    },
  });
  return Promise.resolve(new Response(stream, { status: reply.status }));
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("fuzzed node replies (fast-check)", () => {
  it("acquires exactly when a quorum answered the exact success reply", async () => {
    const nodes = Array.from({ length: 5 }, (_, i) => ({
      url: `https://node${i}.fuzz.test`,
      token: "fuzz-token-secret",
    }));
    await fc.assert(
      fc.asyncProperty(fc.array(replyArb, { minLength: 5, maxLength: 5 }), async (replies) => {
        vi.stubGlobal("fetch", (input: string | URL | Request, init?: RequestInit) => {
          const url = String(input instanceof Request ? input.url : input);
          const node = Number(/node(\d)/.exec(url)?.[1]);
          return respond(replies[node], init?.signal);
        });
        // Unbatched: each request is the plain request a lone script sends (no probe of PUBLISH rides along).
        const redlock = new Redlock(nodes, { nodeTimeout: NODE_TIMEOUT, retryCount: 0, batching: false });
        const granted = replies.filter(isExactSuccess).length;
        const outcome = await redlock.acquire(["fuzz"], 1_000).then(
          () => "acquired",
          (error: unknown) => error,
        );
        if (granted >= 3) expect(outcome).toBe("acquired");
        else {
          expect(outcome).toBeInstanceOf(LockAcquisitionError);
          const text = `${String(outcome)} ${JSON.stringify((outcome as LockAcquisitionError).attempts)}`;
          expect(text).not.toContain("fuzz-token-secret");
        }
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 300) },
    );
  }, 120_000);
});
