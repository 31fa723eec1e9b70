// A waiter that stalled once (its event loop frozen for 1.5 s while a round was out) and then died first in line holds
// the line up for its claim window once the resource is free, and that window is at most two rounds cut at nodeTimeout
// (2 × 500 + 20 ms with the defaults), however long the stall: a window sized by the stall (3,020 ms) would hold
// the next waiter up that long. Real redis-server; the stalled waiter is a process of its own, killed with SIGKILL.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { useCluster } from "../fixture.ts";
import { client, sleep } from "./helpers.ts";

const fixture = useCluster();
const PROGRAM = fileURLToPath(new URL("./stalling-waiter.ts", import.meta.url));

describe("a waiter that stalled, then died first in line", () => {
  it("holds the next waiter up for at most 2 × nodeTimeout + 20 ms and a round or two", async () => {
    const holder = await client(fixture.nodes).acquire("res", 10_000);
    const spec = fixture.cluster.nodes.map((n) => ({ url: n.url, token: n.token }));
    const child = spawn(process.execPath, [PROGRAM, JSON.stringify(spec)], { stdio: ["ignore", "pipe", "inherit"] });
    const [line] = (await once(child.stdout, "data")) as [Buffer];
    expect(line.toString()).toContain("waiting");
    // Its ticket, first in line, carries the window it asked for after the stall.
    const tickets = await fixture.tcp[0].zrange("edge-redlock:line:res", 0, -1);
    expect(tickets).toHaveLength(1);
    expect(Number(tickets[0].slice(32, 37))).toBe(2 * 500 + 20);
    child.kill("SIGKILL");
    await once(child, "exit");

    const waiting = client(fixture.nodes).acquire("res", 5_000, { maxWait: 8_000 });
    await sleep(500); // it joins behind the dead waiter and listens
    const released = Date.now();
    await holder.release();
    const lock = await waiting;
    const heldUp = Date.now() - released;
    console.log(`next waiter served ${heldUp} ms after the release, behind a dead waiter that had stalled`);
    expect(heldUp).toBeGreaterThanOrEqual(2 * 500 + 20 - 50);
    expect(heldUp).toBeLessThan(2 * 500 + 20 + 700);
    await lock.release();
  });
});
