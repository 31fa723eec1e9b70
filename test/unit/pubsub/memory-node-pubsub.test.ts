// MemoryNode's publish/subscribe, for memoryNodes() with no HTTP: subscribe() resolves once subscribed (as the
// node's mode and latency say), publish() counts the subscribers and delivers later on the node's clock, a
// subscription ends on its signal or a cut (its `closed` resolves), and dropMessages / messageDelayMs lose or
// slow the messages as the bridge's faults do.
import { describe, expect, it } from "vitest";
import { MemoryNode, type MemoryClock } from "../../../src/memory/memory-node.ts";
import { memoryNodes } from "../../../src/testing/memory.ts";

/** A clock that moves only when told: timers fire in time order as `advance` passes them. */
function manualClock(): MemoryClock & { advance(ms: number): Promise<void> } {
  let now = 0;
  let seq = 0;
  let timers: { at: number; seq: number; fire: () => void }[] = [];
  const settle = () => new Promise((r) => setTimeout(r, 0));
  return {
    now: () => now,
    schedule(ms, fire) {
      const timer = { at: now + Math.max(0, ms), seq: seq++, fire };
      timers.push(timer);
      return () => {
        timers = timers.filter((t) => t !== timer);
      };
    },
    async advance(ms) {
      const end = now + ms;
      for (;;) {
        await settle();
        const [next] = [...timers].sort((a, b) => a.at - b.at || a.seq - b.seq);
        if (!next || next.at > end) break;
        timers = timers.filter((t) => t !== next);
        now = next.at;
        next.fire();
      }
      now = end;
      await settle();
    },
  };
}

describe("MemoryNode publish/subscribe", () => {
  it("resolves subscribe() once subscribed; publish() counts the subscribers and delivers after it returns", async () => {
    const clock = manualClock();
    const node = new MemoryNode("a", clock);
    const heard: string[] = [];
    const other: string[] = [];
    await Promise.all([
      clock.advance(0),
      node.subscribe("wake", (m) => heard.push(m)),
      node.subscribe("wake", (m) => other.push(`2:${m}`)),
    ]);
    expect(node.publish("wake", "released")).toBe(2);
    expect(node.publish("elsewhere", "x")).toBe(0);
    expect(heard).toEqual([]); // never inside publish(), as a script's PUBLISH reaches subscribers after it
    await clock.advance(0);
    expect(heard).toEqual(["released"]);
    expect(other).toEqual(["2:released"]);
  });

  it("ends a subscription when its signal aborts: `closed` resolves, publish() no longer counts it", async () => {
    const node = memoryNodes(1)[0];
    const stop = new AbortController();
    const heard: string[] = [];
    const subscription = await node.subscribe("wake", (m) => heard.push(m), stop.signal);
    expect(node.publish("wake", "one")).toBe(1);
    stop.abort();
    await subscription.closed;
    expect(node.publish("wake", "two")).toBe(0);
    await new Promise((r) => setTimeout(r, 5));
    expect(heard).toEqual([]); // "one" was on its way when the subscription ended: it is not delivered
  });

  it("answers as the mode says: down rejects as a refused connection, garbage rejects, hang waits for the signal", async () => {
    const node = new MemoryNode("a");
    node.mode = "down";
    await expect(node.subscribe("c", () => {})).rejects.toThrow("fetch failed");
    node.mode = "garbage";
    await expect(node.subscribe("c", () => {})).rejects.toThrow(/not a subscription/);
    node.mode = "hang";
    const stop = new AbortController();
    const hung = node.subscribe("c", () => {}, stop.signal);
    let settled = false;
    void hung.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);
    stop.abort(new Error("gave up"));
    await expect(hung).rejects.toThrow("gave up");
    expect(node.publish("c", "x")).toBe(0);
  });

  it("confirms after the node's latency; a signal aborted before rejects with its reason", async () => {
    const clock = manualClock();
    const node = new MemoryNode("a", clock);
    node.latency = (request) => (request.script === "subscribe" ? 40 : 0);
    let confirmed = false;
    const pending = node.subscribe("c", () => {}).then(() => (confirmed = true));
    await clock.advance(39);
    expect(confirmed).toBe(false);
    expect(node.publish("c", "too early")).toBe(0);
    await clock.advance(1);
    await pending;
    expect(node.publish("c", "now")).toBe(1);
    await expect(node.subscribe("c", () => {}, AbortSignal.abort(new Error("already")))).rejects.toThrow("already");
  });

  it("drops the next dropMessages deliveries (counted per subscriber) and delays each by messageDelayMs", async () => {
    const clock = manualClock();
    const node = new MemoryNode("a", clock);
    const heard: string[] = [];
    await Promise.all([
      clock.advance(0),
      node.subscribe("c", (m) => heard.push(`a:${m}`)),
      node.subscribe("c", (m) => heard.push(`b:${m}`)),
    ]);
    node.dropMessages = 3;
    expect(node.publish("c", "1")).toBe(2); // both dropped, yet counted
    expect(node.publish("c", "2")).toBe(2); // one dropped
    expect(node.dropMessages).toBe(0);
    await clock.advance(0);
    expect(heard).toEqual(["b:2"]);

    node.messageDelayMs = 100;
    node.publish("c", "3");
    await clock.advance(99);
    expect(heard).toEqual(["b:2"]);
    await clock.advance(1);
    expect(heard).toEqual(["b:2", "a:3", "b:3"]);
  });

  it("cutSubscriptions() ends every open subscription now, each one's `closed` resolving", async () => {
    const [node] = memoryNodes(1);
    const heard: string[] = [];
    const subscriptions = await Promise.all(["x", "y"].map((channel) => node.subscribe(channel, (m) => heard.push(m))));
    expect(node.cutSubscriptions()).toBe(2);
    await Promise.all(subscriptions.map((s) => s.closed));
    expect(node.publish("x", "after")).toBe(0);
    expect(node.cutSubscriptions()).toBe(0);
  });

  it("delivers nothing while the node is down or hangs (the link is dead)", async () => {
    const [node] = memoryNodes(1);
    const heard: string[] = [];
    await node.subscribe("c", (m) => heard.push(m));
    node.mode = "down";
    expect(node.publish("c", "lost")).toBe(1);
    await new Promise((r) => setTimeout(r, 5));
    node.mode = "up";
    node.publish("c", "kept");
    await new Promise((r) => setTimeout(r, 5));
    expect(heard).toEqual(["kept"]);
  });
});
