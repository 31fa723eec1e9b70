// A debugger never shows a lock's value: what the inspector protocol lists of a lock (Runtime.getProperties, as Chrome
// DevTools on Node and `wrangler dev` DevTools on workerd read it) includes private fields, listed without invoking any
// getter, so no own or private data property of a lock, one level down, may hold the value that `value` keeps behind a
// getter "so logging the lock does not print it".
import { Session } from "node:inspector/promises";
import { expect, it } from "vitest";
import { Redlock } from "../../../src/index.ts";
import { memoryNodes } from "../../../src/testing/index.ts";

interface RemoteProperty {
  name: string;
  value?: { value?: unknown; objectId?: string };
}

it("the inspector protocol lists no data property of a lock (own or private, one level down) that holds its value", async () => {
  const redlock = new Redlock(memoryNodes(3), { retryCount: 0 });
  const lock = await redlock.acquire(["inspected"], 5_000);
  const session = new Session();
  session.connect();
  try {
    (globalThis as { __inspectedLock?: unknown }).__inspectedLock = lock;
    const { result } = await session.post("Runtime.evaluate", { expression: "globalThis.__inspectedLock" });
    const seen: unknown[] = [];
    const walk = async (objectId: string, depth: number) => {
      const props = (await session.post("Runtime.getProperties", { objectId, ownProperties: true })) as {
        result: RemoteProperty[];
        privateProperties?: RemoteProperty[];
      };
      for (const p of [...props.result, ...(props.privateProperties ?? [])]) {
        if (p.value?.value !== undefined) seen.push(p.value.value);
        if (p.value?.objectId && depth > 0) await walk(p.value.objectId, depth - 1);
      }
    };
    await walk(result.objectId as string, 1);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen).not.toContain(lock.value);
  } finally {
    delete (globalThis as { __inspectedLock?: unknown }).__inspectedLock;
    session.disconnect();
    await lock.release();
  }
});
