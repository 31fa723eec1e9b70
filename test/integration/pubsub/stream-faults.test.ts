// The admin API's faults on subscription streams, on both backends: drop the next N messages (PUBLISH still
// counts the stream, the message never arrives), cut every open stream now (after its headers: the client's
// body ends mid-way), delay each message by D ms; per node or per link. Each test fails without its fault.
// Also what @upstash/redis's subscribe() makes of a cut stream: no error event, only a console.error line.
import { Redis } from "@upstash/redis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { nodeFaults } from "../../../src/testing/faults.ts";
import { type BackendKind, type PubSubNode, listen, rawStream, startPubSubNode, until } from "./pubsub-node.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each<BackendKind>(["redis", "memory"])("faults on subscription streams, %s backend", (kind) => {
  let node: PubSubNode;
  let redis: Redis;
  const open: ReturnType<Redis["subscribe"]>[] = [];
  const state = () => node.admin.state();

  beforeAll(async () => {
    node = await startPubSubNode(kind);
    redis = new Redis({ url: node.url, token: node.token });
  });
  afterAll(() => node?.stop());
  beforeEach(() => node.admin.reset());
  afterEach(async () => {
    await Promise.all(open.splice(0).map((subscriber) => subscriber.unsubscribe()));
    node.bridge.cutStreams({ graceful: true });
  });

  /** A subscriber of @upstash/redis on `channel`, once its stream is confirmed. */
  async function subscribed(channel: string, client = redis) {
    const subscriber = client.subscribe([channel]);
    open.push(subscriber);
    const heard = listen(subscriber);
    await until(() => heard.subscribed.length === 1);
    return { subscriber, heard, payloads: () => heard.messages.map((m) => m.message) };
  }

  it("dropMessages: the next N messages are counted by PUBLISH but never arrive; later ones do", async () => {
    const { heard, payloads } = await subscribed("drop");
    await nodeFaults(node.adminUrl).dropMessages(2);
    expect((await state()).faults.dropMessages).toBe(2);
    expect(await redis.publish("drop", "lost-1")).toBe(1);
    expect(await redis.publish("drop", "lost-2")).toBe(1);
    expect(await redis.publish("drop", "kept")).toBe(1);
    await until(() => heard.messages.length > 0);
    await sleep(30);
    expect(payloads()).toEqual(["kept"]);
    const { faults, counters } = await state();
    expect(faults.dropMessages).toBe(0);
    expect(counters.droppedMessages).toBe(2);
    expect(counters.messages).toBe(1);
  });

  it("dropMessages counts per stream: one PUBLISH to two streams uses two", async () => {
    const [a, b, c] = await Promise.all(["fan", "fan", "fan"].map((ch) => subscribed(ch)));
    await node.admin.faults({ dropMessages: 2 });
    expect(await redis.publish("fan", "once")).toBe(3);
    await until(async () => (await state()).counters.messages === 1);
    await sleep(30);
    expect([a, b, c].map((s) => s.payloads().length).sort()).toEqual([0, 0, 1]);
  });

  it("dropMessages on a link drops only what that link's streams would get", async () => {
    const linkUrl = await node.admin.addLink("waiter-2");
    const viaLink = await subscribed("link-drop", new Redis({ url: linkUrl, token: node.token }));
    const direct = await subscribed("link-drop");
    await node.admin.linkFaults("waiter-2", { dropMessages: 1 });
    expect(await redis.publish("link-drop", "m")).toBe(2);
    await until(() => direct.heard.messages.length === 1);
    await sleep(30);
    expect(viaLink.payloads()).toEqual([]);
    expect(direct.payloads()).toEqual(["m"]);
    await node.admin.linkFaults("waiter-2", { dropMessages: 0 });
  });

  it("cutStreams: every open stream ends after its headers; PUBLISH then reaches nobody", async () => {
    const stream = await rawStream(node, "cut");
    await until(() => stream.text.length > 0);
    expect(stream.response.status).toBe(200);
    expect(await redis.publish("cut", "before")).toBe(1);
    await until(() => stream.text.includes("before"));
    await nodeFaults(node.adminUrl).cutStreams();
    await until(() => stream.ended !== "open");
    expect(stream.ended).toBeInstanceOf(Error); // the connection dropped mid-body
    expect((await state()).counters.streams).toBe(0);
    await until(async () => (await redis.publish("cut", "after")) === 0);
    expect(stream.text).toBe("data: subscribe,cut,1\n\ndata: message,cut,before\n\n");
  });

  it("cutStreams with graceful ends each body properly instead", async () => {
    const stream = await rawStream(node, "graceful");
    await until(() => stream.text.length > 0);
    await nodeFaults(node.adminUrl).cutStreams({ graceful: true });
    await until(() => stream.ended !== "open");
    expect(stream.ended).toBe("done");
    await until(async () => (await redis.publish("graceful", "after")) === 0);
  });

  it("cutStreams on a link ends that link's streams only", async () => {
    const linkUrl = await node.admin.addLink("waiter-3");
    const viaLink = await rawStream({ url: linkUrl, token: node.token }, "link-cut");
    const direct = await rawStream(node, "link-cut");
    await until(() => viaLink.text.length > 0 && direct.text.length > 0);
    await node.admin.linkCutStreams("waiter-3");
    await until(() => viaLink.ended !== "open");
    expect(direct.ended).toBe("open");
    await until(async () => (await redis.publish("link-cut", "x")) === 1);
    await until(() => direct.text.includes("message,link-cut,x"));
    direct.close();
  });

  it("a cut stream is silent to @upstash/redis: no error event, the channel still listed, one console.error line", async () => {
    const logged: unknown[][] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void logged.push(args);
    try {
      const { subscriber, heard } = await subscribed("silent");
      await node.admin.cutStreams();
      await until(() => logged.length > 0);
      expect(String(logged[0][0])).toBe("Stream reading error:");
      expect(String(logged[0][1])).toMatch(/terminated/);
      expect(heard.errors).toEqual([]);
      expect(subscriber.getSubscribedChannels()).toEqual(["silent"]);
      await until(async () => (await redis.publish("silent", "unheard")) === 0);

      logged.length = 0;
      const calm = await subscribed("silent-graceful");
      await node.admin.cutStreams({ graceful: true });
      await until(async () => (await state()).counters.streams === 0);
      await sleep(50);
      expect(logged).toEqual([]); // a body that ends properly is not even logged
      expect(calm.heard.errors).toEqual([]);
      expect(calm.subscriber.getSubscribedChannels()).toEqual(["silent-graceful"]);
    } finally {
      console.error = original;
    }
  });

  it("messageDelayMs: each message arrives D ms after it was published", async () => {
    const { subscriber, heard } = await subscribed("slow");
    let arrived = 0;
    subscriber.on("message", () => {
      arrived ||= Date.now();
    });
    await nodeFaults(node.adminUrl).delayMessages(300);
    expect((await state()).faults.messageDelayMs).toBe(300);
    const publishedAt = Date.now();
    expect(await redis.publish("slow", "late")).toBe(1);
    await sleep(150);
    expect(heard.messages).toEqual([]); // still on its way
    await until(() => heard.messages.length === 1);
    expect(arrived - publishedAt).toBeGreaterThanOrEqual(290);
    await subscriber.unsubscribe();
  });

  it("a partition (cut) keeps a stream open but loses what is published meanwhile", async () => {
    const linkUrl = await node.admin.addLink("waiter-4");
    const stream = await rawStream({ url: linkUrl, token: node.token }, "partitioned");
    await until(() => stream.text.length > 0);
    await node.admin.linkFaults("waiter-4", { cut: true });
    expect(await redis.publish("partitioned", "lost")).toBe(1);
    await node.admin.linkFaults("waiter-4", { cut: false });
    expect(await redis.publish("partitioned", "after")).toBe(1);
    await until(() => stream.text.includes("after"));
    expect(stream.text).toBe("data: subscribe,partitioned,1\n\ndata: message,partitioned,after\n\n");
    expect(stream.ended).toBe("open");
    stream.close();
  });
});
