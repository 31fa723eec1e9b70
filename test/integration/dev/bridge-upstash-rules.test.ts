// The bridge is as strict as Upstash where a lock could be fooled: the allow-key-locking rules, SCRIPT
// state across SCRIPT FLUSH and restarts, the request and key size limits, and the smaller protocol
// details (401 text, "OK" in base64 mode, HGETALL, integers beyond 2^53). Real redis-server, real
// @upstash/redis, the library through its public entry only.
import { createHash } from "node:crypto";
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { Redlock, fencedRead, fencedWrite, type ScriptClient } from "../../../src/index.ts";
import { loadScripts, useCluster } from "../fixture.ts";

const env = useCluster(1);
const node = () => env.cluster.nodes[0];
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(node().url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${node().token}`, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
/** @upstash/redis as the library configures it: one attempt, no auto-pipelining, raw replies. */
const raw = () =>
  new Redis({
    url: node().url,
    token: node().token,
    retry: { retries: 0 },
    enableAutoPipelining: false,
    automaticDeserialization: false,
  });
const sha1 = (text: string) => createHash("sha1").update(text).digest("hex");
const FLAG = "#!lua flags=allow-key-locking\n";
const DYNAMIC = "ERR Dynamic keys are not allowed in Lua scripts when 'allow-key-locking' flag is set. Key was: ";

/**
 * A node for the library (a `ScriptClient`: it takes the library's own path, EVALSHA then EVAL) that
 * keeps the text of every script the library sends and every refusal the key-locking guard answers.
 */
function recording(): { client: ScriptClient; sent: Set<string>; refused: string[] } {
  const redis = raw();
  const sent = new Set<string>();
  const refused: string[] = [];
  const watch = <T>(reply: Promise<T>) =>
    reply.catch((error: unknown) => {
      if (/allow-key-locking/.test(String(error))) refused.push(String(error));
      throw error;
    });
  const client: ScriptClient = {
    eval: (script, keys, args) => {
      sent.add(script);
      return watch(redis.eval(script, keys, args));
    },
    evalsha: (sha, keys, args) => watch(redis.evalsha(sha, keys, args)),
  };
  return { client, sent, refused };
}

describe("allow-key-locking: a flagged script may touch only the keys in KEYS (Upstash docs: Key-Based Locking)", () => {
  it("refuses a key built inside Lua with Upstash's error text, by EVAL and by EVALSHA of the SHA the client computed", async () => {
    const redis = raw();
    const built = `${FLAG}return redis.call("GET", KEYS[1] .. ":x")`;
    await expect(redis.eval(built, ["k"], [])).rejects.toThrow(`${DYNAMIC}k:x`);
    const sha = await redis.scriptLoad(built);
    expect(sha).toBe(sha1(built));
    await expect(redis.evalsha(sha, ["k"], [])).rejects.toThrow(`${DYNAMIC}k:x`);
    // The error names the SHA the client knows, not the one of the script the bridge runs.
    await expect(redis.evalsha(sha, ["k"], [])).rejects.toThrow(sha);
    // The same key, declared, is fine; so is the same script without the flag.
    expect(await redis.eval(built, ["k", "k:x"], [])).toBeNull();
    expect(await redis.eval(built.slice(FLAG.length), ["k"], [])).toBeNull();
    expect(await env.tcp[0].exists("k", "k:x")).toBe(0);
  });

  it("checks every key position: multi-key commands, key pairs, numkeys, and redis.pcall (which returns the error)", async () => {
    const redis = raw();
    await expect(redis.eval(`${FLAG}return redis.call("MSET", KEYS[1], "1", "other", "2")`, ["a"], [])).rejects.toThrow(
      `${DYNAMIC}other`,
    );
    await expect(
      redis.eval(`${FLAG}return redis.call("DEL", KEYS[1], KEYS[2], ARGV[1])`, ["a", "b"], ["c"]),
    ).rejects.toThrow(`${DYNAMIC}c`);
    await expect(
      redis.eval(`${FLAG}return redis.call("ZUNIONSTORE", KEYS[1], 2, KEYS[2], "z")`, ["d", "s"], []),
    ).rejects.toThrow(`${DYNAMIC}z`);
    await expect(redis.eval(`${FLAG}return redis.call("RENAME", KEYS[1], "moved")`, ["a"], [])).rejects.toThrow(
      `${DYNAMIC}moved`,
    );
    // A literal key counts as dynamic, even as a number; an alias of redis.call is checked too.
    await expect(redis.eval(`${FLAG}local c = redis.call\nreturn c("INCR", 7)`, ["a"], [])).rejects.toThrow(
      `${DYNAMIC}7`,
    );
    expect(await env.tcp[0].exists("a", "other", "moved", "7", "d")).toBe(0); // nothing ran
    expect(
      await redis.eval(
        `${FLAG}redis.call("MSET", KEYS[1], "1", KEYS[2], "2")\nreturn redis.call("DEL", KEYS[1], KEYS[2])`,
        ["a", "b"],
        [],
      ),
    ).toBe(2);
    const caught = `${FLAG}local r = redis.pcall("GET", "elsewhere")\nreturn {type(r), r.err}`;
    expect(await redis.eval(caught, ["a"], [])).toEqual(["table", `${DYNAMIC}elsewhere`]);
  });

  it("refuses FLUSHDB and FLUSHALL inside a flagged script; the data stays", async () => {
    const redis = raw();
    await env.tcp[0].set("survivor", "1");
    for (const command of ["FLUSHDB", "FLUSHALL"]) {
      await expect(redis.eval(`${FLAG}return redis.call("${command}")`, [], [])).rejects.toThrow(
        `ERR ${command} is not allowed in Lua scripts when 'allow-key-locking' flag is set`,
      );
      await expect(
        redis.eval(`${FLAG}return redis.call("${command.toLowerCase()}", "ASYNC")`, ["survivor"], []),
      ).rejects.toThrow(/allow-key-locking/);
    }
    expect(await env.tcp[0].get("survivor")).toBe("1");
    expect(await redis.eval(`return redis.call("FLUSHDB")`, [], [])).toBe("OK"); // without the flag: the global lock, allowed
    expect(await env.tcp[0].get("survivor")).toBeNull();
  });

  it("keeps the script's other flags and its line numbers", async () => {
    const redis = raw();
    const readOnly = "#!lua flags=no-writes,allow-key-locking\nreturn redis.call('SET', KEYS[1], 'x')";
    await expect(redis.eval(readOnly, ["k"], [])).rejects.toThrow(/not allowed from read-only scripts/);
    await expect(redis.eval(`${FLAG}local a = 1\nlocal b = 2\nerror("boom")`, [], [])).rejects.toThrow(
      /user_script:3: boom/,
    );
  });

  it("runs every script the library sends, as the library sends it, under the guard", async () => {
    const { client, sent, refused } = recording();
    const redlock = new Redlock([client], { retryCount: 0 });
    const lock = await redlock.acquire(["r1", "r2"], 5_000, { fencing: true });
    expect(lock.fence).toMatch(/^\d+$/);
    await lock.extend(8_000);
    expect((await redlock.inspect(["r1", "r2"])).heldByQuorum).toBe(true);
    expect(await fencedWrite(client, "data", "payload", lock.fence as string)).toBe(true);
    expect(await fencedRead(client, "data", lock.fence as string)).toEqual({ accepted: true, value: "payload" });
    await (await lock.release()).pending;
    const permit = await redlock.semaphore("pool", 3).acquire(5_000);
    await (await permit.release()).pending;
    await (await (await redlock.acquire(["plain"], 5_000)).release()).pending;
    expect(refused).toEqual([]);
    expect(sent.size).toBeGreaterThanOrEqual(6); // acquire, extend, inspect, fenced write and read, release, semaphore
    for (const lua of sent) expect(lua).toMatch(/^#!lua flags=[^\n]*allow-key-locking/);
    expect((await env.admins[0].state()).counters.flaggedScripts).toBeGreaterThanOrEqual(sent.size); // none went around the guard
    expect(await env.tcp[0].exists("r1", "r2", "plain")).toBe(0);
  });

  it("refuses a variant of the library's fenced acquire script that derives its fence key inside Lua, as Upstash would", async () => {
    const { client, sent } = recording();
    await (await (await new Redlock([client], { retryCount: 0 }).acquire(["r1"], 5_000, { fencing: true })).release())
      .pending;
    const acquire = [...sent].find((lua) => lua.includes("KEYS[n + i]"));
    expect(acquire).toBeDefined();
    const derived = (acquire as string).replaceAll("KEYS[n + i]", '(KEYS[i] .. ":fence")');
    const ticket = `${String(Date.now()).padStart(16, "0")}${"0".repeat(16)}00200`;
    await expect(raw().eval(derived, ["r1"], ["v", "5000", "1", ticket, "3000", "1", "0"])).rejects.toThrow(
      `${DYNAMIC}r1:fence`,
    );
    expect(await env.tcp[0].exists("r1:fence")).toBe(0); // the script stopped at the undeclared key
  });
});

describe("SCRIPT state like Upstash's: EXISTS, FLUSH and restarts", () => {
  const flagged = `${FLAG}return redis.call("INCR", KEYS[1])`;

  it("SCRIPT EXISTS answers 1 for a loaded flagged script and 0 once SCRIPT FLUSH ran; then EVALSHA answers NOSCRIPT", async () => {
    const redis = raw();
    const sha = await redis.scriptLoad(flagged);
    expect(await redis.scriptExists(sha, sha1("return 1"))).toEqual([1, 0]);
    expect(await redis.evalsha(sha, ["n"], [])).toBe(1);
    expect(await redis.scriptFlush()).toBe("OK");
    expect(await redis.scriptExists(sha)).toEqual([0]);
    await expect(redis.evalsha(sha, ["n"], [])).rejects.toThrow(/^NOSCRIPT/);
    expect(await redis.eval(flagged, ["n"], [])).toBe(2); // EVAL caches it again
    expect(await redis.scriptExists(sha)).toEqual([1]);
  });

  it("a redis-server restart forgets flagged scripts: EVALSHA answers NOSCRIPT", async () => {
    const redis = raw();
    const sha = await redis.scriptLoad(flagged);
    await env.admins[0].restart();
    expect(await redis.scriptExists(sha)).toEqual([0]);
    await expect(redis.evalsha(sha, ["n"], [])).rejects.toThrow(/^NOSCRIPT/);
  });

  it("after a restart the library falls back from NOSCRIPT to EVAL and still takes the lock", async () => {
    const redlock = new Redlock([{ url: node().url, token: node().token }], { retryCount: 0 });
    await loadScripts(env);
    await env.admins[0].resetCounters();
    const first = await redlock.acquire(["after-restart"], 5_000);
    // A node's first run of a script is an EVAL (it loads it); the later ones are EVALSHA. Beside the first, in its
    // request, the probe of PUBLISH from a flagged script.
    expect((await env.admins[0].state()).counters.commands).toEqual({ eval: 2 });
    await env.admins[0].restart(); // the lock and the scripts are gone
    await env.admins[0].resetCounters();
    const second = await redlock.acquire(["after-restart"], 5_000);
    expect(second.value).not.toBe(first.value);
    expect((await env.admins[0].state()).counters.commands).toEqual({ evalsha: 1, eval: 1 });
    await (await second.release()).pending;
    expect(await env.tcp[0].exists("after-restart")).toBe(0);
  });
});

describe("Upstash's size limits, with its error texts", () => {
  it("refuses a request body over 10 MB (400, ERR max request size exceeded); a smaller one goes through", async () => {
    const big = "x".repeat(11_000_000);
    const res = await post("/", ["set", "big", big]);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "ERR max request size exceeded" });
    await expect(raw().set("big", big)).rejects.toThrow(/^ERR max request size exceeded/);
    expect(
      (
        await post("/pipeline", [
          ["set", "big", big.slice(0, 6_000_000)],
          ["set", "big2", big.slice(0, 6_000_000)],
        ])
      ).status,
    ).toBe(400);
    expect(await env.tcp[0].exists("big", "big2")).toBe(0);
    expect(await (await post("/", ["set", "big", big.slice(0, 9_000_000)])).json()).toEqual({ result: "OK" });
    expect(await env.tcp[0].strlen("big")).toBe(9_000_000);
  });

  it("refuses a key over 32 KB in commands and in EVAL/EVALSHA's KEYS; a pipeline fails only that member", async () => {
    const long = "k".repeat(40_000);
    const text = "ERR max key size exceeded. Limit: 32000 bytes, Actual: 40000 bytes";
    const res = await post("/", ["set", long, "1"]);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: text });
    const redis = raw();
    await expect(redis.get(long)).rejects.toThrow(text);
    const script = `${FLAG}return redis.call("SET", KEYS[#KEYS], ARGV[1])`;
    await expect(redis.eval(script, [long], ["v"])).rejects.toThrow(text);
    await expect(redis.evalsha(sha1(script), ["ok", long], ["v"])).rejects.toThrow(text);
    await expect(redis.del("a", long)).rejects.toThrow(text);
    expect(
      await (
        await post("/pipeline", [
          ["set", "short", "1"],
          ["set", long, "1"],
          ["get", "short"],
        ])
      ).json(),
    ).toEqual([{ result: "OK" }, { error: text }, { result: "1" }]);
    expect(
      (
        await post("/multi-exec", [
          ["set", "tx", "1"],
          ["set", long, "1"],
        ])
      ).status,
    ).toBe(400); // the whole transaction is discarded
    expect(await env.tcp[0].exists(long, "tx")).toBe(0);
    const multiByte = "é".repeat(16_001); // 32,002 bytes in UTF-8
    expect((await (await post("/", ["get", multiByte])).json()).error).toBe(
      "ERR max key size exceeded. Limit: 32000 bytes, Actual: 32002 bytes",
    );
    expect(await (await post("/", ["set", "k".repeat(32_000), "1"])).json()).toEqual({ result: "OK" });
  });

  it("a lock on a resource name over the key limit is not granted anywhere", async () => {
    const redlock = new Redlock([{ url: node().url, token: node().token }], { retryCount: 0 });
    await expect(redlock.acquire(["r".repeat(40_000)], 5_000)).rejects.toThrow();
    expect(await env.tcp[0].dbsize()).toBe(0);
  });
});

describe("smaller protocol details, as on Upstash", () => {
  it("answers 401 with Upstash's JSON error for a missing or wrong token", async () => {
    for (const authorization of [undefined, "Bearer wrong"]) {
      const res = await fetch(node().url, {
        method: "POST",
        headers: authorization ? { authorization } : {},
        body: '["ping"]',
      });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: "WRONGPASS invalid or missing auth token" });
    }
    const wrong = new Redis({ url: node().url, token: "wrong", retry: { retries: 0 } });
    await expect(wrong.get("x")).rejects.toThrow(/WRONGPASS invalid or missing auth token/);
  });

  it("in base64 mode leaves a top-level OK as it is (what @upstash/redis expects) and encodes every other string", async () => {
    const headers = { "upstash-encoding": "base64" };
    expect(await (await post("/", ["set", "s", "v"], headers)).json()).toEqual({ result: "OK" });
    expect(await (await post("/", ["get", "s"], headers)).json()).toEqual({
      result: Buffer.from("v").toString("base64"),
    });
    expect(
      await (
        await post(
          "/pipeline",
          [
            ["set", "s", "w"],
            ["get", "s"],
            ["eval", "return {'OK', 'x'}", 0],
          ],
          headers,
        )
      ).json(),
    ).toEqual([
      { result: "OK" },
      { result: Buffer.from("w").toString("base64") },
      { result: [Buffer.from("OK").toString("base64"), Buffer.from("x").toString("base64")] },
    ]);
    const redis = new Redis({ url: node().url, token: node().token });
    expect(await redis.set("s", "OK")).toBe("OK");
    expect(await redis.get("s")).toBe("OK");
  });

  it("answers lower-case hgetall like HGETALL", async () => {
    await post("/", ["hset", "h", "f", "v", "g", "w"]);
    const upper = await (await post("/", ["HGETALL", "h"])).json();
    expect(upper).toEqual({ result: ["f", "v", "g", "w"] });
    expect(await (await post("/", ["hgetall", "h"])).json()).toEqual(upper);
    expect(await (await post("/pipeline", [["hgetall", "h"]])).json()).toEqual([upper]);
    expect(await new Redis({ url: node().url, token: node().token }).hgetall("h")).toEqual({ f: "v", g: "w" });
  });

  it("writes integers beyond 2^53 with every digit", async () => {
    const text = async (res: Promise<Response>) => (await res).text();
    expect(await text(post("/", ["incrby", "big", "9007199254740993"]))).toBe('{"result":9007199254740993}');
    expect(await text(post("/", ["incr", "big"]))).toBe('{"result":9007199254740994}');
    const sum = String(9007199254740994n - 9223372036854775807n);
    expect(
      await text(
        post("/pipeline", [
          ["incrby", "big", "-9223372036854775807"],
          ["get", "big"],
        ]),
      ),
    ).toBe(`[{"result":${sum}},{"result":"${sum}"}]`);
    expect(
      await text(
        post("/multi-exec", [
          ["set", "max", "9223372036854775806"],
          ["incr", "max"],
        ]),
      ),
    ).toBe('[{"result":"OK"},{"result":9223372036854775807}]');
    expect(await text(post("/", ["eval", "return redis.call('INCR', KEYS[1])", 1, "small"]))).toBe('{"result":1}');
  });
});
