// A stand-in for a Redis engine that refuses a write after TIME in a script (Redis before 5 did, and
// Upstash asks scripts to stay deterministic): an HTTP proxy in front of a real bridge that puts, on the
// first line of every EVAL'd script's body, a `redis` whose call/pcall refuse a write once TIME was called.
// Everything else goes through unchanged, to the real redis-server behind the bridge. It can refuse PUBLISH inside a
// script instead, as an engine that takes Pub/Sub only as a command of its own would.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export const WRITE_AFTER_TIME_ERROR =
  "ERR Write commands not allowed after non deterministic commands. Call redis.replicate_commands() at the start of your script in order to switch to single commands replication mode.";

const SHIM = [
  "local redis = (function(real) local timed = false",
  "local writes = {SET = true, INCR = true, INCRBY = true, DEL = true, PEXPIRE = true, EXPIRE = true, ZADD = true, ZREM = true, ZREMRANGEBYSCORE = true}",
  "local function refusal(name) name = string.upper(tostring(name))",
  "if name == 'TIME' then timed = true elseif timed and writes[name] then return " +
    JSON.stringify(WRITE_AFTER_TIME_ERROR) +
    " end end",
  "return setmetatable({",
  "call = function(...) local r = refusal(...) if r then error({err = r}) end return real.call(...) end,",
  "pcall = function(...) local r = refusal(...) if r then return {err = r} end return real.pcall(...) end,",
  "}, {__index = real}) end)(redis);",
].join(" ");

/** The script with the shim on its body's first line (after the shebang, so its flags stay). */
/** The same for an engine that refuses PUBLISH inside a script. */
const NO_PUBLISH_SHIM = [
  "local redis = (function(real) local function refused(name) return string.upper(tostring(name)) == 'PUBLISH' end",
  "return setmetatable({",
  "call = function(name, ...) if refused(name) then error({err = 'ERR PUBLISH is not allowed in scripts'}) end",
  "return real.call(name, ...) end,",
  "pcall = function(name, ...) if refused(name) then return {err = 'ERR PUBLISH is not allowed in scripts'} end",
  "return real.pcall(name, ...) end,",
  "}, {__index = real}) end)(redis);",
].join(" ");

/** What the engine refuses inside scripts: a write after TIME, or PUBLISH. */
export type Refusal = "write-after-time" | "publish";

function refusing(lua: string, refusal: Refusal): string {
  const shebang = /^#!lua[^\n]*\n/.exec(lua)?.[0] ?? "";
  return `${shebang}${refusal === "publish" ? NO_PUBLISH_SHIM : SHIM} ${lua.slice(shebang.length)}`;
}

function rewrite(command: unknown, refusal: Refusal): unknown {
  if (!Array.isArray(command) || typeof command[0] !== "string" || command[0].toUpperCase() !== "EVAL") return command;
  return [command[0], refusing(String(command[1]), refusal), ...command.slice(2)];
}

/**
 * Starts the proxy in front of `target` (a bridge's URL); `url` is where clients go instead.
 * @example
 * const engine = await refusingEngine(cluster.nodes[2].url);
 * nodes[2] = { url: engine.url, token };
 */
export async function refusingEngine(
  target: string,
  refusal: Refusal = "write-after-time",
): Promise<{ url: string; stop(): Promise<void> }> {
  const server: Server = createServer(async (req, res) => {
    const upstream = new AbortController();
    res.on("close", () => upstream.abort());
    try {
      await forward(req, res, upstream.signal);
    } catch {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    }
  });
  const forward = async (
    req: import("node:http").IncomingMessage,
    res: import("node:http").ServerResponse,
    signal: AbortSignal,
  ) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = req.url ?? "/";
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "null") as unknown;
    const sent =
      path.startsWith("/pipeline") && Array.isArray(body)
        ? body.map((c) => rewrite(c, refusal))
        : rewrite(body, refusal);
    const headers: Record<string, string> = {};
    for (const name of ["authorization", "content-type", "upstash-encoding"]) {
      const value = req.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
    if (typeof req.headers.accept === "string") headers.accept = req.headers.accept;
    const answer = await fetch(target.replace(/\/+$/, "") + path, {
      method: "POST",
      headers,
      body: JSON.stringify(sent),
      signal,
    });
    res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" });
    // Streamed through (a subscription's events arrive as they come).
    if (answer.body) for await (const chunk of answer.body) res.write(chunk);
    res.end();
  };
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
