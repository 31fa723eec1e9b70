// How wide a Redlock's next claim window starts: fitted to its slowest recent round (granted or not), counting a
// fenced grant's round alone, not its write-back round.
import { describe, expect, it } from "vitest";
import { holdEverywhere, simSetup } from "../../sim/sim-redlock.ts";

/** The claim window (ms) of the ticket the first request on `key` carried. */
function windowOf(setup: ReturnType<typeof simSetup>, script: string): number {
  const node = setup.nodes[0];
  const request = node.requests.find((r) => r.script === script);
  const ticket = node.argsOf(request!)?.find((arg) => /^\d{16}[0-9a-f]{16}\d{5}/.test(arg));
  return Number(ticket?.slice(32, 37));
}

async function nextWindow(fencing: boolean): Promise<number> {
  const setup = simSetup({ nodeTimeout: 500 });
  const { clock, nodes, redlock } = setup;
  for (const node of nodes) node.latency = 100;
  const lock = await clock.run(redlock.acquire(["a"], 10_000, { fencing }));
  await clock.run(lock.release());
  for (const node of nodes) node.requests.length = 0;
  holdEverywhere(nodes, "b", 5_000);
  await clock.run(redlock.acquire(["b"], 10_000, { maxWait: 300 }).catch(() => undefined));
  return windowOf(setup, "fair-acquire");
}

describe("the claim window a Redlock's next line starts with", () => {
  it("fits its slowest recent round, a granted one too, with a quarter more", async () => {
    const window = await nextWindow(false);
    expect(window).toBeGreaterThan(200);
    expect(window).toBeLessThan(1_020);
  });

  it("is the same after a fenced grant: its write-back round does not count", async () => {
    expect(await nextWindow(true)).toBe(await nextWindow(false));
  });
});
