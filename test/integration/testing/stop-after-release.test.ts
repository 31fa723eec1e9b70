// A test that awaits release() and then stops the local nodes sees no warning: the lock's follow-up requests
// (its `pending` work, here the release sent when a slow node's acquire reply lands) reach nodes still there.
import { afterEach, expect, it } from "vitest";
import { Redlock } from "../../../src/index.ts";
import { startLocalNodes } from "../../../src/testing/index.ts";

const original = console.warn;
afterEach(() => {
  console.warn = original;
});

it("stop() right after release() lets the release's late requests land: nothing is printed afterwards", async () => {
  const warned: string[] = [];
  console.warn = (...args: unknown[]) => void warned.push(args.map(String).join(" "));
  const local = await startLocalNodes({ memory: true });
  await local.faults[4].latency(150); // node 5 answers the acquire after the quorum did
  const redlock = Redlock.fromEnv(local.env, { retryCount: 0 });
  const lock = await redlock.acquire(["stop:after-release"], 5_000);
  const result = await lock.release();
  await local.stop();
  await result.pending; // the follow-up release to node 5 has run (or failed) by now
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(warned).toEqual([]);
});
