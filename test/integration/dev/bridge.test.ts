// The test bed's REST bridge speaks the Upstash protocol as @upstash/redis expects it (default and lock settings,
// EVALSHA, the allow-key-locking flag, bearer token, argument and reply encoding, base64 mode, command errors,
// /multi-exec), and injects the faults the tests need (HTTP status, garbage, latency, hang, request counts, killing,
// pausing and restarting redis-server).
import { createHash } from "node:crypto";
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { useCluster } from "../fixture.ts";

const env = useCluster(1);
const node = () => env.cluster.nodes[0];
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(node().url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${node().token}`, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

describe("the REST bridge speaks the Upstash protocol", () => {
  it("lets @upstash/redis with its default settings (auto-pipelining, base64) set, get, eval, pipeline and multi", async () => {
    const redis = new Redis({ url: node().url, token: node().token });
    expect(await redis.set("greeting", "héllo wörld ✓")).toBe("OK");
    expect(await redis.get("greeting")).toBe("héllo wörld ✓");
    expect(await Promise.all([redis.incr("n"), redis.incr("n"), redis.get("missing")])).toEqual([1, 2, null]);
    expect(await redis.eval("return {1, ARGV[1], {KEYS[1], 7}}", ["k"], ["v"])).toEqual([1, "v", ["k", 7]]);
    const pipeline = redis.pipeline();
    pipeline.set("p", "1");
    pipeline.incrby("p", 41);
    pipeline.get("p");
    expect(await pipeline.exec()).toEqual(["OK", 42, 42]);
    const tx = redis.multi();
    tx.set("m", "x");
    tx.append("m", "y");
    tx.get("m");
    expect(await tx.exec()).toEqual(["OK", 2, "xy"]);
  });

  it("lets @upstash/redis with the lock's settings (no retries, no auto-pipelining, raw replies) run EVALSHA", async () => {
    const redis = new Redis({
      url: node().url,
      token: node().token,
      retry: { retries: 0 },
      enableAutoPipelining: false,
      automaticDeserialization: false,
    });
    const sha = await redis.scriptLoad("return {1, ARGV[1]}");
    expect(await redis.evalsha(sha, [], ["12345"])).toEqual([1, "12345"]);
    await expect(redis.evalsha("0".repeat(40), [], [])).rejects.toThrow(/NOSCRIPT/);
  });

  it("accepts Upstash's allow-key-locking shebang flag, which plain Redis 7 rejects, unless told to reject it", async () => {
    const redis = new Redis({
      url: node().url,
      token: node().token,
      retry: { retries: 0 },
      enableAutoPipelining: false,
      automaticDeserialization: false,
    });
    const flagged = "#!lua flags=allow-key-locking\nreturn {1, KEYS[1], ARGV[1]}";
    const readOnly = "#!lua flags=no-writes,allow-key-locking\nreturn redis.call('SET', KEYS[1], 'x')";
    const sha = createHash("sha1").update(flagged).digest("hex");
    expect(await redis.eval(flagged, ["k"], ["v"])).toEqual([1, "k", "v"]);
    expect(await redis.evalsha(sha, ["k"], ["w"])).toEqual([1, "k", "w"]); // the SHA of what the client sent
    expect(await redis.scriptLoad(flagged)).toBe(sha);
    await expect(redis.eval(readOnly, ["k"], [])).rejects.toThrow(/not allowed from read-only scripts/); // other flags stay
    expect(
      await (
        await post("/pipeline", [
          ["evalsha", sha, 1, "p", "q"],
          ["eval", flagged, 1, "r", "s"],
        ])
      ).json(),
    ).toEqual([{ result: [1, "p", "q"] }, { result: [1, "r", "s"] }]);
    await env.admins[0].faults({ rejectKeyLocking: true });
    await expect(redis.eval(flagged, ["k"], ["v"])).rejects.toThrow(
      "ERR Unexpected flag in script shebang: allow-key-locking",
    );
    await expect(redis.evalsha(sha, ["k"], ["v"])).rejects.toThrow(/NOSCRIPT/);
    await env.admins[0].reset();
    expect(await redis.eval(flagged, ["k"], ["v"])).toEqual([1, "k", "v"]);
  });

  it("requires the bearer token: 401 with a JSON error otherwise", async () => {
    for (const authorization of [undefined, "Bearer wrong", `Basic ${node().token}`]) {
      const res = await fetch(node().url, {
        method: "POST",
        headers: authorization ? { authorization } : {},
        body: '["ping"]',
      });
      expect(res.status).toBe(401);
      expect(await res.json()).toHaveProperty("error");
    }
  });

  it("converts arguments like String(x) and replies as JSON: integer, string, nil, array", async () => {
    expect(await (await post("/", ["set", "num", 12.5])).json()).toEqual({ result: "OK" });
    expect(await (await post("/", ["get", "num"])).json()).toEqual({ result: "12.5" });
    expect(await (await post("/", ["set", "flag", true])).json()).toEqual({ result: "OK" });
    expect(await (await post("/", ["get", "flag"])).json()).toEqual({ result: "true" });
    expect(await (await post("/", ["set", "nil", null])).json()).toEqual({ result: "OK" });
    expect(await (await post("/", ["get", "nil"])).json()).toEqual({ result: "null" });
    expect(await (await post("/", ["incr", "counter"])).json()).toEqual({ result: 1 });
    expect(await (await post("/", ["get", "nope"])).json()).toEqual({ result: null });
    expect(await (await post("/", ["eval", "return {1, 'a', false, {2}}", 0])).json()).toEqual({
      result: [1, "a", null, [2]],
    });
    expect((await post("/", ["set", "x", { nested: 1 }])).status).toBe(400);
  });

  it("with Upstash-Encoding: base64 encodes every string at every depth, leaves numbers and null", async () => {
    await post("/", ["set", "s", "ünï"]);
    const headers = { "upstash-encoding": "base64" };
    expect(await (await post("/", ["get", "s"], headers)).json()).toEqual({ result: b64("ünï") });
    expect(await (await post("/", ["eval", "return {1, 'a', {'b', 2}, false}", 0], headers)).json()).toEqual({
      result: [1, b64("a"), [b64("b"), 2], null],
    });
    expect(await (await post("/pipeline", [["get", "s"], ["incr", "c"], ["bogus"]], headers)).json()).toEqual([
      { result: b64("ünï") },
      { result: 1 },
      { error: expect.stringMatching(/^ERR unknown command/) },
    ]);
    const error = await (await post("/", ["evalsha", "f".repeat(40), 0], headers)).json();
    expect(error.error).toMatch(/^NOSCRIPT/);
  });

  it("answers command errors with 400 and refuses blocking and connection commands", async () => {
    const res = await post("/", ["evalsha", "0".repeat(40), 0]);
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatch(/^NOSCRIPT/);
    for (const command of [
      ["blpop", "q", 0],
      ["subscribe", "c"],
      ["watch", "k"],
      ["multi"],
      ["exec"],
      ["select", 1],
      ["auth", "x"],
      ["hello", 3],
      ["quit"],
      ["client", "list"],
      ["xread", "BLOCK", 0, "STREAMS", "s", "$"],
    ]) {
      const refused = await post("/", command);
      expect(refused.status, String(command[0])).toBe(400);
    }
    expect(
      (
        await post("/pipeline", [
          ["set", "a", 1],
          ["brpop", "q", 0],
        ])
      ).status,
    ).toBe(400);
    expect((await post("/", "not json")).status).toBe(400);
    expect((await post("/", [])).status).toBe(400);
  });

  it("runs /multi-exec atomically on its own connection", async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        post("/multi-exec", [
          ["rpush", "list", `a${i}`],
          ["rpush", "list", `b${i}`],
        ]).then((r) => r.json()),
      ),
    );
    for (const result of results) expect(result).toHaveLength(2);
    const list = ((await (await post("/", ["lrange", "list", 0, -1])).json()) as { result: string[] }).result;
    for (let i = 0; i < list.length; i += 2) expect(list[i + 1]).toBe(`b${list[i].slice(1)}`);
  });

  it("injects faults: HTTP status, garbage, latency, hang; counts requests", async () => {
    const admin = env.admins[0];
    await admin.faults({ status: 503 });
    expect((await post("/", ["ping"])).status).toBe(503);
    await admin.faults({ status: null, garbage: "html" });
    const html = await post("/", ["ping"]);
    expect(html.headers.get("content-type")).toBe("text/html");
    await admin.faults({ garbage: null, latencyMs: 150 });
    const started = performance.now();
    expect(await (await post("/", ["ping"])).json()).toEqual({ result: "PONG" });
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    await admin.faults({ latencyMs: 0, hang: true });
    const hung = post("/", ["ping"]);
    await new Promise((r) => setTimeout(r, 100));
    expect((await admin.state()).counters.waiting).toBe(1);
    await admin.faults({ hang: false });
    expect(await (await hung).json()).toEqual({ result: "PONG" });
    const { counters } = await admin.state();
    expect(counters).toMatchObject({ received: 4, answered: 2, waiting: 0, commands: { ping: 2 } });
  });

  it("kills, pauses, resumes and restarts the redis-server process (restart comes back empty)", async () => {
    const admin = env.admins[0];
    await post("/", ["set", "survivor", "1"]);
    await admin.pause();
    expect((await admin.state()).redis.state).toBe("paused");
    const during = await Promise.race([
      post("/", ["get", "survivor"]).then(() => "answered"),
      new Promise((r) => setTimeout(() => r("stalled"), 200)),
    ]);
    expect(during).toBe("stalled");
    await admin.resume();
    expect(await (await post("/", ["get", "survivor"])).json()).toEqual({ result: "1" });
    await admin.kill();
    expect((await post("/", ["get", "survivor"])).status).toBe(503);
    await admin.restart();
    expect(await (await post("/", ["get", "survivor"])).json()).toEqual({ result: null });
  });
});
