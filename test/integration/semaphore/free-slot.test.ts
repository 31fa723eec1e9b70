// A semaphore that is not full never refuses as full. An attempt tries one random slot, and the acquire script grants
// only that slot; with retryCount 0 (the Hono middleware's default, wait 0) a request would be refused "every permit is
// held" — and the middleware would answer 429 — whenever the dice landed on a held slot while others were free on every
// node. So an attempt tries another slot at once when the refusals show one free on a quorum
// (src/semaphore/semaphore.ts). README: "When every permit is held, acquire rejects ... reason held"; hono: "429 ...
// every permit is held".
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock } from "../../../src/index.ts";
import { semaphore, type SemaphoreVariables } from "../../../src/hono/index.ts";
import { settle, useCluster } from "../fixture.ts";

const env = useCluster();

describe("a semaphore that is not full never refuses as full (real cluster)", () => {
  it("limit 2 with ONE permit held: acquire(retryCount 0) never says 'every permit is held'", async () => {
    const redlock = new Redlock(env.nodes, { retryCount: 0 });
    const s = redlock.semaphore("atk:notfull", 2);
    const holder = await s.acquire(20_000);
    let refusals = 0;
    const messages = new Set<string>();
    for (let i = 0; i < 20; i++) {
      try {
        const permit = await s.acquire(5_000);
        expect(permit.slot).not.toBe(holder.slot);
        await (await permit.release()).pending;
      } catch (error) {
        expect(error).toBeInstanceOf(LockAcquisitionError);
        refusals++;
        messages.add(`${(error as LockAcquisitionError).reason}: ${(error as Error).message}`);
      }
    }
    await settle(env);
    // The semaphore had a free permit on every node during all 20 attempts.
    const seen = await s.inspect();
    expect(seen.held).toBe(1);
    console.log(`${refusals}/20 refused while 1 of 2 permits was free:`, [...messages]);
    expect(refusals).toBe(0);
    await holder.release();
  });

  it("semaphore() middleware (default wait 0): never 429 while a permit is free", async () => {
    const redlock = new Redlock(env.nodes);
    const holder = await redlock.semaphore("atk:mw", 2).acquire(20_000);
    const app = new Hono<{ Variables: SemaphoreVariables }>();
    app.post("/work", semaphore("atk:mw", { limit: 2, ttl: 2_000, redlock }), (c) =>
      c.json({ slot: c.var.permit.permit.slot }),
    );
    const statuses: number[] = [];
    for (let i = 0; i < 16; i++) statuses.push((await app.request("/work", { method: "POST" })).status);
    await settle(env);
    console.log(`statuses with 1 of 2 permits held:`, statuses.join(","));
    expect(statuses.filter((s) => s === 429)).toEqual([]);
    await holder.release();
  });
});
