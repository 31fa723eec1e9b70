// No error message, tally, log line or thrown object contains a REST token or a lock value.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { inspect } from "node:util";
import { Hono } from "hono";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Redis } from "@upstash/redis/cloudflare";
import {
  InvalidArgumentError,
  LockAcquisitionError,
  LockExtensionError,
  Redlock,
  RedlockError,
  fencedWrite,
} from "../../../src/index.ts";
import { CLIENT_SETTINGS } from "../../../src/node/upstash.ts";
import { redlock as guard } from "../../../src/hono/index.ts";
import { textsOf, useCluster } from "../fixture.ts";

const env = useCluster();
const logged: string[] = [];
const originals = { log: console.log, warn: console.warn, error: console.error };

beforeEach(() => {
  for (const level of ["log", "warn", "error"] as const)
    console[level] = (...args: unknown[]) => void logged.push(args.map((a) => inspect(a, { depth: 10 })).join(" "));
});
afterEach(() => Object.assign(console, originals));

describe("secrets stay out of everything the library produces", () => {
  it("errors, tallies, results, locks and logs never contain a token or a lock value", async () => {
    const token = env.cluster.nodes[0].token;
    const produced: unknown[] = [];
    const values: string[] = [];
    const rl = new Redlock(env.cluster.nodes, { nodeTimeout: 150, retryCount: 1, retryDelay: 10 });
    const keep = async (p: Promise<unknown>) => produced.push(await p.catch((e: unknown) => e));

    const lock = await rl.acquire(["s:held"], 5_000, { fencing: true });
    values.push(lock.value);
    produced.push(lock);
    // @upstash/redis errors embed the command (with the value): WRONGTYPE inside the release script.
    await env.tcp[0].hset("s:typed", "f", "v");
    await env.admins[1].faults({ status: 500 });
    await env.admins[2].faults({ garbage: "html" });
    await env.admins[3].kill();
    await keep(rl.acquire(["s:typed", "s:held"], 5_000));
    await keep(rl.acquire(["s:held"], 5_000, { fencing: true }));
    await env.tcp[0].del("s:held");
    await env.tcp[0].hset("s:held", "f", "v"); // the release script's GET now fails with WRONGTYPE on node 0
    const released = await lock.release();
    produced.push(released, released.votes);
    expect(released.votes[0]).toMatchObject({ outcome: "error", cause: expect.stringMatching(/^WRONGTYPE/) });
    await Promise.all(env.admins.map((a) => a.reset()));
    await env.admins[3].restart();

    // A wrong token: 401 from every node.
    const wrong = new Redlock(
      env.cluster.nodes.map((n) => ({ url: n.url, token: `${token}-wrong` })),
      { retryCount: 0 },
    );
    await keep(wrong.acquire(["s:x"], 1_000));
    // An extension of a lock taken over by another holder.
    const short = await rl.acquire(["s:short"], 400);
    values.push(short.value);
    for (const tcp of env.tcp) await tcp.set("s:short", "someone-else", "PX", 5_000);
    const extension = await short.extend(5_000).catch((e: unknown) => e);
    expect(extension).toBeInstanceOf(LockExtensionError);
    produced.push(extension);
    // Bad configuration naming a token-like value.
    await keep(Promise.resolve().then(() => new Redlock([{ url: env.cluster.nodes[0].url, token: ` ${token}` }])));
    // The middleware's responses and logs: busy, unavailable, missing configuration.
    const app = new Hono();
    app.post("/a", guard("s:held2", { redlock: rl }), (c) => c.text("ok"));
    app.post(
      "/m",
      guard("s:m", {
        redlock: () =>
          Redlock.fromEnv({ UPSTASH_REDIS_REST_URL_1: env.cluster.nodes[0].url, UPSTASH_REDIS_REST_TOKEN_1: token }),
      }),
      (c) => c.text("ok"),
    );
    const holder = await rl.acquire(["s:held2"], 5_000);
    values.push(holder.value);
    produced.push(await (await app.request("/a", { method: "POST" })).text());
    await holder.release();
    produced.push(await (await app.request("/m", { method: "POST" })).text());

    expect(produced.length).toBeGreaterThan(8);
    const all = [...produced.flatMap(textsOf), ...logged];
    for (const text of all) {
      expect(text).not.toContain(token);
      for (const value of values) expect(text).not.toContain(value);
      expect(text).not.toMatch(/command was/);
    }
    // The lock value is still there for the owner who asks for it.
    expect(lock.value).toMatch(/^[0-9a-f]{40}$/);
  });
});

describe("secrets in node configuration and in what servers answer", () => {
  it("a URL with credentials, a query or a fragment, and a token with whitespace or control characters, are refused without echoing them", () => {
    const url = env.cluster.nodes[0].url;
    const cases: [string, { url: string; token: string }, string][] = [
      ["credentials", { url: url.replace("http://", "http://user:s3cr3tpass@"), token: "tok" }, "s3cr3tpass"],
      ["user only", { url: url.replace("http://", "http://s3cr3tuser@"), token: "tok" }, "s3cr3tuser"],
      ["query", { url: `${url}/?token=s3cr3tquery`, token: "tok" }, "s3cr3tquery"],
      ["fragment", { url: `${url}/#s3cr3tfrag`, token: "tok" }, "s3cr3tfrag"],
      ["token with a newline", { url, token: "Bearer-abc\nSECRETTOKENTAIL" }, "SECRETTOKENTAIL"],
      ["token with a space", { url, token: "abc SECRETTOKENTAIL" }, "SECRETTOKENTAIL"],
      ["token with a tab", { url, token: "abc\tSECRETTOKENTAIL" }, "SECRETTOKENTAIL"],
      ["token with a NUL", { url, token: "abc\u0000SECRETTOKENTAIL" }, "SECRETTOKENTAIL"],
      [
        "token shorter than 8 characters (too short to be kept out of textsOf reliably)",
        { url, token: "s3cr3t7" },
        "s3cr3t7",
      ],
    ];
    for (const [name, node, secret] of cases) {
      let thrown: unknown;
      try {
        new Redlock([node]);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, name).toBeInstanceOf(InvalidArgumentError);
      for (const text of textsOf(thrown)) expect(text, name).not.toContain(secret);
    }
  });

  it("a server that echoes the Authorization header in its error body does not put the token into any vote, message or log", async () => {
    const servers = await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<ReturnType<typeof createServer>>((resolve) => {
            const server = createServer((req, res) => {
              req.resume();
              res.writeHead(500, { "content-type": "application/json" });
              res.end(
                JSON.stringify({
                  error: `ERR unauthorized: got ${req.headers.authorization} from //admin:hunter2pass@proxy`,
                }),
              );
            });
            server.listen(0, "127.0.0.1", () => resolve(server));
          }),
      ),
    );
    try {
      const tokens = ["EchoedToken-0-abcdefgh", "EchoedToken-1-abcdefgh", "EchoedToken-2-abcdefgh"];
      const nodes = [
        ...servers.map((server, i) => ({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          token: tokens[i],
        })),
        ...env.cluster.nodes.slice(3).map(({ url, token }) => ({ url, token })),
      ];
      const error = await new Redlock(nodes, { retryCount: 0 }).acquire(["s:echo"], 2_000).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockAcquisitionError);
      const failure = error as LockAcquisitionError;
      expect(failure.reason).toBe("unreachable");
      expect(failure.attempts[0].votes.slice(0, 3).map((v) => v.outcome)).toEqual(["error", "error", "error"]);
      expect(failure.message).toContain("unauthorized"); // the server's words stay, the secrets go
      for (const text of [...textsOf(error), ...logged]) {
        for (const token of [...tokens, ...env.cluster.nodes.map((n) => n.token)]) expect(text).not.toContain(token);
        expect(text).not.toContain("hunter2pass");
      }
    } finally {
      for (const server of servers) server.close();
    }
  });
});

describe("secrets through a user-supplied @upstash/redis instance, and the fencing helpers", () => {
  /** An HTTP server that answers 500 with an error body built from the request's Authorization header. */
  async function echoServer(body: (authorization: string) => string) {
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: body(String(req.headers.authorization)) }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
  }
  const instance = (url: string, token: string) => new Redis({ url, token, ...CLIENT_SETTINGS });
  const rest = () => env.cluster.nodes.slice(3).map(({ url, token }) => ({ url, token }));

  it("a token with a newline inside: the whole header value is kept out of the message", async () => {
    const nodes = [
      ...env.cluster.nodes.slice(0, 3).map((n) => instance(n.url, "Bearer-abc\nSECRETTOKENTAIL")),
      ...rest(),
    ];
    const error = await new Redlock(nodes, { retryCount: 0 }).acquire(["s:newline"], 2_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    for (const text of [...textsOf(error), ...logged]) expect(text).not.toContain("SECRETTOKENTAIL");
  });

  it("a token with a comma, echoed by the server after 'Bearer': redacted whole", async () => {
    const echo = await echoServer((authorization) => `ERR unauthorized: got ${authorization}`);
    try {
      const nodes = [...[0, 1, 2].map(() => instance(echo.url, "AbCdEf,SECRETTOKENTAIL")), ...rest()];
      const error = await new Redlock(nodes, { retryCount: 0 }).acquire(["s:comma"], 2_000).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockAcquisitionError);
      for (const text of [...textsOf(error), ...logged]) expect(text).not.toContain("SECRETTOKENTAIL");
    } finally {
      echo.server.close();
    }
  });

  it("fencedWrite's errors keep the database's words but not the command sent (nor the value written)", async () => {
    const db = new Redis({ url: env.cluster.nodes[0].url, token: env.cluster.nodes[0].token, ...CLIENT_SETTINGS });
    await env.tcp[0].hset("s:data:fence", "f", "v"); // the token key holds a hash: the script's GET fails
    const payload = "card=4111111111111111";
    const error = await fencedWrite(db, "s:data", payload, "12").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedlockError);
    expect(String(error)).toContain("WRONGTYPE");
    for (const text of textsOf(error)) {
      expect(text).not.toMatch(/command was/);
      expect(text).not.toContain(payload);
      expect(text).not.toContain(env.cluster.nodes[0].token);
    }
  });
});

describe("degradation is said, without secrets", () => {
  it("a wrong token on one node: acquire succeeds, console.warn names that node once (per minute), never a token or lock value", async () => {
    const nodes = env.cluster.nodes.map(({ url, token }, i) => ({
      url,
      token: i === 4 ? "wrong-token-0123456789" : token,
    }));
    const warned: string[] = [];
    const original = console.warn;
    console.warn = (...args: unknown[]) => void warned.push(args.map(String).join(" "));
    try {
      const redlock = new Redlock(nodes, { retryCount: 0 });
      const first = await redlock.acquire(["warn:a"], 5_000);
      const second = await redlock.acquire(["warn:b"], 5_000);
      await Promise.all([first.release(), second.release()]);
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatch(/^edge-redlock: node 5 \(127\.0\.0\.1:\d+\) failed \(/);
      for (const secret of [
        ...env.cluster.nodes.map((n) => n.token),
        "wrong-token-0123456789",
        first.value,
        second.value,
      ])
        expect(warned[0]).not.toContain(secret);
      const quiet = new Redlock(nodes, { retryCount: 0, warnings: false });
      await (await quiet.acquire(["warn:c"], 5_000)).release();
      expect(warned).toHaveLength(1);
    } finally {
      console.warn = original;
    }
  });
});
