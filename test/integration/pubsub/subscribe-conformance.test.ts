// The bridge serves Pub/Sub as Upstash REST does, so @upstash/redis's own `subscribe()` works against it on
// both backends: POST /subscribe/<channel> is an SSE stream that confirms with `subscribe,<channel>,1` and
// then carries `message,<channel>,<payload>`; PUBLISH (a command, in a pipeline, or from inside a script)
// answers how many streams receive it; the stream ends when the client unsubscribes.
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type BackendKind,
  type PubSubNode,
  WAKE_SCRIPT,
  listen,
  rawStream,
  startPubSubNode,
  until,
} from "./pubsub-node.ts";

const PAYLOAD = "héllo, wörld ✓ {not json";

describe.each<BackendKind>(["redis", "memory"])("Pub/Sub over the bridge on the %s backend", (kind) => {
  let node: PubSubNode;
  let redis: Redis;
  const streams = async () => (await node.admin.state()).counters.streams;

  beforeAll(async () => {
    node = await startPubSubNode(kind);
    redis = new Redis({ url: node.url, token: node.token });
  });
  afterAll(() => node?.stop());
  beforeEach(async () => {
    await node.bridge.cutStreams();
    await node.admin.reset();
  });

  it("serves POST /subscribe/<channel> as SSE: `subscribe,<channel>,1`, then `message,<channel>,<payload>`, never base64", async () => {
    const stream = await rawStream(node, "raw", { "upstash-encoding": "base64" });
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get("content-type")).toBe("text/event-stream");
    await until(() => stream.text.length > 0);
    expect(stream.text).toBe("data: subscribe,raw,1\n\n");
    expect(await redis.publish("raw", PAYLOAD)).toBe(1);
    await until(() => stream.text.includes("message"));
    expect(stream.text).toBe(`data: subscribe,raw,1\n\ndata: message,raw,${PAYLOAD}\n\n`);
    stream.close();
  });

  it("confirms each channel of a multi-channel path with the stream's running count", async () => {
    const stream = await rawStream(node, "one/two");
    await until(() => stream.text.includes("two"));
    expect(stream.text).toBe("data: subscribe,one,1\n\ndata: subscribe,two,2\n\n");
    expect(await redis.publish("two", "x")).toBe(1);
    stream.close();
  });

  it("lets redis.subscribe() confirm with count 1 per stream and hear redis.publish with its channel and payload", async () => {
    const first = redis.subscribe(["orders"]);
    const second = redis.subscribe(["orders"]);
    const [a, b] = [listen(first), listen(second)];
    await until(() => a.subscribed.length + b.subscribed.length === 2);
    expect([a.subscribed, b.subscribed]).toEqual([[1], [1]]);

    expect(await redis.publish("orders", PAYLOAD)).toBe(2); // each stream is a receiver
    expect(await redis.publish("orders", { id: 42 })).toBe(2);
    expect(await redis.publish("elsewhere", "not for them")).toBe(0);
    await until(() => a.messages.length === 2 && b.messages.length === 2);
    for (const heard of [a, b]) {
      expect(heard.messages).toEqual([
        { channel: "orders", message: PAYLOAD },
        { channel: "orders", message: { id: 42 } },
      ]);
      expect(heard.errors).toEqual([]);
    }
    await Promise.all([first.unsubscribe(), second.unsubscribe()]);
  });

  it("percent-decodes the channel in the path, as the client sends it unencoded into the URL", async () => {
    const subscriber = redis.subscribe(["wake: é"]);
    const heard = listen(subscriber);
    await until(() => heard.subscribed.length === 1);
    expect(await redis.publish("wake: é", "in")).toBe(1);
    await until(() => heard.messages.length === 1);
    expect(heard.messages).toEqual([{ channel: "wake: é", message: "in" }]);
    await subscriber.unsubscribe();
  });

  it("runs PUBLISH inside /pipeline, each member answering its own count", async () => {
    const subscriber = redis.subscribe(["piped"]);
    const heard = listen(subscriber);
    await until(() => heard.subscribed.length === 1);
    const res = await fetch(`${node.url}/pipeline`, {
      method: "POST",
      headers: { authorization: `Bearer ${node.token}` },
      body: JSON.stringify([
        ["publish", "piped", "a"],
        ["publish", "nobody", "b"],
        ["publish", "piped", "c"],
      ]),
    });
    expect(await res.json()).toEqual([{ result: 1 }, { result: 0 }, { result: 1 }]);
    const pipeline = redis.pipeline();
    pipeline.publish("piped", "d");
    expect(await pipeline.exec()).toEqual([1]);
    await until(() => heard.messages.length === 3);
    expect(heard.messages.map((m) => m.message)).toEqual(["a", "c", "d"]);
    await subscriber.unsubscribe();
  });

  it("delivers a PUBLISH made inside a script (EVAL), and the script sees PUBLISH's count", async () => {
    const subscriber = redis.subscribe(["from-script"]);
    const heard = listen(subscriber);
    await until(() => heard.subscribed.length === 1);
    expect(await redis.eval(WAKE_SCRIPT.lua, ["from-script"], ["woken"])).toBe(1);
    await until(() => heard.messages.length === 1);
    expect(heard.messages).toEqual([{ channel: "from-script", message: "woken" }]);
    await subscriber.unsubscribe();
  });

  it("ends the stream when the client unsubscribes: PUBLISH then counts no receiver and nothing more arrives", async () => {
    const subscriber = redis.subscribe(["leaving"]);
    const heard = listen(subscriber);
    await until(() => heard.subscribed.length === 1);
    expect(await streams()).toBe(1);
    await subscriber.unsubscribe(["leaving"]); // listeners stay: only the stream goes
    await until(async () => (await streams()) === 0);
    await until(async () => (await redis.publish("leaving", "late")) === 0);
    await new Promise((r) => setTimeout(r, 50));
    expect(heard.messages).toEqual([]);
    expect(heard.errors).toEqual([]);
  });

  it("gives the same plain payload with base64 on (the default) and off; PUBLISH answers a number either way", async () => {
    const base64 = new Redis({ url: node.url, token: node.token });
    const plain = new Redis({ url: node.url, token: node.token, responseEncoding: false });
    const [viaBase64, viaPlain] = [base64.subscribe(["enc"]), plain.subscribe(["enc"])];
    const [a, b] = [listen(viaBase64), listen(viaPlain)];
    await until(() => a.subscribed.length === 1 && b.subscribed.length === 1);
    expect(await base64.publish("enc", PAYLOAD)).toBe(2);
    expect(await plain.publish("enc", "Zm9v")).toBe(2); // base64-looking text stays as it was sent
    await until(() => a.messages.length === 2 && b.messages.length === 2);
    expect(a.messages).toEqual([
      { channel: "enc", message: PAYLOAD },
      { channel: "enc", message: "Zm9v" },
    ]);
    expect(b.messages).toEqual(a.messages);
    await Promise.all([viaBase64.unsubscribe(), viaPlain.unsubscribe()]);
  });

  it("checks the bearer token as other routes do: 401, which the client reports as an error event", async () => {
    const denied = await fetch(`${node.url}/subscribe/secret`, {
      method: "POST",
      headers: { authorization: "Bearer wrong" },
    });
    expect(denied.status).toBe(401);
    expect(await denied.json()).toEqual({ error: "WRONGPASS invalid or missing auth token" });
    const intruder = new Redis({ url: node.url, token: "wrong" });
    const subscriber = intruder.subscribe(["secret"]);
    const heard = listen(subscriber);
    await until(() => heard.errors.length === 1);
    expect(String(heard.errors[0])).toMatch(/WRONGPASS/);
    expect(heard.subscribed).toEqual([]);
    expect(await streams()).toBe(0);
  });

  it("refuses a path with no channel, and SUBSCRIBE sent as a command", async () => {
    const post = (path: string, body: unknown) =>
      fetch(node.url + path, {
        method: "POST",
        headers: { authorization: `Bearer ${node.token}` },
        body: JSON.stringify(body),
      });
    const bare = await post("/subscribe", []);
    expect(bare.status).toBe(400);
    expect(await bare.json()).toEqual({ error: "ERR wrong number of arguments for 'subscribe' command" });
    expect((await post("/", ["subscribe", "x"])).status).toBe(400);
  });

  it("ends the stream when the node restarts (its subscriptions are gone with it)", async () => {
    const stream = await rawStream(node, "restart");
    await until(() => stream.text.length > 0);
    await node.admin.restart();
    await until(() => stream.ended !== "open");
    expect(await streams()).toBe(0);
    expect(await redis.publish("restart", "x")).toBe(0);
  });
});
